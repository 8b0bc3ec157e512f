package rules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapshift/snapshift/internal/testfile"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/leftovers"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

var (
	newServiceCIDR = netip.MustParsePrefix("172.24.0.0/16")
	newPodCIDR     = netip.MustParsePrefix("10.55.0.0/16")
	oldServiceCIDR = netip.MustParsePrefix(sample.ServiceCIDR)
	oldPodCIDR     = netip.MustParsePrefix(sample.PodCIDR)
)

// migration is one end-to-end run on the sample: transform, restore with
// etcd's own code, and the live keys read back from a real etcd.
type migration struct {
	report *transform.Report
	plan   *rules.Plan
	left   *leftovers.LeftoverReport
	in     *liveState                  // the input, read with snapshot.Open
	etcd   map[string]*mvccpb.KeyValue // the restored member, by key
	c      *codec.Codec
	objs   map[string]*codec.Object   // decoded etcd values, by key
	svcs   map[string]*corev1.Service // by "namespace/name"
	nodes  map[string]*corev1.Node    // by name
	ipaddr map[string]*networkingv1.IPAddress
}

func migrateSample(t *testing.T, opts rules.Options) *migration {
	t.Helper()
	dir := t.TempDir()
	in := testfile.Copy(t, samplePath, dir)
	sum := testfile.Sum(t, in)
	out := filepath.Join(dir, "migrated.db")
	rep, plan, scan, err := runRules(t, in, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if testfile.Sum(t, in) != sum {
		t.Fatal("the transform modified its input")
	}
	srv := restoreAndServe(t, out)
	if testfile.Sum(t, in) != sum {
		t.Fatal("the restore modified the original input")
	}
	resp, err := srv.Client().Get(t.Context(), "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision < int64(snapshot.DefaultRevisionBump) {
		t.Errorf("restored revision %d, want the default bump (%d) applied", resp.Header.Revision, snapshot.DefaultRevisionBump)
	}
	m := &migration{report: rep, plan: plan, left: scan.Report(), in: readState(t, in), etcd: map[string]*mvccpb.KeyValue{},
		c: codec.New(), objs: map[string]*codec.Object{}, svcs: map[string]*corev1.Service{}, nodes: map[string]*corev1.Node{},
		ipaddr: map[string]*networkingv1.IPAddress{}}
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		m.etcd[k] = kv
		if codec.Detect(kv.Value) != codec.Protobuf && codec.Detect(kv.Value) != codec.JSON {
			continue // the apiserver's compact_rev_key and the like
		}
		o := decodeValue(t, m.c, k, kv.Value)
		m.objs[k] = o
		switch x := o.Obj.(type) {
		case *corev1.Service:
			m.svcs[x.Namespace+"/"+x.Name] = x
		case *corev1.Node:
			m.nodes[x.Name] = x
		case *networkingv1.IPAddress:
			m.ipaddr[strings.TrimPrefix(k, wellknown.PrefixIPAddresses)] = x
		}
	}
	if len(m.etcd) != len(m.in.Live)-rep.Deleted+rep.Created {
		t.Errorf("restored etcd holds %d keys; input %d, deleted %d, created %d", len(m.etcd), len(m.in.Live), rep.Deleted, rep.Created)
	}
	return m
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// serviceIPs returns a Service's cluster IPs (none for headless/ExternalName).
func serviceIPs(s *corev1.Service) []netip.Addr {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, ip := range ips {
		if ip == "" || ip == corev1.ClusterIPNone {
			continue
		}
		out = append(out, netip.MustParseAddr(ip))
	}
	return out
}

// checkServices asserts the Service side of the migration. kept lists the
// exempt Services ("ns/name") and the address each keeps.
func (m *migration) checkServices(t *testing.T, kept map[string]string) (v4 map[netip.Addr]string) {
	t.Helper()
	v4 = map[netip.Addr]string{}
	owner := map[netip.Addr]string{}
	for name, s := range m.svcs {
		if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] != s.Spec.ClusterIP {
			t.Errorf("service %s: clusterIP %s but clusterIPs[0] %s", name, s.Spec.ClusterIP, s.Spec.ClusterIPs[0])
		}
		for _, a := range serviceIPs(s) {
			if prev, dup := owner[a]; dup {
				t.Errorf("services %s and %s share %s", prev, name, a)
			}
			owner[a] = name
			if !a.Is4() {
				continue
			}
			v4[a] = name
			if want, ok := kept[name]; ok {
				if a.String() != want {
					t.Errorf("exempt service %s has %s, want it to keep %s", name, a, want)
				}
				continue
			}
			if oldServiceCIDR.Contains(a) {
				t.Errorf("service %s still has %s from the old range %s", name, a, oldServiceCIDR)
			}
			if !newServiceCIDR.Contains(a) {
				t.Errorf("service %s has %s outside the new range %s", name, a, newServiceCIDR)
			}
		}
	}
	// Every sample Service is there; the dual-stack one keeps its IPv6 address.
	for _, f := range sample.Services() {
		s, ok := m.svcs[f.Namespace+"/"+f.Name]
		if !ok {
			t.Errorf("service %s/%s missing after the restore", f.Namespace, f.Name)
			continue
		}
		if len(f.ClusterIPs) != len(s.Spec.ClusterIPs) {
			t.Errorf("service %s/%s: clusterIPs %v, the input had %v", f.Namespace, f.Name, s.Spec.ClusterIPs, f.ClusterIPs)
		}
		for i, old := range f.ClusterIPs {
			if old == corev1.ClusterIPNone || i >= len(s.Spec.ClusterIPs) {
				continue
			}
			oa, na := netip.MustParseAddr(old), netip.MustParseAddr(s.Spec.ClusterIPs[i])
			if oa.Is6() && na != oa {
				t.Errorf("service %s/%s: IPv6 address %s changed to %s", f.Namespace, f.Name, oa, na)
			}
			if _, exempt := kept[f.Namespace+"/"+f.Name]; oa.Is4() && !exempt {
				// Offsets are kept (the kubernetes Service goes to index 1,
				// where it already is).
				oo, _ := cidr.Offset(oldServiceCIDR, oa)
				no, _ := cidr.Offset(newServiceCIDR, na)
				if no == nil || oo.Cmp(no) != 0 {
					t.Errorf("service %s/%s: %s -> %s does not keep the offset", f.Namespace, f.Name, oa, na)
				}
			}
		}
	}
	// The allocator state matches the Services exactly.
	ra, ok := m.objs[wellknown.KeyServiceIPRange].Obj.(*corev1.RangeAllocation)
	if !ok {
		t.Fatalf("%s is not a RangeAllocation", wellknown.KeyServiceIPRange)
	}
	if ra.Range != newServiceCIDR.String() {
		t.Errorf("RangeAllocation range %s, want %s", ra.Range, newServiceCIDR)
	}
	inBitmap := bitmapAddrs(t, ra)
	var wantBitmap []string
	for a := range v4 {
		if newServiceCIDR.Contains(a) {
			wantBitmap = append(wantBitmap, a.String())
		}
	}
	sortAddrStrings(wantBitmap)
	if !slices.Equal(inBitmap, wantBitmap) {
		t.Errorf("bitmap holds %v, want exactly the IPv4 ClusterIPs in the new range %v", inBitmap, wantBitmap)
	}
	var names, wantNames []string
	for name, ip := range m.ipaddr {
		names = append(names, name)
		if ip.Name != name {
			t.Errorf("IPAddress at %s is named %s", name, ip.Name)
		}
		a, err := netip.ParseAddr(name)
		if err != nil || a.String() != name {
			t.Errorf("IPAddress %s is not named after a canonical IP", name)
			continue
		}
		if oldServiceCIDR.Contains(a) {
			if _, exempt := kept[v4[a]]; !exempt {
				t.Errorf("IPAddress %s is in the old range", name)
			}
		}
		if ip.Spec.ParentRef == nil || ip.Spec.ParentRef.Resource != "services" || ip.Spec.ParentRef.Group != "" ||
			ip.Spec.ParentRef.Namespace+"/"+ip.Spec.ParentRef.Name != v4[a] {
			t.Errorf("IPAddress %s: parentRef %+v, want services %s", name, ip.Spec.ParentRef, v4[a])
		}
		if ip.Labels["ipaddress.kubernetes.io/ip-family"] != "IPv4" || ip.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" {
			t.Errorf("IPAddress %s: labels %v", name, ip.Labels)
		}
	}
	for a := range v4 {
		wantNames = append(wantNames, a.String())
	}
	sortAddrStrings(names)
	sortAddrStrings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("IPAddress objects %v, want one per IPv4 ClusterIP %v", names, wantNames)
	}
	sc, ok := m.objs[wellknown.KeyDefaultServiceCIDR].Obj.(*networkingv1.ServiceCIDR)
	if !ok {
		t.Fatalf("%s is not a networking.k8s.io/v1 ServiceCIDR", wellknown.KeyDefaultServiceCIDR)
	}
	if !slices.Equal(sc.Spec.CIDRs, []string{newServiceCIDR.String()}) {
		t.Errorf("ServiceCIDR kubernetes spec.cidrs = %v, want [%s]", sc.Spec.CIDRs, newServiceCIDR)
	}
	if got := m.svcs["default/kubernetes"].Spec.ClusterIP; got != "172.24.0.1" {
		t.Errorf("default/kubernetes clusterIP %s, want 172.24.0.1", got)
	}
	return v4
}

