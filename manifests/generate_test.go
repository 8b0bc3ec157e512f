package manifests

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/option"
)

// The CA directories that existed on the host the kubeadm fixtures were made on.
var fixtureCACertPaths = []string{"/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates"}

// ipv4Config is the configuration kubeadm made testdata/kubeadm-v1.36.3/ipv4 from.
func ipv4Config() GenerateConfig {
	return GenerateConfig{
		KubernetesVersion: "v1.36.3",
		NodeName:          "cp1",
		AdvertiseAddress:  "10.0.0.10",
		ServiceCIDR:       "192.168.0.0/16",
		PodCIDR:           "10.244.0.0/16",
		CACertPaths:       fixtureCACertPaths,
	}
}

// ipv6Config is the configuration of testdata/kubeadm-v1.36.3/ipv6-extra.
func ipv6Config() GenerateConfig {
	return GenerateConfig{
		KubernetesVersion: "v1.36.3",
		ImageRepository:   "registry.example.com/k8s",
		NodeName:          "cp-a",
		AdvertiseAddress:  "fd00::10",
		BindPort:          8443,
		ServiceCIDR:       "fd00:10:96::/108",
		PodCIDR:           "fd00:10:244::/56",
		DNSDomain:         "corp.local",
		EtcdDataDir:       "/data/etcd",
		CACertPaths:       fixtureCACertPaths,
		APIServerExtraArgs: []Arg{
			{"authorization-mode", "Node,RBAC,Webhook"}, {"audit-log-maxage", "30"},
		},
		ControllerManagerExtraArgs: []Arg{{"bind-address", "::"}, {"node-cidr-mask-size", "64"}},
		SchedulerExtraArgs:         []Arg{{"bind-address", "::1"}},
		EtcdExtraArgs:              []Arg{{"listen-metrics-urls", "http://[::1]:2382"}, {"quota-backend-bytes", "8589934592"}},
		Env: []corev1.EnvVar{
			{Name: "NO_PROXY", Value: "10.0.0.0/8"}, {Name: "HTTPS_PROXY", Value: "http://proxy.example:3128"},
		},
	}
}

// Generate writes, byte for byte, what kubeadm v1.36.3 writes for the same
// configuration (testdata/kubeadm-gen ran kubeadm's own code).
func TestGenerateMatchesKubeadm(t *testing.T) {
	for _, tc := range []struct {
		dir string
		cfg GenerateConfig
	}{{kubeadmIPv4, ipv4Config()}, {kubeadmIPv6, ipv6Config()}} {
		set, err := Generate(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(set.Manifests) != 4 {
			t.Fatalf("%d manifests", len(set.Manifests))
		}
		for _, c := range Components() {
			r := mustRender(t, set, c)
			if r.Method != RenderMarshalled {
				t.Errorf("%s: method %s", c, r.Method)
			}
			checkDiff(t, tc.dir+"/"+FileName(c), []byte(readFixture(t, tc.dir, c)), r.Data, nil)
		}
	}
}

// flagsOf parses the container's command as --name=value pairs.
func flagsOf(t *testing.T, m *Manifest) map[string]string {
	t.Helper()
	c, err := m.Container()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range c.Command[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			t.Fatalf("%s: %q is not --name=value", m.Component, a)
		}
		if _, dup := out[name]; dup {
			t.Fatalf("%s: --%s twice", m.Component, name)
		}
		out[name] = value
	}
	return out
}

