package manifests

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// The seed migration on kubeadm v1.36.3's own manifests changes exactly
// these lines; every other line is identical.
func TestUpdateSeedMigrationKubeadmStyle(t *testing.T) {
	set := mustRead(t, kubeadmIPv4)
	out, changes, err := Update(set, seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		KubeAPIServer: {
			"-    - --service-cluster-ip-range=192.168.0.0/16",
			"+    - --service-cluster-ip-range=172.24.0.0/16",
		},
		KubeControllerManager: {
			"-    - --cluster-cidr=10.244.0.0/16",
			"+    - --cluster-cidr=10.55.0.0/16",
			"-    - --service-cluster-ip-range=192.168.0.0/16",
			"+    - --service-cluster-ip-range=172.24.0.0/16",
		},
		KubeScheduler: nil,
		Etcd: {
			"-    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.10:2379",
			"+    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.11:2379",
			"-    - --advertise-client-urls=https://10.0.0.10:2379",
			"+    - --advertise-client-urls=https://10.0.0.11:2379",
			"-    - --data-dir=/var/lib/etcd",
			"+    - --data-dir=/var/lib/etcd-restored",
			"-    - --initial-advertise-peer-urls=https://10.0.0.10:2380",
			"-    - --initial-cluster=cp1=https://10.0.0.10:2380",
			"+    - --initial-advertise-peer-urls=https://10.0.0.11:2380",
			"+    - --initial-cluster=cp1-r=https://10.0.0.11:2380",
			"-    - --listen-client-urls=https://127.0.0.1:2379,https://10.0.0.10:2379",
			"+    - --listen-client-urls=https://127.0.0.1:2379,https://10.0.0.11:2379",
			"-    - --listen-peer-urls=https://10.0.0.10:2380",
			"-    - --name=cp1",
			"+    - --listen-peer-urls=https://10.0.0.11:2380",
			"+    - --name=cp1-r",
			"-    - mountPath: /var/lib/etcd",
			"+    - mountPath: /var/lib/etcd-restored",
			"-      path: /var/lib/etcd",
			"+      path: /var/lib/etcd-restored",
		},
	}
	for _, c := range Components() {
		r := mustRender(t, out, c)
		checkDiff(t, c, mustGet(t, set, c).Original, r.Data, want[c])
		wantMethod := RenderEdited
		if want[c] == nil {
			wantMethod = RenderOriginal
		}
		if r.Method != wantMethod {
			t.Errorf("%s: method %s, want %s (%s)", c, r.Method, wantMethod, r.Reason)
		}
		golden(t, "updated/ipv4/"+FileName(c), r.Data)
	}

	var got []string
	for _, ch := range changes {
		got = append(got, ch.String())
	}
	wantChanges := []string{
		"kube-apiserver: --service-cluster-ip-range 192.168.0.0/16 -> 172.24.0.0/16",
		"kube-controller-manager: --service-cluster-ip-range 192.168.0.0/16 -> 172.24.0.0/16",
		"kube-controller-manager: --cluster-cidr 10.244.0.0/16 -> 10.55.0.0/16",
		"kube-controller-manager: kept --allocate-node-cidrs true (already on: kube-controller-manager allocates new nodes' CIDRs from the new --cluster-cidr)",
		"etcd: --name cp1 -> cp1-r",
		"etcd: --initial-advertise-peer-urls https://10.0.0.10:2380 -> https://10.0.0.11:2380",
		"etcd: --listen-peer-urls https://10.0.0.10:2380 -> https://10.0.0.11:2380",
		"etcd: --advertise-client-urls https://10.0.0.10:2379 -> https://10.0.0.11:2379",
		"etcd: --listen-client-urls https://127.0.0.1:2379,https://10.0.0.10:2379 -> https://127.0.0.1:2379,https://10.0.0.11:2379",
		"etcd: annotation kubeadm.kubernetes.io/etcd.advertise-client-urls https://10.0.0.10:2379 -> https://10.0.0.11:2379",
		"etcd: --initial-cluster cp1=https://10.0.0.10:2380 -> cp1-r=https://10.0.0.11:2380",
		"etcd: --data-dir /var/lib/etcd -> /var/lib/etcd-restored",
		"etcd: volumeMount etcd-data mountPath /var/lib/etcd -> /var/lib/etcd-restored",
		"etcd: volume etcd-data hostPath.path /var/lib/etcd -> /var/lib/etcd-restored",
	}
	if strings.Join(got, "\n") != strings.Join(wantChanges, "\n") {
		t.Errorf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantChanges, "\n"))
	}
	for _, ch := range changes {
		if ch.File != filepath.Join(kubeadmIPv4, FileName(ch.Component)) {
			t.Errorf("%v: file %q", ch, ch.File)
		}
	}
}