func sortAddrStrings(s []string) {
	sort.Slice(s, func(i, j int) bool { return netip.MustParseAddr(s[i]).Less(netip.MustParseAddr(s[j])) })
}

func (m *migration) checkNodes(t *testing.T) {
	t.Helper()
	var all []netip.Prefix
	for _, f := range sample.Nodes() {
		n, ok := m.nodes[f.Name]
		if !ok {
			t.Errorf("node %s missing", f.Name)
			continue
		}
		if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDR != n.Spec.PodCIDRs[0] {
			t.Errorf("node %s: podCIDR %q, podCIDRs %v", f.Name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
			continue
		}
		p := netip.MustParsePrefix(n.Spec.PodCIDR)
		old := netip.MustParsePrefix(f.PodCIDR)
		if p.Bits() < newPodCIDR.Bits() || !newPodCIDR.Contains(p.Addr()) || p.Masked() != p {
			t.Errorf("node %s: %s is not a canonical CIDR inside %s", f.Name, p, newPodCIDR)
		}
		if p.Bits() != old.Bits() {
			t.Errorf("node %s: mask /%d, was /%d", f.Name, p.Bits(), old.Bits())
		}
		oo, _ := cidr.Offset(oldPodCIDR, old.Addr())
		no, _ := cidr.Offset(newPodCIDR, p.Addr())
		if no == nil || oo.Cmp(no) != 0 {
			t.Errorf("node %s: %s -> %s does not keep the offset", f.Name, old, p)
		}
		for _, q := range all {
			if q.Overlaps(p) {
				t.Errorf("node %s: %s overlaps %s", f.Name, p, q)
			}
		}
		all = append(all, p)
		raw := string(m.etcd[f.Key()].Value)
		if strings.Contains(raw, f.PodCIDR) {
			t.Errorf("node %s: the old pod CIDR %s is still in the stored value (managedFields or last-applied)", f.Name, f.PodCIDR)
		}
	}
	if len(m.nodes) != len(sample.Nodes()) {
		t.Errorf("%d nodes, want %d", len(m.nodes), len(sample.Nodes()))
	}
}

func (m *migration) configMap(t *testing.T, key string) *corev1.ConfigMap {
	t.Helper()
	o, ok := m.objs[key]
	if !ok {
		t.Fatalf("%s missing", key)
	}
	cm, ok := o.Obj.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("%s is %s", key, o.GVK)
	}
	return cm
}