// Generate's output parses as Pods with exactly the expected network and
// etcd flags, and the expected mounts.
func TestGenerateFlagsAndMounts(t *testing.T) {
	cfg := GenerateConfig{
		KubernetesVersion: "v1.36.3",
		NodeName:          "cp1",
		AdvertiseAddress:  "10.0.0.11",
		ServiceCIDR:       "172.24.0.0/16",
		PodCIDR:           "10.55.0.0/16",
		NodeCIDRMaskSize:  24,
		EtcdMembers: []EtcdMember{
			{Name: "cp0", PeerURL: "https://10.0.0.12:2380"},
			{Name: "cp1", PeerURL: "https://10.0.0.11:2380", ClientURL: "https://10.0.0.11:2379"},
		},
		EtcdDataDir: "/var/lib/etcd-restored",
	}
	gen, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Round trip through the text, as kubelet reads it.
	set := &Set{}
	for _, m := range gen.Manifests {
		r := mustRender(t, gen, m.Component)
		back, err := Parse(m.Component, r.Data)
		if err != nil {
			t.Fatalf("%s: %v\n%s", m.Component, err, r.Data)
		}
		p := back.Pod
		if p.Spec.PriorityClassName != "system-node-critical" || !p.Spec.HostNetwork ||
			p.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
			p.Namespace != "kube-system" || p.Labels["tier"] != "control-plane" ||
			p.Spec.Containers[0].Resources.Requests.Cpu().IsZero() {
			t.Errorf("%s: not a kubeadm static Pod:\n%s", m.Component, r.Data)
		}
		set.Manifests = append(set.Manifests, back)
	}
	flags := map[string]map[string]string{}
	for _, c := range Components() {
		flags[c] = flagsOf(t, mustGet(t, set, c))
	}
	with := func(name string) map[string]string {
		out := map[string]string{}
		for _, c := range Components() {
			if v, ok := flags[c][name]; ok {
				out[c] = v
			}
		}
		return out
	}
	wantSets := map[string]map[string]string{
		"service-cluster-ip-range": {KubeAPIServer: "172.24.0.0/16", KubeControllerManager: "172.24.0.0/16"},
		"cluster-cidr":             {KubeControllerManager: "10.55.0.0/16"},
		"allocate-node-cidrs":      {KubeControllerManager: "true"},
		"node-cidr-mask-size":      {}, // 24 is kube-controller-manager's default: no flag, as kubeadm
		"advertise-address":        {KubeAPIServer: "10.0.0.11"},
		"etcd-servers":             {KubeAPIServer: "https://127.0.0.1:2379"},
	}
	for name, want := range wantSets {
		if got := with(name); !maps.Equal(got, want) {
			t.Errorf("--%s: %v, want %v", name, got, want)
		}
	}
	wantEtcd := map[string]string{
		"name":                           "cp1",
		"initial-cluster":                "cp0=https://10.0.0.12:2380,cp1=https://10.0.0.11:2380",
		"initial-advertise-peer-urls":    "https://10.0.0.11:2380",
		"listen-peer-urls":               "https://10.0.0.11:2380",
		"advertise-client-urls":          "https://10.0.0.11:2379",
		"listen-client-urls":             "https://127.0.0.1:2379,https://10.0.0.11:2379",
		"listen-metrics-urls":            "http://127.0.0.1:2381",
		"data-dir":                       "/var/lib/etcd-restored",
		"cert-file":                      "/etc/kubernetes/pki/etcd/server.crt",
		"key-file":                       "/etc/kubernetes/pki/etcd/server.key",
		"trusted-ca-file":                "/etc/kubernetes/pki/etcd/ca.crt",
		"client-cert-auth":               "true",
		"peer-cert-file":                 "/etc/kubernetes/pki/etcd/peer.crt",
		"peer-key-file":                  "/etc/kubernetes/pki/etcd/peer.key",
		"peer-trusted-ca-file":           "/etc/kubernetes/pki/etcd/ca.crt",
		"peer-client-cert-auth":          "true",
		"snapshot-count":                 "10000",
		"feature-gates":                  "InitialCorruptCheck=true",
		"watch-progress-notify-interval": "5s",
	}
	if !maps.Equal(flags[Etcd], wantEtcd) {
		t.Errorf("etcd flags\n%v\nwant\n%v", flags[Etcd], wantEtcd)
	}
	etcd := mustGet(t, set, Etcd).Pod
	if etcd.Annotations[EtcdAdvertiseClientURLsAnnotation] != "https://10.0.0.11:2379" {
		t.Errorf("etcd annotations %v", etcd.Annotations)
	}
	api := mustGet(t, set, KubeAPIServer).Pod
	if api.Annotations[APIServerAdvertiseAddressAnnotation] != "10.0.0.11:6443" || api.Spec.Containers[0].LivenessProbe.HTTPGet.Host != "10.0.0.11" {
		t.Errorf("apiserver annotation %v / probe host", api.Annotations)
	}

	type mount struct {
		name, hostPath, mountPath string
		readOnly                  bool
		typ                       corev1.HostPathType
	}
	mountsOf := func(p *corev1.Pod) []mount {
		vols := map[string]corev1.Volume{}
		for _, v := range p.Spec.Volumes {
			vols[v.Name] = v
		}
		var out []mount
		for _, vm := range p.Spec.Containers[0].VolumeMounts {
			v, ok := vols[vm.Name]
			if !ok || v.HostPath == nil || v.HostPath.Type == nil {
				t.Fatalf("%s: mount %s has no hostPath volume", p.Name, vm.Name)
			}
			out = append(out, mount{vm.Name, v.HostPath.Path, vm.MountPath, vm.ReadOnly, *v.HostPath.Type})
		}
		if len(out) != len(p.Spec.Volumes) {
			t.Errorf("%s: %d volumes for %d mounts", p.Name, len(p.Spec.Volumes), len(out))
		}
		return out
	}
	dir, file := corev1.HostPathDirectoryOrCreate, corev1.HostPathFileOrCreate
	wantMounts := map[string][]mount{
		KubeAPIServer: {
			{"ca-certs", "/etc/ssl/certs", "/etc/ssl/certs", true, dir},
			{"k8s-certs", "/etc/kubernetes/pki", "/etc/kubernetes/pki", true, dir},
		},
		KubeControllerManager: {
			{"ca-certs", "/etc/ssl/certs", "/etc/ssl/certs", true, dir},
			{"k8s-certs", "/etc/kubernetes/pki", "/etc/kubernetes/pki", true, dir},
			{"kubeconfig", "/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/controller-manager.conf", true, file},
		},
		KubeScheduler: {
			{"kubeconfig", "/etc/kubernetes/scheduler.conf", "/etc/kubernetes/scheduler.conf", true, file},
		},
		Etcd: {
			{"etcd-data", "/var/lib/etcd-restored", "/var/lib/etcd-restored", false, dir},
			{"etcd-certs", "/etc/kubernetes/pki/etcd", "/etc/kubernetes/pki/etcd", false, dir},
		},
	}
	for _, c := range Components() {
		if got := mountsOf(mustGet(t, set, c).Pod); !slices.Equal(got, wantMounts[c]) {
			t.Errorf("%s mounts\n%v\nwant\n%v", c, got, wantMounts[c])
		}
	}

	// A generated set goes through Update like a read one.
	out, _, err := Update(gen, Changes{ServiceCIDR: "172.25.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mustRender(t, out, KubeAPIServer).Data), "--service-cluster-ip-range=172.25.0.0/16") {
		t.Error("Update on a generated set")
	}
}

func TestGenerateOptions(t *testing.T) {
	cfg := ipv4Config()
	cfg.NodeCIDRMaskSize = 26
	cfg.PodCIDR = "10.55.0.0/16"
	cfg.Components = []string{KubeAPIServer, KubeControllerManager, KubeScheduler}
	cfg.EtcdServers = []string{"https://10.0.0.50:2379", "https://10.0.0.51:2379"}
	set, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if set.Has(Etcd) || len(set.Manifests) != 3 {
		t.Errorf("external etcd: %d manifests", len(set.Manifests))
	}
	if f := flagsOf(t, mustGet(t, set, KubeControllerManager)); f["node-cidr-mask-size"] != "26" {
		t.Errorf("node-cidr-mask-size %q", f["node-cidr-mask-size"])
	}
	if f := flagsOf(t, mustGet(t, set, KubeAPIServer)); f["etcd-servers"] != "https://10.0.0.50:2379,https://10.0.0.51:2379" {
		t.Errorf("etcd-servers %q", f["etcd-servers"])
	}
	// Without a Pod CIDR kubeadm does not let kube-controller-manager allocate node CIDRs.
	cfg = ipv4Config()
	cfg.PodCIDR = ""
	set, err = Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := flagsOf(t, mustGet(t, set, KubeControllerManager))
	for _, name := range []string{"allocate-node-cidrs", "cluster-cidr", "service-cluster-ip-range"} {
		if _, ok := f[name]; ok {
			t.Errorf("--%s without a Pod CIDR", name)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*GenerateConfig)
		want string
	}{
		{"no version", func(c *GenerateConfig) { c.KubernetesVersion = "" }, "kubernetes version is required"},
		{"bad version", func(c *GenerateConfig) { c.KubernetesVersion = "1.36" }, `"1.36" is not a version like v1.36.3`},
		{"no address", func(c *GenerateConfig) { c.AdvertiseAddress = "" }, "advertise address"},
		{"bad service CIDR", func(c *GenerateConfig) { c.ServiceCIDR = "10.96.0.0" }, "service CIDR"},
		{"mask too small", func(c *GenerateConfig) { c.NodeCIDRMaskSize = 8 }, "node CIDR mask size /8 does not fit"},
		{"no node name", func(c *GenerateConfig) { c.NodeName = "" }, "node name is required"},
		{"unknown component", func(c *GenerateConfig) { c.Components = []string{"kube-proxy"} }, `unknown control-plane component "kube-proxy"`},
		{"member not found", func(c *GenerateConfig) {
			c.EtcdMembers = []EtcdMember{{Name: "a", PeerURL: "https://10.0.0.1:2380"}, {Name: "b", PeerURL: "https://10.0.0.2:2380"}}
		}, `no etcd member is named after node name "cp1" (members: a, b)`},
		{"relative cert dir", func(c *GenerateConfig) { c.CertDir = "pki" }, `cert dir "pki" is not an absolute path`},
	} {
		cfg := ipv4Config()
		tc.edit(&cfg)
		_, err := Generate(cfg)
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
			continue
		}
		// Options are option.Errors, here said in words.
		if msg, _ := option.Render(err, option.Words); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, msg, tc.want)
		}
	}
}

