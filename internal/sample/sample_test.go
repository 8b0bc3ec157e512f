package sample_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
)

// kindByPrefix maps each key prefix of the sample to the kind stored under it and whether it is
// namespaced. Every key must match exactly one prefix.
type layout struct {
	prefix     string
	kind       string
	namespaced bool
}

var kindByPrefix = []layout{
	{"/registry/namespaces/", "Namespace", false},
	{"/registry/services/specs/", "Service", true},
	{"/registry/services/endpoints/", "Endpoints", true},
	{"/registry/endpointslices/", "EndpointSlice", true},
	{"/registry/minions/", "Node", false},
	{"/registry/pods/", "Pod", true},
	{"/registry/deployments/", "Deployment", true},
	{"/registry/daemonsets/", "DaemonSet", true},
	{"/registry/configmaps/", "ConfigMap", true},
	{"/registry/secrets/", "Secret", true},
	{"/registry/serviceaccounts/", "ServiceAccount", true},
	{"/registry/leases/", "Lease", true},
	{"/registry/events/", "Event", true},
	{"/registry/ipaddresses/", "IPAddress", false},
	{"/registry/servicecidrs/", "ServiceCIDR", false},
	{"/registry/ranges/", "RangeAllocation", false},
	{"/registry/apiextensions.k8s.io/customresourcedefinitions/", "CustomResourceDefinition", false},
	{"/registry/apiregistration.k8s.io/apiservices/", "APIService", false},
	{"/registry/crd.projectcalico.org/ippools/", "IPPool", false},
	{"/registry/crd.projectcalico.org/ipamblocks/", "IPAMBlock", false},
	{"/registry/crd.projectcalico.org/blockaffinities/", "BlockAffinity", false},
	{"/registry/crd.projectcalico.org/ipamhandles/", "IPAMHandle", false},
}