func (m *migration) checkConfigs(t *testing.T, dns string) {
	t.Helper()
	var cc state.ClusterConfiguration
	if err := sigyaml.Unmarshal([]byte(m.configMap(t, wellknown.KeyKubeadmConfig).Data["ClusterConfiguration"]), &cc); err != nil {
		t.Fatal(err)
	}
	if cc.Networking.ServiceSubnet != newServiceCIDR.String() || cc.Networking.PodSubnet != newPodCIDR.String() {
		t.Errorf("kubeadm-config networking: serviceSubnet %s, podSubnet %s", cc.Networking.ServiceSubnet, cc.Networking.PodSubnet)
	}
	var kc struct {
		ClusterDNS []string `json:"clusterDNS"`
	}
	if err := sigyaml.Unmarshal([]byte(m.configMap(t, wellknown.KeyKubeletConfig).Data["kubelet"]), &kc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kc.ClusterDNS, []string{dns}) {
		t.Errorf("kubelet-config clusterDNS %v, want [%s]", kc.ClusterDNS, dns)
	}
	var kp struct {
		ClusterCIDR string `json:"clusterCIDR"`
	}
	if err := sigyaml.Unmarshal([]byte(m.configMap(t, wellknown.KeyKubeProxy).Data["config.conf"]), &kp); err != nil {
		t.Fatal(err)
	}
	if kp.ClusterCIDR != newPodCIDR.String() {
		t.Errorf("kube-proxy clusterCIDR %s", kp.ClusterCIDR)
	}
	var nc struct {
		Network string `json:"Network"`
	}
	if err := json.Unmarshal([]byte(m.configMap(t, wellknown.FlannelConfigKeys[0]).Data["net-conf.json"]), &nc); err != nil {
		t.Fatal(err)
	}
	if nc.Network != newPodCIDR.String() {
		t.Errorf("kube-flannel-cfg Network %s", nc.Network)
	}
}