func TestHostCACertPaths(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"/etc/pki/ca-trust", "/usr/share/ca-certificates"} {
		if err := mkdirAll(root + p); err != nil {
			t.Fatal(err)
		}
	}
	if got := HostCACertPaths(root); !slices.Equal(got, []string{"/etc/pki/ca-trust", "/usr/share/ca-certificates"}) {
		t.Errorf("HostCACertPaths %q", got)
	}
	cfg := ipv4Config()
	cfg.CACertPaths = HostCACertPaths(root)
	set, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range mustGet(t, set, KubeControllerManager).Pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	if !slices.Equal(names, []string{"ca-certs", "etc-pki-ca-trust", "k8s-certs", "kubeconfig", "usr-share-ca-certificates"}) {
		t.Errorf("volumes %q", names)
	}
}

func mkdirAll(p string) error { return os.MkdirAll(p, 0o755) }

// TestGenerateExtraVolumes: kubeadm's extraVolumes are mounted at their
// mount path, replace a default of the same name, and are validated.
func TestGenerateExtraVolumes(t *testing.T) {
	cfg := ipv4Config()
	cfg.APIServerExtraVolumes = []HostPathMount{{Name: "audit", HostPath: "/etc/kubernetes/audit", MountPath: "/audit", ReadOnly: true, PathType: "DirectoryOrCreate"}}
	cfg.SchedulerExtraVolumes = []HostPathMount{{Name: "kubeconfig", HostPath: "/etc/kubernetes/other.conf", MountPath: "/etc/kubernetes/scheduler.conf", ReadOnly: true}}
	set, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pod := mustGet(t, set, KubeAPIServer).Pod
	var found bool
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		found = found || (m.Name == "audit" && m.MountPath == "/audit" && m.ReadOnly)
	}
	for _, v := range pod.Spec.Volumes {
		found = found && !(v.Name == "audit" && v.HostPath.Path != "/etc/kubernetes/audit")
	}
	if !found {
		t.Errorf("audit volume: %+v", pod.Spec.Containers[0].VolumeMounts)
	}
	sched := mustGet(t, set, KubeScheduler).Pod
	if len(sched.Spec.Volumes) != 1 || sched.Spec.Volumes[0].HostPath.Path != "/etc/kubernetes/other.conf" {
		t.Errorf("scheduler volumes %+v", sched.Spec.Volumes)
	}
	cfg.ControllerManagerExtraVolumes = []HostPathMount{{Name: "x", HostPath: "relative", MountPath: "/x"}}
	if _, err := Generate(cfg); err == nil {
		t.Error("a relative hostPath accepted")
	}
}