// The same migration on hand-edited manifests: "--flag", "value" entries
// keep their form (only the value line changes), flags in args, quoting,
// comments and the mixed styles survive.
func TestUpdateSeedMigrationSeparateArgs(t *testing.T) {
	set := mustRead(t, handEdited)
	ch := seedChanges()
	ch.AdvertiseAddress = "10.0.0.11"
	out, _, err := Update(set, ch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		KubeAPIServer: {
			`-    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: "10.0.0.10:6443"  # kubeadm reads this`,
			`+    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: "10.0.0.11:6443"  # kubeadm reads this`,
			"-    - 10.0.0.10",
			"+    - 10.0.0.11",
			"-    - 192.168.0.0/16",
			"+    - 172.24.0.0/16",
			"-        host: 10.0.0.10",
			"+        host: 10.0.0.11",
			"-        host: 10.0.0.10",
			"+        host: 10.0.0.11",
			"-        host: 10.0.0.10",
			"+        host: 10.0.0.11",
		},
		KubeControllerManager: {
			"-    - 10.244.0.0/16",
			"+    - 10.55.0.0/16",
			"-    - 192.168.0.0/16",
			"+    - 172.24.0.0/16",
		},
		Etcd: {
			"-    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.10:2379",
			"+    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://10.0.0.11:2379",
			"-    - https://10.0.0.10:2379",
			"+    - https://10.0.0.11:2379",
			"-    - '/var/lib/etcd'",
			"+    - '/var/lib/etcd-restored'",
			"-    - https://10.0.0.10:2380",
			"+    - https://10.0.0.11:2380",
			"-    - cp1=https://10.0.0.10:2380",
			"+    - cp1-r=https://10.0.0.11:2380",
			"-    - https://127.0.0.1:2379,https://10.0.0.10:2379",
			"+    - https://127.0.0.1:2379,https://10.0.0.11:2379",
			"-    - https://10.0.0.10:2380",
			"+    - https://10.0.0.11:2380",
			"-    - cp1",
			"+    - cp1-r",
			"-    - mountPath: /var/lib/etcd",
			"+    - mountPath: /var/lib/etcd-restored",
			"-      path: /var/lib/etcd",
			"+      path: /var/lib/etcd-restored",
		},
	}
	for _, c := range Components() {
		r := mustRender(t, out, c)
		checkDiff(t, c, mustGet(t, set, c).Original, r.Data, want[c])
		golden(t, "updated/hand-edited/"+FileName(c), r.Data)
	}
	// The flags that changed are still in separate form, in their place.
	api, _ := mustGet(t, out, KubeAPIServer).Container()
	i := slices.Index(api.Command, "--service-cluster-ip-range")
	if i < 0 || api.Command[i+1] != "172.24.0.0/16" {
		t.Errorf("apiserver command: %q", api.Command)
	}
	kcm, _ := mustGet(t, out, KubeControllerManager).Container()
	if len(kcm.Command) != 1 || !slices.Contains(kcm.Args, "10.55.0.0/16") {
		t.Errorf("controller-manager command %q args %q", kcm.Command, kcm.Args)
	}
}