func objects(t *testing.T) []sample.Entry {
	t.Helper()
	entries, err := sample.Objects()
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// allWritten returns the entries of Objects and every put of History.
func allWritten(t *testing.T) []sample.Entry {
	t.Helper()
	entries := objects(t)
	history, err := sample.History()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range history {
		if op.Type == sample.OpPut {
			entries = append(entries, op.Entry)
		}
	}
	return entries
}

// decoded is a stored value decoded by its encoding.
type decoded struct {
	kind, apiVersion, namespace, name string
	obj                               runtime.Object // protobuf values only
}

func decode(t *testing.T, e sample.Entry) decoded {
	t.Helper()
	if bytes.HasPrefix(e.Value, []byte("k8s\x00")) {
		s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
		obj, gvk, err := s.Decode(e.Value, nil, nil)
		if err != nil {
			t.Fatalf("%s: decode protobuf: %v", e.Key, err)
		}
		var again bytes.Buffer
		if err := s.Encode(obj, &again); err != nil {
			t.Fatalf("%s: re-encode: %v", e.Key, err)
		}
		switch oldWire := slices.Contains(sample.UntouchedSince124, e.Key); {
		case oldWire && bytes.Equal(again.Bytes(), e.Value):
			t.Errorf("%s: should carry 1.24's empty clusterName field, but re-encodes byte-identically", e.Key)
		case oldWire:
			// A current apiserver drops the removed field: the codec accepts
			// exactly that difference.
			if err := codec.New().CheckRoundTrip(e.Value); err != nil {
				t.Errorf("%s: %v", e.Key, err)
			}
		case !bytes.Equal(again.Bytes(), e.Value):
			t.Errorf("%s: decode+encode is not byte-identical", e.Key)
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		if m.GetResourceVersion() != "" || m.GetSelfLink() != "" {
			t.Errorf("%s: resourceVersion/selfLink must not be stored", e.Key)
		}
		return decoded{kind: gvk.Kind, apiVersion: gvk.GroupVersion().String(), namespace: m.GetNamespace(), name: m.GetName(), obj: obj}
	}
	if !bytes.HasSuffix(e.Value, []byte("}\n")) {
		t.Fatalf("%s: neither protobuf nor JSON with a trailing newline: %q", e.Key, e.Value[:min(len(e.Value), 40)])
	}
	var v struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(e.Value, &v); err != nil {
		t.Fatalf("%s: decode JSON: %v", e.Key, err)
	}
	return decoded{kind: v.Kind, apiVersion: v.APIVersion, namespace: v.Metadata.Namespace, name: v.Metadata.Name}
}

func TestEveryValueDecodesUnderItsKey(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range objects(t) {
		if seen[e.Key] {
			t.Errorf("%s written twice by Objects", e.Key)
		}
		seen[e.Key] = true
	}
	for _, e := range allWritten(t) {
		d := decode(t, e)
		i := slices.IndexFunc(kindByPrefix, func(l layout) bool { return strings.HasPrefix(e.Key, l.prefix) })
		if i < 0 {
			t.Errorf("%s: key outside the known layout", e.Key)
			continue
		}
		want := kindByPrefix[i]
		if d.kind != want.kind {
			t.Errorf("%s: stores a %s, want %s", e.Key, d.kind, want.kind)
		}
		rest := strings.TrimPrefix(e.Key, want.prefix)
		switch {
		case want.kind == "RangeAllocation":
			// The allocator's objects have no name; the key names the range.
			if d.name != "" || (rest != "serviceips" && rest != "servicenodeports") {
				t.Errorf("%s: unexpected range allocation %q", e.Key, d.name)
			}
		case want.namespaced:
			if rest != d.namespace+"/"+d.name {
				t.Errorf("%s: object is %s/%s", e.Key, d.namespace, d.name)
			}
		default:
			if rest != d.name || d.namespace != "" {
				t.Errorf("%s: object is %q/%q", e.Key, d.namespace, d.name)
			}
		}
		if e.LeaseTTL != 0 && want.kind != "Event" {
			t.Errorf("%s: only Events are leased", e.Key)
		}
	}
}

func TestStoredVersions(t *testing.T) {
	want := map[string]string{
		"IPAddress":                "networking.k8s.io/v1",
		"ServiceCIDR":              "networking.k8s.io/v1",
		"EndpointSlice":            "discovery.k8s.io/v1",
		"Lease":                    "coordination.k8s.io/v1",
		"Deployment":               "apps/v1",
		"CustomResourceDefinition": "apiextensions.k8s.io/v1beta1",
		"APIService":               "apiregistration.k8s.io/v1",
		"IPPool":                   "crd.projectcalico.org/v1",
		"IPAMBlock":                "crd.projectcalico.org/v1",
		"BlockAffinity":            "crd.projectcalico.org/v1",
		"IPAMHandle":               "crd.projectcalico.org/v1",
		"Service":                  "v1",
	}
	for _, e := range objects(t) {
		d := decode(t, e)
		if v, ok := want[d.kind]; ok && d.apiVersion != v {
			t.Errorf("%s: stored as %s, want %s", e.Key, d.apiVersion, v)
		}
	}
}

// byKey decodes the protobuf objects of Objects by key.
func byKey(t *testing.T) map[string]runtime.Object {
	t.Helper()
	out := map[string]runtime.Object{}
	for _, e := range objects(t) {
		if d := decode(t, e); d.obj != nil {
			out[e.Key] = d.obj
		}
	}
	return out
}

func TestServicesMatchTheFacts(t *testing.T) {
	objs := byKey(t)
	for _, f := range sample.Services() {
		svc, ok := objs[f.Key()].(*corev1.Service)
		if !ok {
			t.Fatalf("%s: no Service", f.Key())
		}
		if svc.Spec.Type != f.Type || !slices.Equal(svc.Spec.ClusterIPs, f.ClusterIPs) {
			t.Errorf("%s: type %s clusterIPs %v, want %s %v", f.Key(), svc.Spec.Type, svc.Spec.ClusterIPs, f.Type, f.ClusterIPs)
		}
		if len(f.ClusterIPs) > 0 && svc.Spec.ClusterIP != f.ClusterIPs[0] {
			t.Errorf("%s: clusterIP %s is not clusterIPs[0]", f.Key(), svc.Spec.ClusterIP)
		}
		if len(svc.Spec.IPFamilies) != len(f.ClusterIPs) {
			t.Errorf("%s: ipFamilies %v for clusterIPs %v", f.Key(), svc.Spec.IPFamilies, f.ClusterIPs)
		}
		var nodePorts []int32
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				nodePorts = append(nodePorts, p.NodePort)
			}
		}
		if !slices.Equal(nodePorts, f.NodePorts) {
			t.Errorf("%s: node ports %v, want %v", f.Key(), nodePorts, f.NodePorts)
		}
	}
	kubernetes := objs["/registry/services/specs/default/kubernetes"].(*corev1.Service)
	dns := objs["/registry/services/specs/kube-system/kube-dns"].(*corev1.Service)
	if kubernetes.Spec.ClusterIP != sample.KubernetesServiceIP || dns.Spec.ClusterIP != sample.DNSServiceIP {
		t.Errorf("kubernetes %s, kube-dns %s", kubernetes.Spec.ClusterIP, dns.Spec.ClusterIP)
	}
	web := objs["/registry/services/specs/demo/web"].(*corev1.Service)
	if !strings.Contains(web.Annotations[corev1.LastAppliedConfigAnnotation], `"clusterIP":"`+web.Spec.ClusterIP+`"`) {
		t.Errorf("demo/web: last-applied-configuration does not carry the clusterIP")
	}
}