// checkUntouched asserts that every key no rule changed has the input's
// exact value and revision, and that changed objects keep their UID.
func (m *migration) checkUntouched(t *testing.T) {
	t.Helper()
	changed := map[string]string{}
	for o := range m.report.Objects.All() {
		changed[o.Key] = o.Action
	}
	n := 0
	for _, k := range m.in.keys() {
		in := m.in.Live[k]
		kv, ok := m.etcd[k]
		switch changed[k] {
		case "":
			n++
			if !ok {
				t.Errorf("%s: unchanged key missing after restore", k)
			} else if string(kv.Value) != string(in.KV.Value) || kv.ModRevision != in.KV.ModRevision ||
				kv.CreateRevision != in.KV.CreateRevision || kv.Version != in.KV.Version {
				t.Errorf("%s: unchanged key differs after restore (mod %d -> %d)", k, in.KV.ModRevision, kv.ModRevision)
			}
		case "replace":
			if !ok {
				t.Errorf("%s: replaced key missing after restore", k)
				continue
			}
			if kv.ModRevision != m.in.Current+1 || kv.Version != in.KV.Version+1 || kv.CreateRevision != in.KV.CreateRevision {
				t.Errorf("%s: replaced key has mod %d version %d create %d", k, kv.ModRevision, kv.Version, kv.CreateRevision)
			}
			before, err1 := apimeta.Accessor(decodeValue(t, m.c, k, in.KV.Value).Obj)
			after, err2 := apimeta.Accessor(m.objs[k].Obj)
			if err1 != nil || err2 != nil || before.GetUID() != after.GetUID() {
				t.Errorf("%s: UID changed or unreadable (%v, %v)", k, err1, err2)
			}
			if before.GetCreationTimestamp() != after.GetCreationTimestamp() {
				t.Errorf("%s: creationTimestamp changed", k)
			}
		case "delete":
			if ok {
				t.Errorf("%s: deleted key still in etcd", k)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d keys were left alone; the sample has far more unrelated objects", n)
	}
}

func (m *migration) leftoverResources() map[string]*leftovers.LeftoverGroup {
	out := map[string]*leftovers.LeftoverGroup{}
	for _, g := range m.left.Groups {
		out[g.Resource] = g
	}
	return out
}

// TestEndToEndSample migrates the sample (192.168.0.0/16 -> 172.24.0.0/16,
// 10.244.0.0/16 -> 10.55.0.0/16), restores the result with etcd's restore
// code (one member, default revision bump) and checks through a real etcd
// every promise of DESIGN.md decisions 8 to 11, 13 and 14.
// restoreAndServe restores a snapshot with etcd's own code into a new data
// dir and serves it with a real etcd.
func restoreAndServe(t *testing.T, path string) *etcdtest.Server {
	t.Helper()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(port)
	dataDir := filepath.Join(t.TempDir(), "m0.etcd")
	err = snapshot.Restore(context.Background(), snapshot.RestoreConfig{
		SnapshotPath: path, Name: "m0", DataDir: dataDir, PeerURLs: []string{peer},
		InitialClusterToken: "snapshift-e2e",
		RevisionBump:        snapshot.DefaultRevisionBump, MarkCompacted: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "m0", PeerURL: peer})
}

func TestEndToEndSample(t *testing.T) {
	t.Parallel()
	m := migrateSample(t, rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String()}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR.String()}})
	m.checkServices(t, nil)
	if got := m.svcs["kube-system/kube-dns"].Spec.ClusterIP; got != "172.24.0.10" {
		t.Errorf("kube-dns clusterIP %s, want 172.24.0.10", got)
	}
	m.checkNodes(t)
	m.checkConfigs(t, "172.24.0.10")
	m.checkUntouched(t)

	groups := m.leftoverResources()
	var res []string
	for r := range groups {
		res = append(res, r)
	}
	sort.Strings(res)
	// The Calico IPPool and IPAM objects moved with the pod range (the
	// calico rule): only what controllers recreate after the restart is left.
	want := []string{"endpoints", "endpointslices.discovery.k8s.io", "pods"}
	if !slices.Equal(res, want) {
		t.Errorf("leftover scan reports %v, want %v", res, want)
	}
	if g := groups["pods"]; g == nil || g.Keys < 6 {
		t.Errorf("leftover pods group %+v, want the pods with old pod IPs", g)
	}
	if slices.ContainsFunc(m.left.Ranges, func(r string) bool { return r != sample.ServiceCIDR && r != sample.PodCIDR }) || len(m.left.Ranges) != 2 {
		t.Errorf("leftover ranges %v", m.left.Ranges)
	}
}

