//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/cmd/snapshift/app"
	"github.com/snapshift/snapshift/internal/etcdtest"
)

// runCode runs the snapshift CLI in-process and returns its output
// (stdout and stderr) and exit code.
func runCode(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := app.Main(append([]string{"snapshift"}, args...), strings.NewReader(""), &out, &errb)
	return out.String() + errb.String(), code
}

// The dual-stack cluster of TestOneFamilyDualStack: only its IPv4 ranges move.
const (
	dualSvcOld4, dualSvc6    = "192.168.0.0/16", "fd00:10:96::/112"
	dualPodOld4, dualPod6    = "10.244.0.0/16", "fd00:10:244::/56"
	dualSvcNew4, dualPodNew4 = "172.24.0.0/16", "10.55.0.0/16"
)

// TestOneFamilyDualStack (issue 25): a dual-stack cluster made by a real
// kube-apiserver (Services of every ipFamilyPolicy and family order,
// dual-stack Nodes beside an IPv4-only one, kubeadm's record of both
// ranges) moves its IPv4 ranges only, with `--service-cidr 172.24.0.0/16
// --pod-network-cidr 10.55.0.0/16`. transform checks its own output and
// publishes it; the real kube-apiserver and kube-controller-manager run on
// the IPv4 range moved and the IPv6 one kept: every IPv4 address at its
// offset, every IPv6 one unchanged, node CIDRs accepted, and a new
// dual-stack Service allocated from both ranges.
func TestOneFamilyDualStack(t *testing.T) {
	e := newTestEnv(t, 6*time.Minute)
	bin, ctx, dir, logDir := e.bin, e.ctx, e.dir, e.logDir

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, newPKI(t, dir), dualSvcOld4+","+dualSvc6, logDir)
	before := populateDualStack(ctx, t, api.client)
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	migrated := filepath.Join(dir, "migrated.db")
	ruleArgs := []string{"--service-cidr", dualSvcNew4, "--pod-network-cidr", dualPodNew4}
	run(t, append([]string{"transform", snap, "--out", migrated, "--quiet"}, ruleArgs...)...)
	run(t, append([]string{"verify", migrated, "--quiet"}, ruleArgs...)...)
	etcd2 := restoreMember(t, migrated, dir)

	dir2 := filepath.Join(dir, "pki2")
	os.MkdirAll(dir2, 0o700)
	p2 := newPKI(t, dir2)
	api2 := startAPIServer(ctx, t, bin, etcd2, p2, dualSvcNew4+","+dualSvc6, logDir)
	kcm := startKCM(t, bin, api2, p2, dualSvcNew4+","+dualSvc6, dualPodNew4+","+dualPod6, logDir)
	judgeOneFamily(ctx, t, api2, kcm, before)
}

// dualState is what the source cluster holds: each Service's cluster IPs
// and each Node's pod CIDRs.
type dualState struct {
	services map[string][]string
	nodes    map[string][]string
}

func populateDualStack(ctx context.Context, t *testing.T, c kubernetes.Interface) *dualState {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"demo"} {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		must(err)
	}
	// kubeadm's record of both ranges, as a dual-stack kubeadm init writes it.
	_, err := c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubeadm-config"},
		Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\nnetworking:\n  dnsDomain: cluster.local\n" +
			"  podSubnet: " + dualPodOld4 + "," + dualPod6 + "\n  serviceSubnet: " + dualSvcOld4 + "," + dualSvc6 + "\n"}}, metav1.CreateOptions{})
	must(err)
	single, prefer, require := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	svc := func(name string, policy *corev1.IPFamilyPolicy, fams []corev1.IPFamily, ips ...string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
			Spec: corev1.ServiceSpec{IPFamilyPolicy: policy, IPFamilies: fams, ClusterIPs: ips, Selector: map[string]string{"app": name},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}}}
		if len(ips) > 0 {
			s.Spec.ClusterIP = ips[0]
		}
		return s
	}
	for _, s := range []*corev1.Service{
		svc("v4-only", &single, []corev1.IPFamily{v4}, "192.168.3.7"),
		svc("v6-only", &single, []corev1.IPFamily{v6}, "fd00:10:96::7"),
		svc("dual-require", &require, []corev1.IPFamily{v4, v6}, "192.168.40.4", "fd00:10:96::40"),
		svc("dual-prefer-v6-first", &prefer, []corev1.IPFamily{v6, v4}, "fd00:10:96::41", "192.168.40.41"),
		svc("dual-dynamic", &require, nil),
		svc("v6-first-dynamic", &require, []corev1.IPFamily{v6, v4}),
	} {
		_, err := c.CoreV1().Services("demo").Create(ctx, s, metav1.CreateOptions{})
		must(err)
	}
	for _, n := range []struct {
		name  string
		cidrs []string
	}{
		{"cp1", []string{"10.244.0.0/24", "fd00:10:244::/64"}},
		{"w1", []string{"10.244.1.0/24", "fd00:10:244:1::/64"}},
		{"w2", []string{"10.244.2.0/24", "fd00:10:244:2::/64"}},
		{"w3-v4-only", []string{"10.244.3.0/24"}},
	} {
		_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name},
			Spec: corev1.NodeSpec{PodCIDR: n.cidrs[0], PodCIDRs: n.cidrs}}, metav1.CreateOptions{})
		must(err)
	}
	return readDualState(ctx, t, c)
}