func TestServiceIPBitmap(t *testing.T) {
	// The example of the reference: 10.96.0.1 and 10.96.0.10 in 10.96.0.0/12 give 02 01.
	got, err := sample.ServiceIPBitmap(netip.MustParsePrefix("10.96.0.0/12"),
		[]netip.Addr{netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.96.0.10")})
	if err != nil || !bytes.Equal(got, []byte{0x02, 0x01}) {
		t.Errorf("bitmap = %x, %v; want 0201", got, err)
	}
	for _, ip := range []string{"10.96.0.0", "10.111.255.255", "10.112.0.1"} {
		if _, err := sample.ServiceIPBitmap(netip.MustParsePrefix("10.96.0.0/12"), []netip.Addr{netip.MustParseAddr(ip)}); err == nil {
			t.Errorf("%s: want an error (network, broadcast or outside)", ip)
		}
	}
}

func TestAllocatorStateMatchesServices(t *testing.T) {
	objs := byKey(t)
	cidr := netip.MustParsePrefix(sample.ServiceCIDR)
	want := map[netip.Addr]sample.Service{}
	var ports []int32
	for _, s := range sample.Services() {
		for _, ip := range s.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				if !cidr.Contains(a) {
					t.Errorf("%s/%s: %s outside %s", s.Namespace, s.Name, a, cidr)
				}
				if _, dup := want[a]; dup {
					t.Errorf("%s allocated twice", a)
				}
				want[a] = s
			}
		}
		ports = append(ports, s.NodePorts...)
	}

	ranges, ok := objs[sample.ServiceIPRangeKey].(*corev1.RangeAllocation)
	if !ok {
		t.Fatalf("%s missing", sample.ServiceIPRangeKey)
	}
	if ranges.Range != sample.ServiceCIDR {
		t.Errorf("range %q, want %q", ranges.Range, sample.ServiceCIDR)
	}
	bits := new(big.Int).SetBytes(ranges.Data)
	base := new(big.Int).SetBytes(cidr.Addr().AsSlice())
	set := map[netip.Addr]bool{}
	for i := 0; i < bits.BitLen(); i++ {
		if bits.Bit(i) == 1 {
			ip := new(big.Int).Add(base, big.NewInt(int64(i)+1))
			a, _ := netip.AddrFromSlice(ip.FillBytes(make([]byte, 4)))
			set[a] = true
		}
	}
	for a := range want {
		if !set[a] {
			t.Errorf("bitmap misses %s", a)
		}
	}
	for a := range set {
		if _, ok := want[a]; !ok {
			t.Errorf("bitmap has %s, which no Service uses", a)
		}
	}
	if !set[netip.MustParseAddr("192.168.255.254")] {
		t.Error("the last address of the range should be allocated (metrics-server)")
	}

	np := objs[sample.NodePortRangeKey].(*corev1.RangeAllocation)
	if np.Range != sample.NodePortRange || !bytes.Equal(np.Data, sample.NodePortBitmap(sample.NodePortBase, ports)) {
		t.Errorf("node port range %q data %x", np.Range, np.Data)
	}

	var ipAddresses []string
	for key, obj := range objs {
		ipa, ok := obj.(*networkingv1.IPAddress)
		if !ok {
			continue
		}
		ipAddresses = append(ipAddresses, key)
		a := netip.MustParseAddr(ipa.Name)
		s, ok := want[a]
		if !ok {
			t.Errorf("%s: no Service has this IP", key)
			continue
		}
		ref := ipa.Spec.ParentRef
		if ref == nil || ref.Group != "" || ref.Resource != "services" || ref.Namespace != s.Namespace || ref.Name != s.Name {
			t.Errorf("%s: parentRef %+v, want services %s/%s", key, ref, s.Namespace, s.Name)
		}
		if ipa.Labels[networkingv1.LabelManagedBy] != "ipallocator.k8s.io" || ipa.Labels[networkingv1.LabelIPAddressFamily] != "IPv4" {
			t.Errorf("%s: labels %v", key, ipa.Labels)
		}
	}
	if len(ipAddresses) != len(want) {
		t.Errorf("%d IPAddress objects for %d service IPs", len(ipAddresses), len(want))
	}

	sc := objs["/registry/servicecidrs/kubernetes"].(*networkingv1.ServiceCIDR)
	if !slices.Equal(sc.Spec.CIDRs, []string{sample.ServiceCIDR}) || !slices.Contains(sc.Finalizers, "networking.k8s.io/service-cidr-finalizer") ||
		len(sc.Status.Conditions) != 1 || sc.Status.Conditions[0].Type != "Ready" || sc.Status.Conditions[0].Status != "True" {
		t.Errorf("ServiceCIDR kubernetes: %+v", sc)
	}
}