// IPv6 and quoted values: kubeadm writes the apiserver endpoint annotation
// single-quoted ('[fd00::10]:8443'); the quotes stay.
func TestUpdateIPv6AdvertiseAddress(t *testing.T) {
	set := mustRead(t, kubeadmIPv6)
	out, _, err := Update(set, Changes{
		ServiceCIDR:      "fd00:10:97::/108",
		PodCIDR:          "fd00:10:245::/56",
		AdvertiseAddress: "fd00::11",
		EtcdMember:       EtcdMember{PeerURL: "https://[fd00::11]:2380", ClientURL: "https://[fd00::11]:2379"},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, KubeAPIServer, mustGet(t, set, KubeAPIServer).Original, mustRender(t, out, KubeAPIServer).Data, []string{
		"-    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: '[fd00::10]:8443'",
		"+    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: '[fd00::11]:8443'",
		"-    - --advertise-address=fd00::10",
		"+    - --advertise-address=fd00::11",
		"-    - --service-cluster-ip-range=fd00:10:96::/108",
		"+    - --service-cluster-ip-range=fd00:10:97::/108",
		"-        host: fd00::10",
		"+        host: fd00::11",
		"-        host: fd00::10",
		"+        host: fd00::11",
		"-        host: fd00::10",
		"+        host: fd00::11",
	})
	checkDiff(t, Etcd, mustGet(t, set, Etcd).Original, mustRender(t, out, Etcd).Data, []string{
		"-    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://[fd00::10]:2379",
		"+    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://[fd00::11]:2379",
		"-    - --advertise-client-urls=https://[fd00::10]:2379",
		"+    - --advertise-client-urls=https://[fd00::11]:2379",
		"-    - --initial-advertise-peer-urls=https://[fd00::10]:2380",
		"-    - --initial-cluster=cp-a=https://[fd00::10]:2380",
		"+    - --initial-advertise-peer-urls=https://[fd00::11]:2380",
		"+    - --initial-cluster=cp-a=https://[fd00::11]:2380",
		"-    - --listen-client-urls=https://[::1]:2379,https://[fd00::10]:2379",
		"-    - --listen-peer-urls=https://[fd00::10]:2380",
		"+    - --listen-client-urls=https://[::1]:2379,https://[fd00::11]:2379",
		"+    - --listen-peer-urls=https://[fd00::11]:2380",
	})
	// --node-cidr-mask-size=64 (an extra arg) fits the new /56.
	checkDiff(t, KubeControllerManager, mustGet(t, set, KubeControllerManager).Original, mustRender(t, out, KubeControllerManager).Data, []string{
		"-    - --cluster-cidr=fd00:10:244::/56",
		"+    - --cluster-cidr=fd00:10:245::/56",
		"-    - --service-cluster-ip-range=fd00:10:96::/108",
		"+    - --service-cluster-ip-range=fd00:10:97::/108",
	})
}

// Update is pure: the input set is untouched, and a second run with the
// same changes changes nothing more.
func TestUpdatePureAndIdempotent(t *testing.T) {
	set := mustRead(t, kubeadmIPv4)
	before := set.clone()
	out, _, err := Update(set, seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range set.Manifests {
		if !apiequality.Semantic.DeepEqual(m.Pod, before.Manifests[i].Pod) {
			t.Errorf("%s: Update changed its input", m.Component)
		}
		if r := mustRender(t, set, m.Component); r.Method != RenderOriginal {
			t.Errorf("%s: input renders as %s", m.Component, r.Method)
		}
	}
	again, changes, err := Update(out, seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.Action != ActionKeep {
			t.Errorf("second run changed %v", c)
		}
	}
	for _, c := range Components() {
		if string(mustRender(t, again, c).Data) != string(mustRender(t, out, c).Data) {
			t.Errorf("%s: second run changed the text", c)
		}
	}
}

// editSet reads testdata dir after edit rewrote one manifest's text.
func editSet(t *testing.T, from, component string, edit func(string) string) *Set {
	t.Helper()
	dir := copyDir(t, from)
	path := filepath.Join(dir, FileName(component))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(data))), 0o600); err != nil {
		t.Fatal(err)
	}
	return mustRead(t, dir)
}

func dropLine(line string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, line+"\n") {
			panic("fixture has no line " + line)
		}
		return strings.Replace(s, line+"\n", "", 1)
	}
}

// A missing flag the component needs is added as a new line at the end of
// the flags, in the style the other flags use.
func TestUpdateAddsMissingFlag(t *testing.T) {
	set := editSet(t, kubeadmIPv4, KubeAPIServer, dropLine("    - --service-cluster-ip-range=192.168.0.0/16"))
	out, changes, err := Update(set, Changes{ServiceCIDR: "172.24.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, "=", mustGet(t, set, KubeAPIServer).Original, mustRender(t, out, KubeAPIServer).Data, []string{
		"+    - --service-cluster-ip-range=172.24.0.0/16",
	})
	if changes[0].Action != ActionAdd || changes[0].String() != "kube-apiserver: added --service-cluster-ip-range 172.24.0.0/16" {
		t.Errorf("change %v", changes[0])
	}
	api, _ := mustGet(t, out, KubeAPIServer).Container()
	if api.Command[len(api.Command)-1] != "--service-cluster-ip-range=172.24.0.0/16" {
		t.Errorf("not appended: %q", api.Command)
	}

	set = editSet(t, handEdited, KubeAPIServer, dropLine("    - --service-cluster-ip-range\n    - 192.168.0.0/16"))
	out, _, err = Update(set, Changes{ServiceCIDR: "172.24.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, "separate", mustGet(t, set, KubeAPIServer).Original, mustRender(t, out, KubeAPIServer).Data, []string{
		"+    - --service-cluster-ip-range",
		"+    - 172.24.0.0/16",
	})
}