// TestEndToEndSampleDNSBridge is the same migration with kube-dns exempt and
// a DNS bridge.
func TestEndToEndSampleDNSBridge(t *testing.T) {
	t.Parallel()
	m := migrateSample(t, rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String(), KeepServiceIPs: []string{"kube-system/kube-dns"}, DNSBridge: true}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR.String()}})
	v4 := m.checkServices(t, map[string]string{"kube-system/kube-dns": sample.DNSServiceIP})
	dns, bridge := m.svcs["kube-system/kube-dns"], m.svcs["kube-system/kube-dns-bridge"]
	if dns.Spec.ClusterIP != sample.DNSServiceIP {
		t.Errorf("kube-dns clusterIP %s, want it kept at %s", dns.Spec.ClusterIP, sample.DNSServiceIP)
	}
	if bridge == nil {
		t.Fatal("no kube-system/kube-dns-bridge Service")
	}
	if bridge.Spec.ClusterIP != "172.24.0.10" || !slices.Equal(bridge.Spec.ClusterIPs, []string{"172.24.0.10"}) {
		t.Errorf("bridge clusterIPs %v", bridge.Spec.ClusterIPs)
	}
	if jsonString(bridge.Spec.Selector) != jsonString(dns.Spec.Selector) || len(dns.Spec.Selector) == 0 {
		t.Errorf("bridge selector %v, kube-dns %v", bridge.Spec.Selector, dns.Spec.Selector)
	}
	if jsonString(bridge.Spec.Ports) != jsonString(dns.Spec.Ports) {
		t.Errorf("bridge ports %s, kube-dns %s", jsonString(bridge.Spec.Ports), jsonString(dns.Spec.Ports))
	}
	// Stamped from the input, not the clock: the newest Service's creation.
	var newest time.Time
	for k, svc := range m.svcs {
		if c := svc.CreationTimestamp.Time; k != "kube-system/kube-dns-bridge" && c.After(newest) {
			newest = c
		}
	}
	if bridge.UID == "" || bridge.UID == dns.UID || newest.IsZero() || !bridge.CreationTimestamp.Time.Equal(newest) {
		t.Errorf("bridge uid %q (kube-dns %q), created %s, want the newest Service's creation %s", bridge.UID, dns.UID, bridge.CreationTimestamp, newest)
	}
	if v4[netip.MustParseAddr("172.24.0.10")] != "kube-system/kube-dns-bridge" {
		t.Errorf("172.24.0.10 belongs to %q", v4[netip.MustParseAddr("172.24.0.10")])
	}
	// The exempt Service's IPAddress is kept as it was.
	k := wellknown.PrefixIPAddresses + sample.DNSServiceIP
	if kv, ok := m.etcd[k]; !ok || string(kv.Value) != string(m.in.Live[k].KV.Value) {
		t.Errorf("%s not kept byte for byte", k)
	}
	m.checkNodes(t)
	m.checkConfigs(t, "172.24.0.10")
	m.checkUntouched(t)

	groups := m.leftoverResources()
	for r, g := range groups {
		switch {
		case r == "pods" || r == "endpoints" || r == "endpointslices.discovery.k8s.io":
		case r == "ipaddresses.networking.k8s.io (kept on purpose)":
			// The exempt Service's own IPAddress.
			if !g.Intended || g.Keys != 1 || g.Examples[0].Key != wellknown.PrefixIPAddresses+sample.DNSServiceIP {
				t.Errorf("leftover %s: %+v", r, g)
			}
		case r == "services (kept on purpose)":
			if !g.Intended || g.Keys != 1 || g.Examples[0].Key != "/registry/services/specs/kube-system/kube-dns" {
				t.Errorf("leftover %s: %+v", r, g)
			}
		case r == "servicecidrs.networking.k8s.io (kept on purpose)":
			// The terminating ServiceCIDR that keeps kube-dns's address legal.
			if !g.Intended || g.Keys != 1 || g.Examples[0].Key != wellknown.PrefixServiceCIDRs+rules.KeptServiceCIDRName {
				t.Errorf("leftover %s: %+v", r, g)
			}
		case r == "configmaps (kept on purpose)" || r == "daemonsets.apps (kept on purpose)":
			// NodeLocal DNSCache still binds and names the kept kube-dns address.
			if !g.Intended || g.Keys != 1 || !strings.HasSuffix(g.Examples[0].Key, "/kube-system/node-local-dns") ||
				strings.Join(g.Examples[0].Addresses, ",") != sample.DNSServiceIP {
				t.Errorf("leftover %s: %+v", r, g)
			}
		default:
			t.Errorf("leftover group %q (%d keys, intended %v, e.g. %v): only exempt objects may keep old Service addresses, and those are reported as kept on purpose",
				r, g.Keys, g.Intended, g.Examples)
		}
	}
	if groups["services (kept on purpose)"] == nil {
		t.Error("the exempt kube-dns is not reported as kept on purpose")
	}
}