func TestNodeCIDRs(t *testing.T) {
	objs := byKey(t)
	podNet := netip.MustParsePrefix(sample.PodCIDR)
	var seen []netip.Prefix
	for _, f := range sample.Nodes() {
		n, ok := objs[f.Key()].(*corev1.Node)
		if !ok {
			t.Fatalf("%s missing", f.Key())
		}
		if n.Spec.PodCIDR != f.PodCIDR || !slices.Equal(n.Spec.PodCIDRs, []string{f.PodCIDR}) {
			t.Errorf("%s: podCIDR %s podCIDRs %v, want %s", f.Name, n.Spec.PodCIDR, n.Spec.PodCIDRs, f.PodCIDR)
		}
		p := netip.MustParsePrefix(f.PodCIDR)
		if p != p.Masked() || !podNet.Contains(p.Addr()) || p.Bits() < podNet.Bits() {
			t.Errorf("%s: %s is not a network inside %s", f.Name, p, podNet)
		}
		for _, q := range seen {
			if p.Overlaps(q) {
				t.Errorf("%s: %s overlaps %s", f.Name, p, q)
			}
		}
		seen = append(seen, p)
		if ip := n.Annotations["flannel.alpha.coreos.com/public-ip"]; ip != f.InternalIP || podNet.Contains(netip.MustParseAddr(ip)) {
			t.Errorf("%s: flannel public-ip %q, want the host address %s", f.Name, ip, f.InternalIP)
		}
	}
	var masks []int
	for _, p := range seen {
		masks = append(masks, p.Bits())
	}
	slices.Sort(masks)
	if !slices.Equal(masks, []int{21, 24, 24, 28}) {
		t.Errorf("mask sizes %v, want /21, /24, /24 and /28", masks)
	}

	// Pod IPs are inside their node's range, except host-network Pods, which use the node address.
	nodeOf := map[string]sample.Node{}
	for _, f := range sample.Nodes() {
		nodeOf[f.Name] = f
	}
	for key, obj := range objs {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		f := nodeOf[p.Spec.NodeName]
		switch {
		case p.Spec.HostNetwork:
			if p.Status.PodIP != f.InternalIP {
				t.Errorf("%s: host-network pod IP %s, want %s", key, p.Status.PodIP, f.InternalIP)
			}
		case !netip.MustParsePrefix(f.PodCIDR).Contains(netip.MustParseAddr(p.Status.PodIP)):
			t.Errorf("%s: pod IP %s outside %s's %s", key, p.Status.PodIP, f.Name, f.PodCIDR)
		}
		if p.Status.HostIP != f.InternalIP || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP {
			t.Errorf("%s: hostIP %s podIPs %v", key, p.Status.HostIP, p.Status.PodIPs)
		}
	}
}