// TestGenerateEnvPerComponent: kubeadm's extraEnvs go to their own
// component, merged after the shared (proxy) variables, one of the same
// name replacing it, sorted by name (kubeadm's MergeKubeadmEnvVars); etcd
// gets its own only.
func TestGenerateEnvPerComponent(t *testing.T) {
	cfg := ipv4Config()
	cfg.Env = []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "SHARED", Value: "proxy"}}
	cfg.APIServerEnv = []corev1.EnvVar{{Name: "SHARED", Value: "api"}, {Name: "API_ONLY", Value: "a"}}
	cfg.ControllerManagerEnv = []corev1.EnvVar{{Name: "KCM_ONLY", Value: "k"}}
	cfg.SchedulerEnv = []corev1.EnvVar{{Name: "SCHED_ONLY", Value: "s"}}
	cfg.EtcdEnv = []corev1.EnvVar{{Name: "ETCD_ONLY", Value: "e"}}
	set, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		KubeAPIServer:         "API_ONLY=a HTTPS_PROXY=http://proxy:3128 SHARED=api",
		KubeControllerManager: "HTTPS_PROXY=http://proxy:3128 KCM_ONLY=k SHARED=proxy",
		KubeScheduler:         "HTTPS_PROXY=http://proxy:3128 SCHED_ONLY=s SHARED=proxy",
		Etcd:                  "ETCD_ONLY=e",
	}
	for _, m := range set.Manifests {
		var got []string
		for _, e := range m.Pod.Spec.Containers[0].Env {
			got = append(got, e.Name+"="+e.Value)
		}
		if strings.Join(got, " ") != want[m.Component] {
			t.Errorf("%s: env %v, want %s", m.Component, got, want[m.Component])
		}
	}
}