// --allocate-node-cidrs is never added: without it an absent --cluster-cidr
// stays absent; with it a missing --cluster-cidr is added. Both are reported.
func TestUpdateAllocateNodeCIDRs(t *testing.T) {
	set := editSet(t, kubeadmIPv4, KubeControllerManager, func(s string) string {
		return dropLine("    - --cluster-cidr=10.244.0.0/16")(dropLine("    - --allocate-node-cidrs=true")(s))
	})
	out, changes, err := Update(set, Changes{PodCIDR: "10.55.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustRender(t, out, KubeControllerManager); r.Method != RenderOriginal {
		t.Errorf("controller-manager changed: %s", r.Method)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.String())
	}
	want := []string{
		"kube-controller-manager: kept --cluster-cidr (absent and node CIDR allocation is off: not added)",
		"kube-controller-manager: kept --allocate-node-cidrs (absent: not added; kube-controller-manager does not allocate node CIDRs, so nodes' podCIDRs come from elsewhere)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes %q", got)
	}

	set = editSet(t, kubeadmIPv4, KubeControllerManager, dropLine("    - --cluster-cidr=10.244.0.0/16"))
	out, _, err = Update(set, Changes{PodCIDR: "10.55.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, "with allocation", mustGet(t, set, KubeControllerManager).Original, mustRender(t, out, KubeControllerManager).Data, []string{
		"+    - --cluster-cidr=10.55.0.0/16",
	})

	set = editSet(t, kubeadmIPv4, KubeControllerManager, func(s string) string {
		return strings.Replace(s, "--allocate-node-cidrs=true", "--allocate-node-cidrs=false", 1)
	})
	_, changes, err = Update(set, Changes{PodCIDR: "10.55.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	if c := changes[len(changes)-1]; c.Action != ActionKeep || c.Old != "false" {
		t.Errorf("allocate-node-cidrs=false: %v", c)
	}
}

// A member of a multi-member cluster: --initial-cluster-state existing
// becomes new, and the whole initial cluster must be given.
func TestUpdateInitialCluster(t *testing.T) {
	multi := func(s string) string {
		s = strings.Replace(s, "    - --initial-cluster=cp1=https://10.0.0.10:2380\n",
			"    - --initial-cluster=cp0=https://10.0.0.9:2380,cp1=https://10.0.0.10:2380\n    - --initial-cluster-state=existing\n", 1)
		return s
	}
	set := editSet(t, kubeadmIPv4, Etcd, multi)
	_, _, err := Update(set, seedChanges())
	if err == nil || !strings.Contains(err.Error(), "lists 2 members (cp0, cp1)") {
		t.Fatalf("multi-member without InitialCluster: %v", err)
	}
	ch := seedChanges()
	ch.InitialCluster = "cp0-r=https://10.0.0.12:2380,cp1-r=https://10.0.0.11:2380"
	out, _, err := Update(set, ch)
	if err != nil {
		t.Fatal(err)
	}
	diff := lineDiff(string(mustGet(t, set, Etcd).Original), string(mustRender(t, out, Etcd).Data))
	for _, want := range []string{
		"+    - --initial-cluster=cp0-r=https://10.0.0.12:2380,cp1-r=https://10.0.0.11:2380",
		"-    - --initial-cluster-state=existing",
		"+    - --initial-cluster-state=new",
	} {
		if !slices.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, strings.Join(diff, "\n"))
		}
	}

	ch.InitialCluster = "cp0-r=https://10.0.0.12:2380,cp1=https://10.0.0.11:2380"
	if _, _, err := Update(set, ch); err == nil || !strings.Contains(err.Error(), `must list member "cp1-r"`) {
		t.Errorf("initial cluster without the member: %v", err)
	}
}

// A data dir mounted from another host path only moves the host side.
func TestUpdateDataDirCustomHostPath(t *testing.T) {
	set := editSet(t, kubeadmIPv4, Etcd, func(s string) string {
		return strings.Replace(s, "      path: /var/lib/etcd\n", "      path: /data/etcd\n", 1)
	})
	out, changes, err := Update(set, Changes{DataDir: "/data/etcd-restored"})
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, Etcd, mustGet(t, set, Etcd).Original, mustRender(t, out, Etcd).Data, []string{
		"-      path: /data/etcd",
		"+      path: /data/etcd-restored",
	})
	if len(changes) != 1 || !strings.Contains(changes[0].Note, "stays the --data-dir") {
		t.Errorf("changes %v", changes)
	}
}