// TestEndToEndCustomPrefix: a cluster whose kube-apiserver ran with
// --etcd-prefix /kubernetes.io migrates exactly like the same cluster under
// /registry: the prefix is detected, every output key stays under it with
// the bytes the default-prefix run writes, and a real etcd serves it.
func TestEndToEndCustomPrefix(t *testing.T) {
	t.Parallel()
	const prefix = "/kubernetes.io/"
	dir := t.TempDir()
	prefixed := testfile.RewriteLiveKV(t, samplePath, filepath.Join(dir, "prefixed.db"), func(k string, v []byte) (string, []byte, error) {
		return strings.Replace(k, wellknown.DefaultPrefix, prefix, 1), v, nil
	})
	opts := rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String()},
		PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR.String()}}
	plainOut, prefOut := filepath.Join(dir, "plain-out.db"), filepath.Join(dir, "prefixed-out.db")
	plainRep, _, _, err := runRules(t, testfile.Copy(t, samplePath, dir), plainOut, opts)
	if err != nil {
		t.Fatal(err)
	}
	prefRep, _, scan, err := runRules(t, prefixed, prefOut, opts)
	if err != nil {
		t.Fatalf("migrating the /kubernetes.io/ copy: %v", err)
	}
	if prefRep.Input.EtcdPrefix != prefix || plainRep.Input.EtcdPrefix != wellknown.DefaultPrefix {
		t.Errorf("detected prefixes %q and %q", prefRep.Input.EtcdPrefix, plainRep.Input.EtcdPrefix)
	}
	if prefRep.Replaced != plainRep.Replaced || prefRep.Created != plainRep.Created || prefRep.Deleted != plainRep.Deleted || prefRep.Replaced == 0 {
		t.Errorf("prefixed run replaced/created/deleted %d/%d/%d, default-prefix run %d/%d/%d",
			prefRep.Replaced, prefRep.Created, prefRep.Deleted, plainRep.Replaced, plainRep.Created, plainRep.Deleted)
	}
	for o := range prefRep.Objects.All() {
		if !strings.HasPrefix(o.Key, prefix) {
			t.Errorf("report names %s, not a key under %s", o.Key, prefix)
		}
	}
	if len(scan.Report().Groups) == 0 {
		t.Error("the leftover scan found nothing under the custom prefix (pod IPs and endpoints are left behind)")
	}
	plain, pref := readState(t, plainOut), readState(t, prefOut)
	if len(plain.Live) != len(pref.Live) {
		t.Errorf("outputs hold %d and %d live keys", len(plain.Live), len(pref.Live))
	}
	for k, kv := range plain.Live {
		got, ok := pref.Live[strings.Replace(k, wellknown.DefaultPrefix, prefix, 1)]
		if !ok || !bytes.Equal(got.KV.Value, kv.KV.Value) || got.Rev != kv.Rev {
			t.Errorf("%s: the prefixed output differs (present %v)", k, ok)
		}
	}
	srv := restoreAndServe(t, prefOut)
	resp, err := srv.Client().Get(t.Context(), prefix+"services/specs/kube-system/kube-dns")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("kube-dns under %s: %v (%d keys)", prefix, err, len(resp.Kvs))
	}
	svc, ok := decodeValue(t, codec.New(), "kube-dns", resp.Kvs[0].Value).Obj.(*corev1.Service)
	if !ok || svc.Spec.ClusterIP != "172.24.0.10" {
		t.Errorf("restored kube-dns %+v, want clusterIP 172.24.0.10", svc)
	}
	if resp, err := srv.Client().Get(t.Context(), wellknown.DefaultPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("the restored member holds %v keys under %s (err %v), want none", resp, wellknown.DefaultPrefix, err)
	}
}