func readDualState(ctx context.Context, t *testing.T, c kubernetes.Interface) *dualState {
	t.Helper()
	s := &dualState{services: map[string][]string{}, nodes: map[string][]string{}}
	svcs, err := c.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range svcs.Items {
		s.services[v.Namespace+"/"+v.Name] = v.Spec.ClusterIPs
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		s.nodes[n.Name] = n.Spec.PodCIDRs
	}
	return s
}

// mapV4 moves an IPv4 address or CIDR from old to new at its offset and
// leaves an IPv6 one as it is.
func mapV4(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Contains(s, ":") {
		return s
	}
	m, err := cidr.NewMapper(netip.MustParsePrefix(old), netip.MustParsePrefix(new))
	if err != nil {
		t.Fatal(err)
	}
	in := s
	if !strings.Contains(in, "/") {
		in += "/32"
	}
	p, err := m.MapPrefix(netip.MustParsePrefix(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, "/") {
		return p.Addr().String()
	}
	return p.String()
}

func judgeOneFamily(ctx context.Context, t *testing.T, api *apiserver, kcm *proc, before *dualState) {
	t.Helper()
	c := api.client
	after := readDualState(ctx, t, c)
	var probs []string
	for key, ips := range before.services {
		var want []string
		for _, ip := range ips {
			want = append(want, mapV4(t, ip, dualSvcOld4, dualSvcNew4))
		}
		if key == "default/kubernetes" {
			want = []string{"172.24.0.1"}
		}
		if !slices.Equal(after.services[key], want) {
			probs = append(probs, fmt.Sprintf("Service %s: %v, want %v (was %v)", key, after.services[key], want, ips))
		}
	}
	if len(probs) > 0 {
		t.Errorf("FAIL Services after the IPv4-only move:\n%s", strings.Join(probs, "\n"))
	} else {
		t.Logf("PASS %d Services: IPv4 addresses at their offsets in %s, IPv6 ones unchanged, family order kept", len(before.services), dualSvcNew4)
	}
	sc, err := c.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || strings.Join(sc.Spec.CIDRs, ",") != dualSvcNew4+","+dualSvc6 {
		t.Errorf("FAIL default ServiceCIDR: %v (err %v), want %s,%s", sc, err, dualSvcNew4, dualSvc6)
	}
	// A new dual-stack Service takes its addresses from the new IPv4 range
	// and the kept IPv6 one.
	ns := corev1.IPFamilyPolicyRequireDualStack
	created, err := c.CoreV1().Services("demo").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "after-move"},
		Spec: corev1.ServiceSpec{IPFamilyPolicy: &ns, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("FAIL creating a dual-stack Service on the migrated cluster: %v", err)
	}
	if ips := created.Spec.ClusterIPs; len(ips) != 2 || !netip.MustParsePrefix(dualSvcNew4).Contains(netip.MustParseAddr(ips[0])) ||
		!netip.MustParsePrefix(dualSvc6).Contains(netip.MustParseAddr(ips[1])) {
		t.Errorf("FAIL new dual-stack Service got %v, want one address of %s and one of %s", ips, dualSvcNew4, dualSvc6)
	}

	time.Sleep(30 * time.Second) // kube-controller-manager's node IPAM reads every node at start
	if exited, exitErr := kcm.exited(); exited {
		t.Fatalf("FAIL kube-controller-manager exited on the migrated nodes: %v\n%s", exitErr, tail(kcm.logText(), 3000))
	}
	after = readDualState(ctx, t, c)
	probs = nil
	for name, cidrs := range before.nodes {
		var want []string
		for _, p := range cidrs {
			want = append(want, mapV4(t, p, dualPodOld4, dualPodNew4))
		}
		if !slices.Equal(after.nodes[name], want) {
			probs = append(probs, fmt.Sprintf("Node %s: %v, want %v", name, after.nodes[name], want))
		}
	}
	if len(probs) > 0 {
		t.Errorf("FAIL node pod CIDRs:\n%s", strings.Join(probs, "\n"))
	}
	if log := kcm.logText(); strings.Contains(log, "out the range of cluster cidr") || strings.Contains(log, "does not exist in cluster cidrs") ||
		strings.Contains(log, "that does not exist") {
		t.Errorf("FAIL kube-controller-manager complains about node CIDRs:\n%s", grep(log, "cidr"))
	} else {
		t.Logf("PASS kube-controller-manager runs 30 s on %s,%s and accepts every node (IPv4 moved, IPv6 kept)", dualPodNew4, dualPod6)
	}
}