func TestUpdateErrors(t *testing.T) {
	dir := copyDir(t, kubeadmIPv4)
	if err := os.Remove(filepath.Join(dir, "etcd.yaml")); err != nil {
		t.Fatal(err)
	}
	external := mustRead(t, dir)

	cases := []struct {
		name string
		set  *Set
		ch   Changes
		want string
		is   error
	}{
		{"missing etcd.yaml", external, Changes{DataDir: "/var/lib/etcd2"}, "changing the etcd member: etcd.yaml: manifest not found in " + dir, ErrMissing},
		{"bad service CIDR", mustRead(t, kubeadmIPv4), Changes{ServiceCIDR: "172.24.0.1/16"}, "has host bits set", nil},
		{"same-family dual stack", mustRead(t, kubeadmIPv4), Changes{PodCIDR: "10.55.0.0/16,10.56.0.0/16"}, "one IPv4 and one IPv6", nil},
		{"pod CIDR smaller than node CIDRs", mustRead(t, kubeadmIPv4), Changes{PodCIDR: "10.55.0.0/25"}, "cannot hold node CIDRs of /24", nil},
		{"pod CIDR too large for node CIDRs", mustRead(t, kubeadmIPv4), Changes{PodCIDR: "10.0.0.0/7"}, "cannot hold node CIDRs of /24", nil},
		{"bad peer URL", mustRead(t, kubeadmIPv4), Changes{EtcdMember: EtcdMember{PeerURL: "10.0.0.11:2380"}}, "is not a URL", nil},
		{"relative data dir", mustRead(t, kubeadmIPv4), Changes{DataDir: "etcd"}, "not a clean absolute path", nil},
		{"bad advertise address", mustRead(t, kubeadmIPv4), Changes{AdvertiseAddress: "0.0.0.0"}, "not a usable IP address", nil},
		{"duplicate flag", editSet(t, kubeadmIPv4, KubeAPIServer, func(s string) string {
			return strings.Replace(s, "    - --secure-port=6443\n", "    - --secure-port=6443\n    - --service-cluster-ip-range=10.96.0.0/12\n", 1)
		}), Changes{ServiceCIDR: "172.24.0.0/16"}, "--service-cluster-ip-range is given 2 times", nil},
		{"shell command", shellSet(t), Changes{ServiceCIDR: "172.24.0.0/16"}, "runs its command through sh -c", nil},
	}
	for _, tc := range cases {
		_, _, err := Update(tc.set, tc.ch)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v is not %v", tc.name, err, tc.is)
		}
	}
}