func TestConfigMapsCarryTheNetworks(t *testing.T) {
	objs := byKey(t)
	data := func(key, field string) string {
		cm, ok := objs["/registry/configmaps/"+key].(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("%s missing", key)
		}
		v, ok := cm.Data[field]
		if !ok {
			t.Fatalf("%s has no %s", key, field)
		}
		return v
	}
	yamlDoc := func(key, field string) map[string]any {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(data(key, field)), &m); err != nil {
			t.Fatalf("%s %s: %v", key, field, err)
		}
		return m
	}

	kubeadm := yamlDoc("kube-system/kubeadm-config", "ClusterConfiguration")
	netw := kubeadm["networking"].(map[string]any)
	if kubeadm["apiVersion"] != "kubeadm.k8s.io/v1beta4" || netw["serviceSubnet"] != sample.ServiceCIDR ||
		netw["podSubnet"] != sample.PodCIDR || netw["dnsDomain"] != sample.DNSDomain {
		t.Errorf("kubeadm-config: %v", kubeadm)
	}
	kubelet := yamlDoc("kube-system/kubelet-config", "kubelet")
	if kubelet["kind"] != "KubeletConfiguration" || !slices.Equal(kubelet["clusterDNS"].([]any), []any{sample.DNSServiceIP}) {
		t.Errorf("kubelet-config clusterDNS: %v", kubelet["clusterDNS"])
	}
	proxy := yamlDoc("kube-system/kube-proxy", "config.conf")
	if proxy["kind"] != "KubeProxyConfiguration" || proxy["clusterCIDR"] != sample.PodCIDR {
		t.Errorf("kube-proxy clusterCIDR: %v", proxy["clusterCIDR"])
	}
	yamlDoc("kube-system/kube-proxy", "kubeconfig.conf")
	yamlDoc("kube-public/cluster-info", "kubeconfig")
	var netConf struct {
		Network        string
		EnableNFTables bool
		Backend        struct{ Type string }
	}
	if err := json.Unmarshal([]byte(data("kube-flannel/kube-flannel-cfg", "net-conf.json")), &netConf); err != nil {
		t.Fatal(err)
	}
	if netConf.Network != sample.PodCIDR || netConf.Backend.Type != "vxlan" {
		t.Errorf("net-conf.json: %+v", netConf)
	}
	var cni map[string]any
	if err := json.Unmarshal([]byte(data("kube-flannel/kube-flannel-cfg", "cni-conf.json")), &cni); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(data("kube-system/coredns", "Corefile"), "kubernetes cluster.local") {
		t.Error("Corefile does not serve cluster.local")
	}
	if !strings.Contains(data("kube-system/kube-root-ca.crt", "ca.crt"), "BEGIN CERTIFICATE") {
		t.Error("kube-root-ca.crt has no certificate")
	}
}