// TestExtraServiceCIDR (issue 25): a cluster whose operator added a
// ServiceCIDR (10.100.0.0/24) beside the default one, with Services in it,
// moves both ranges (`--service-cidr-map 10.100.0.0/24=172.25.0.0/24`). The
// real kube-apiserver serves every Service at its offset, the added
// ServiceCIDR on its new range, hands out addresses from the new ranges
// only, and refuses one from the old added range.
func TestExtraServiceCIDR(t *testing.T) {
	e := newTestEnv(t, 5*time.Minute)
	bin, ctx, dir, logDir := e.bin, e.ctx, e.dir, e.logDir

	etcd := etcdtest.StartT(t)
	p := newPKI(t, dir)
	api := startAPIServer(ctx, t, bin, etcd, p, "192.168.0.0/16", logDir)
	// kube-controller-manager's servicecidrs controller marks an added
	// ServiceCIDR Ready; until then the allocator does not use it.
	kcm := startKCM(t, bin, api, p, "192.168.0.0/16", "10.244.0.0/16", logDir)
	c := api.client
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NetworkingV1().ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.100.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServiceCIDRReady(ctx, t, c, "extra")
	create := func(name, ip string) (*corev1.Service, error) {
		return c.CoreV1().Services("demo").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	}
	for name, ip := range map[string]string{"in-extra": "10.100.0.20", "in-extra-last": "10.100.0.254", "in-default": "192.168.3.7"} {
		if _, err := create(name, ip); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	kcm.stop()
	api.stop()
	etcd.Close()

	migrated := filepath.Join(dir, "migrated.db")
	// Without the mapping the move is refused, naming the flag.
	if out, code := runCode(t, "plan", snap, "--service-cidr", "172.24.0.0/16", "--quiet"); code != 4 || !strings.Contains(out, "--service-cidr-map") {
		t.Errorf("plan without --service-cidr-map: exit %d, want 4 and a refusal naming the flag:\n%s", code, out)
	}
	ruleArgs := []string{"--service-cidr", "172.24.0.0/16", "--service-cidr-map", "10.100.0.0/24=172.25.0.0/24"}
	run(t, append([]string{"transform", snap, "--out", migrated, "--quiet"}, ruleArgs...)...)
	run(t, append([]string{"verify", migrated, "--quiet"}, ruleArgs...)...)
	etcd2 := restoreMember(t, migrated, dir)
	dir2 := filepath.Join(dir, "pki2")
	os.MkdirAll(dir2, 0o700)
	p2 := newPKI(t, dir2)
	api2 := startAPIServer(ctx, t, bin, etcd2, p2, "172.24.0.0/16", logDir)
	startKCM(t, bin, api2, p2, "172.24.0.0/16", "10.244.0.0/16", logDir)
	c = api2.client

	for name, want := range map[string]string{"in-extra": "172.25.0.20", "in-extra-last": "172.25.0.254", "in-default": "172.24.3.7"} {
		s, err := c.CoreV1().Services("demo").Get(ctx, name, metav1.GetOptions{})
		if err != nil || s.Spec.ClusterIP != want {
			t.Errorf("FAIL Service demo/%s: %v (err %v), want %s", name, s.Spec.ClusterIP, err, want)
		}
	}
	sc, err := c.NetworkingV1().ServiceCIDRs().Get(ctx, "extra", metav1.GetOptions{})
	if err != nil || strings.Join(sc.Spec.CIDRs, ",") != "172.25.0.0/24" {
		t.Fatalf("FAIL ServiceCIDR extra: %v (err %v), want 172.25.0.0/24", sc, err)
	}
	waitServiceCIDRReady(ctx, t, c, "extra")
	if s, err := create("new-in-extra", "172.25.0.30"); err != nil {
		t.Errorf("FAIL a Service at 172.25.0.30 (the moved added range) is refused: %v", err)
	} else {
		t.Logf("PASS the moved added range hands out %s", s.Spec.ClusterIP)
	}
	if _, err := create("old-extra", "10.100.0.30"); err == nil {
		t.Errorf("FAIL a Service at 10.100.0.30 (the old added range) is accepted")
	}
	for i := 0; i < 5; i++ {
		s, err := create(fmt.Sprintf("dyn-%d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		a := netip.MustParseAddr(s.Spec.ClusterIP)
		if !netip.MustParsePrefix("172.24.0.0/16").Contains(a) && !netip.MustParsePrefix("172.25.0.0/24").Contains(a) {
			t.Errorf("FAIL a new Service got %s, outside the new ranges", a)
		}
	}
}

func waitServiceCIDRReady(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		sc, err := c.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, cond := range sc.Status.Conditions {
				if cond.Type == networkingv1.ServiceCIDRConditionReady && cond.Status == metav1.ConditionTrue {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ServiceCIDR %s not Ready: %v %v", name, sc, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestRepackNodes (issue 25): a pod range too small for the nodes at their
// offsets (10.244.0.0/16 -> 10.55.0.0/20) with --repack-nodes. The real
// kube-controller-manager, on --cluster-cidr=10.55.0.0/20, occupies every
// node's block at start without a complaint and gives a new Node a block
// that overlaps none of them.
func TestRepackNodes(t *testing.T) {
	e := newTestEnv(t, 5*time.Minute)
	bin, ctx, dir, logDir := e.bin, e.ctx, e.dir, e.logDir

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, newPKI(t, dir), "192.168.0.0/16", logDir)
	c := api.client
	if _, err := c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubeadm-config"},
		Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 192.168.0.0/16\n"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, podCIDR := range map[string]string{"a": "10.244.1.0/24", "far": "10.244.200.0/24", "far-fake": "10.244.201.16/28", "b": "10.244.2.0/24"} {
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	if out, code := runCode(t, "plan", snap, "--pod-network-cidr", "10.55.0.0/20", "--quiet"); code != 4 || !strings.Contains(out, "--repack-nodes") {
		t.Errorf("plan without --repack-nodes: exit %d, want 4 and a refusal naming the flag:\n%s", code, out)
	}
	migrated := filepath.Join(dir, "migrated.db")
	ruleArgs := []string{"--pod-network-cidr", "10.55.0.0/20"}
	out := run(t, append([]string{"transform", snap, "--out", migrated, "--repack-nodes"}, ruleArgs...)...)
	if !strings.Contains(out, "far 10.244.200.0/24 -> 10.55.0.0/24") {
		t.Errorf("transform's notes do not list the repacked node:\n%s", out)
	}
	run(t, append([]string{"verify", migrated, "--quiet"}, ruleArgs...)...)
	etcd2 := restoreMember(t, migrated, dir)
	dir2 := filepath.Join(dir, "pki2")
	os.MkdirAll(dir2, 0o700)
	p2 := newPKI(t, dir2)
	api2 := startAPIServer(ctx, t, bin, etcd2, p2, "192.168.0.0/16", logDir)
	kcm := startKCM(t, bin, api2, p2, "192.168.0.0/16", "10.55.0.0/20", logDir)
	c = api2.client
	want := map[string]string{"a": "10.55.1.0/24", "b": "10.55.2.0/24", "far": "10.55.0.0/24", "far-fake": "10.55.3.0/28"}
	for name, w := range want {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || n.Spec.PodCIDR != w {
			t.Errorf("FAIL node %s: %v (err %v), want %s", name, n.Spec.PodCIDR, err, w)
		}
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "joined-later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Second)
	if exited, exitErr := kcm.exited(); exited {
		t.Fatalf("FAIL kube-controller-manager exited on the repacked nodes: %v\n%s", exitErr, tail(kcm.logText(), 3000))
	}
	if log := kcm.logText(); strings.Contains(log, "out the range of cluster cidr") || strings.Contains(log, "does not exist in cluster cidrs") {
		t.Errorf("FAIL kube-controller-manager complains about node CIDRs:\n%s", grep(log, "cidr"))
	}
	n, err := c.CoreV1().Nodes().Get(ctx, "joined-later", metav1.GetOptions{})
	if err != nil || n.Spec.PodCIDR == "" {
		t.Fatalf("FAIL kube-controller-manager gave the new node no pod CIDR: %v %v", n, err)
	}
	got := netip.MustParsePrefix(n.Spec.PodCIDR)
	for name, w := range want {
		if got.Overlaps(netip.MustParsePrefix(w)) {
			t.Errorf("FAIL the new node's %s overlaps node %s's %s", got, name, w)
		}
	}
	t.Logf("PASS kube-controller-manager occupies the repacked blocks and gives a new node %s", got)
}