func shellSet(t *testing.T) *Set {
	t.Helper()
	var ms []*Manifest
	for _, c := range []string{KubeAPIServer, KubeControllerManager} {
		m, err := Parse(c, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: `+c+`
spec:
  containers:
  - name: `+c+`
    command: ["/bin/sh", "-c", "exec `+c+` --service-cluster-ip-range=192.168.0.0/16"]
`))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return &Set{Manifests: ms}
}

// kube-apiserver's --etcd-servers follows the member's client URL when it
// pointed there; loopback and other members stay. Given explicitly, it is
// set as given.
func TestUpdateEtcdServers(t *testing.T) {
	set := editSet(t, kubeadmIPv4, KubeAPIServer, func(s string) string {
		return strings.Replace(s, "--etcd-servers=https://127.0.0.1:2379", "--etcd-servers=https://10.0.0.10:2379,https://10.0.0.20:2379", 1)
	})
	out, changes, err := Update(set, seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	checkDiff(t, KubeAPIServer, mustGet(t, set, KubeAPIServer).Original, mustRender(t, out, KubeAPIServer).Data, []string{
		"-    - --etcd-servers=https://10.0.0.10:2379,https://10.0.0.20:2379",
		"+    - --etcd-servers=https://10.0.0.11:2379,https://10.0.0.20:2379",
		"-    - --service-cluster-ip-range=192.168.0.0/16",
		"+    - --service-cluster-ip-range=172.24.0.0/16",
	})
	if c := changes[len(changes)-1]; c.Field != "--etcd-servers" || c.Note != "the etcd member's client URL moved" {
		t.Errorf("last change %v", c)
	}
	// kubeadm's loopback etcd-servers is left alone.
	out, _, err = Update(mustRead(t, kubeadmIPv4), seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	if f := flagsOf(t, mustGet(t, out, KubeAPIServer)); f["etcd-servers"] != "https://127.0.0.1:2379" {
		t.Errorf("etcd-servers %q", f["etcd-servers"])
	}
	out, _, err = Update(mustRead(t, kubeadmIPv4), Changes{EtcdServers: []string{"https://10.0.0.50:2379", "https://10.0.0.51:2379"}})
	if err != nil {
		t.Fatal(err)
	}
	if f := flagsOf(t, mustGet(t, out, KubeAPIServer)); f["etcd-servers"] != "https://10.0.0.50:2379,https://10.0.0.51:2379" {
		t.Errorf("explicit etcd-servers %q", f["etcd-servers"])
	}
	if !(Changes{}).IsZero() || seedChanges().IsZero() {
		t.Error("IsZero")
	}
}

// etcd's Go flag package also takes one dash; the spelling is kept.
func TestFlagSpellings(t *testing.T) {
	c := &corev1.Container{Command: []string{"etcd", "-name", "cp1", "--data-dir=/var/lib/etcd", "-snapshot-count=10000", "--client-cert-auth"}}
	l := cmdLine{c: c, component: Etcd}
	for name, want := range map[string]string{"name": "cp1", "data-dir": "/var/lib/etcd", "snapshot-count": "10000", "client-cert-auth": "true"} {
		if v, ok, err := l.get(name); err != nil || !ok || v != want {
			t.Errorf("get(%s) = %q %v %v", name, v, ok, err)
		}
	}
	if _, _, err := l.set("name", "cp1-r"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.set("snapshot-count", "5000"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.set("client-cert-auth", "false"); err == nil {
		t.Error("bare flag given a value")
	}
	want := []string{"etcd", "-name", "cp1-r", "--data-dir=/var/lib/etcd", "-snapshot-count=5000", "--client-cert-auth"}
	if !slices.Equal(c.Command, want) {
		t.Errorf("command %q", c.Command)
	}
}

// One family of a dual-stack cluster moves: the flags keep the other
// family's range, in their order (issue 25: a single-stack flag made
// kube-apiserver report an inconsistent ServiceCIDR and
// kube-controller-manager exit on a node CIDR of the missing family).
func TestUpdateOneFamilyOfDualStack(t *testing.T) {
	dual := func(s string) string {
		s = strings.Replace(s, "--service-cluster-ip-range=192.168.0.0/16", "--service-cluster-ip-range=192.168.0.0/16,fd00:10:96::/108", 1)
		return strings.Replace(s, "--cluster-cidr=10.244.0.0/16", "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56", 1)
	}
	dir := copyDir(t, kubeadmIPv4)
	for _, comp := range []string{KubeAPIServer, KubeControllerManager} {
		path := filepath.Join(dir, FileName(comp))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(dual(string(data))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set := mustRead(t, dir)
	for _, c := range []struct {
		ch       Changes
		svc, pod string
	}{
		{Changes{ServiceCIDR: "172.24.0.0/16", PodCIDR: "10.55.0.0/16"}, "172.24.0.0/16,fd00:10:96::/108", "10.55.0.0/16,fd00:10:244::/56"},
		{Changes{ServiceCIDR: "fd00:20:96::/108", PodCIDR: "fd00:20:244::/56"}, "192.168.0.0/16,fd00:20:96::/108", "10.244.0.0/16,fd00:20:244::/56"},
		{Changes{ServiceCIDR: "fd00:20:96::/108,172.24.0.0/16"}, "172.24.0.0/16,fd00:20:96::/108", "10.244.0.0/16,fd00:10:244::/56"},
	} {
		out, _, err := Update(set, c.ch)
		if err != nil {
			t.Fatalf("%+v: %v", c.ch, err)
		}
		api, _ := mustGet(t, out, KubeAPIServer).Container()
		kcm, _ := mustGet(t, out, KubeControllerManager).Container()
		for _, want := range []struct {
			args []string
			flag string
		}{{api.Command, "--service-cluster-ip-range=" + c.svc}, {kcm.Command, "--service-cluster-ip-range=" + c.svc}, {kcm.Command, "--cluster-cidr=" + c.pod}} {
			if !slices.Contains(want.args, want.flag) {
				t.Errorf("%+v: no %s in %q", c.ch, want.flag, want.args)
			}
		}
	}
}