func TestSecrets(t *testing.T) {
	objs := byKey(t)
	var tokens, bootstrap int
	for key, obj := range objs {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			continue
		}
		switch s.Type {
		case corev1.SecretTypeServiceAccountToken:
			tokens++
			sa, ok := objs["/registry/serviceaccounts/"+s.Namespace+"/"+s.Annotations[corev1.ServiceAccountNameKey]].(*corev1.ServiceAccount)
			if !ok || string(sa.UID) != s.Annotations[corev1.ServiceAccountUIDKey] {
				t.Errorf("%s: its ServiceAccount is missing or has another UID", key)
			}
			if len(s.Data["token"]) == 0 || string(s.Data["namespace"]) != s.Namespace || len(s.Data["ca.crt"]) == 0 {
				t.Errorf("%s: data keys %v", key, s.Data)
			}
		case corev1.SecretTypeBootstrapToken:
			bootstrap++
			if s.Namespace != "kube-system" || s.Name != "bootstrap-token-"+string(s.Data["token-id"]) {
				t.Errorf("%s: bootstrap token misnamed", key)
			}
		}
	}
	if tokens != 2 || bootstrap != 1 {
		t.Errorf("%d legacy token Secrets and %d bootstrap tokens, want 2 and 1", tokens, bootstrap)
	}

	// Every value of SecretValues is really stored somewhere, and the ConfigMap password only lives
	// in the history.
	written := allWritten(t)
	live, err := sample.Live()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sample.SecretValues() {
		if !slices.ContainsFunc(written, func(e sample.Entry) bool { return bytes.Contains(e.Value, []byte(v)) }) {
			t.Errorf("secret value %q is not stored anywhere", v)
		}
	}
	history := sample.SecretValues()[len(sample.SecretValues())-1]
	if slices.ContainsFunc(live, func(e sample.Entry) bool { return bytes.Contains(e.Value, []byte(history)) }) {
		t.Errorf("%q should only be in old revisions", history)
	}
}

func TestWriteAndSnapshot(t *testing.T) {
	ctx := t.Context()
	srv := etcdtest.StartT(t)
	res, err := sample.Write(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sample.Live()
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := srv.LiveKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []sample.Entry
	for _, kv := range kvs {
		if string(kv.Key) == sample.CompactRevKey {
			if string(kv.Value) != res.CompactRevValue || kv.Version != 2 || res.CompactRevValue != "0" && res.CompactedAt == 0 {
				t.Errorf("%s = %q version %d (result %+v)", kv.Key, kv.Value, kv.Version, res)
			}
			continue
		}
		got = append(got, sample.Entry{Key: string(kv.Key), Value: kv.Value})
		if (kv.Lease != 0) != strings.HasPrefix(string(kv.Key), "/registry/events/") {
			t.Errorf("%s: lease %d", kv.Key, kv.Lease)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d live keys, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Key != want[i].Key || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Errorf("live key %d: %s, want %s (or a different value)", i, got[i].Key, want[i].Key)
		}
	}
	if res.CompactedAt == 0 || res.Deletes != 3 {
		t.Fatalf("result %+v: want a compaction and 3 deletes", res)
	}

	// History after the compaction is still readable; before it, it is gone.
	found := false
	for rev := res.Revision; rev > res.CompactedAt && !found; rev-- {
		old, err := srv.Client().Get(ctx, "/registry/services/specs/demo/temp-debug", clientv3.WithRev(rev))
		if err != nil {
			t.Fatal(err)
		}
		found = len(old.Kvs) == 1
	}
	if !found {
		t.Error("the deleted Service should be readable at an older revision")
	}
	if _, err := srv.Client().Get(ctx, "/registry/configmaps/demo/app-settings", clientv3.WithRev(res.CompactedAt-1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read below the compaction: err %v, want %v", err, rpctypes.ErrCompacted)
	}

	path := filepath.Join(t.TempDir(), "sample.db")
	if err := srv.SaveSnapshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size()%512 != 32 {
		t.Errorf("snapshot size %d", fi.Size())
	}
}