// TestKeptRangeServiceCIDR: a kept Service outside the new range gets a
// terminating ServiceCIDR over the old range when the cluster has
// ServiceCIDR objects, none on one without (where the plan says what the
// apiserver will warn about instead), and a second run on the output keeps
// the first run's.
func TestKeptRangeServiceCIDR(t *testing.T) {
	t.Parallel()
	keep := rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String(), KeepServiceIPs: []string{"kube-system/kube-dns"}}}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	_, plan, _, err := runRules(t, testfile.Copy(t, samplePath, dir), out, keep)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Service.KeptServiceCIDR != rules.KeptServiceCIDRName || len(plan.Service.KeptRanges) != 1 || plan.Service.KeptRanges[0] != oldServiceCIDR {
		t.Errorf("plan: kept ServiceCIDR %q over %v, want %s over %s", plan.Service.KeptServiceCIDR, plan.Service.KeptRanges, rules.KeptServiceCIDRName, oldServiceCIDR)
	}
	sc, ok := readState(t, out).Live[wellknown.PrefixServiceCIDRs+rules.KeptServiceCIDRName]
	if !ok {
		t.Fatal("no kept ServiceCIDR in the output")
	}
	obj, ok := decodeValue(t, codec.New(), "kept", sc.KV.Value).Obj.(*networkingv1.ServiceCIDR)
	if !ok || obj.DeletionTimestamp == nil || !slices.Equal(obj.Finalizers, []string{"networking.k8s.io/service-cidr-finalizer"}) ||
		!slices.Equal(obj.Spec.CIDRs, []string{oldServiceCIDR.String()}) || len(obj.Status.Conditions) != 1 || obj.Status.Conditions[0].Status != "False" {
		t.Errorf("kept ServiceCIDR %+v: want the old range, terminating, with the controller's finalizer and Ready=False", obj)
	}
	rep, _, _, err := runRules(t, out, filepath.Join(dir, "again.db"), keep)
	if err != nil || rep.Created != 0 || rep.Replaced != 0 {
		t.Errorf("a second run on the output: %v, %d created, %d replaced; want nothing to do", err, rep.Created, rep.Replaced)
	}

	bitmapOnly := testfile.RewriteLiveKV(t, samplePath, filepath.Join(dir, "bitmap.db"), func(k string, v []byte) (string, []byte, error) {
		return strings.Replace(k, wellknown.PrefixServiceCIDRs, "/elsewhere/servicecidrs/", 1), v, nil
	})
	rep, plan, _, err = runRules(t, bitmapOnly, "", keep)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(ruleCounts(rep)[rules.NameServiceCIDR].Notes, "\n")
	if plan.Service.KeptServiceCIDR != "" || !strings.Contains(notes, "ClusterIPOutOfRange") {
		t.Errorf("without ServiceCIDR objects: kept ServiceCIDR %q, notes:\n%s\nwant none, and a note on the repair loop's warnings", plan.Service.KeptServiceCIDR, notes)
	}
}
