package sample

// The k3s and RKE2 corpora: what a k3s (or RKE2) server writes into its embedded etcd, encoded as
// kube-apiserver stores it (built-in kinds as protobuf, custom resources as JSON), with the keys k3s
// keeps outside /registry. Facts, from the sources:
//   - node annotations as k3s-io/k3s pkg/nodeconfig writes them: <program>.io/node-args (JSON argv,
//     "--flag=value" split, secrets "********"), node-env (JSON map), node-config-hash (base32 of the
//     sha256 of args+env);
//   - CoreDNS's Service rendered from k3s's own template (internal/k3sfixtures), applied by k3s's deploy
//     controller through wrangler, whose apply keeps the applied object in objectset.rio.cattle.io/applied
//     (rancher/wrangler pkg/apply desiredset_compare.go: JSON, gzip, base64 without padding), and owned
//     by the Addon kube-system/coredns (k3s.cattle.io/v1);
//   - RKE2's charts: HelmCharts annotated rke2.cattle.io/inject-cluster-config with spec.set
//     global.clusterCIDR/serviceCIDR/clusterDNS (rancher/rke2 pkg/bootstrap), and a HelmChartConfig
//     whose valuesContent overrides the CNI's pool;
//   - /bootstrap/<12 hex> (salt:base64 of the AES-GCM bootstrap data), <program>/apiaddresses (JSON list
//     of host:port, json.NewEncoder: trailing newline), k3s/etcd/learnerProgress is not written by a
//     settled cluster.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/etcdtest"
	k3sfixtures "github.com/snapshift/snapshift/internal/k3sfixtures"
)

// The k3s corpus's ranges: k3s's defaults.
const (
	K3sServiceCIDR = "10.43.0.0/16"
	K3sPodCIDR     = "10.42.0.0/16"
	K3sClusterDNS  = "10.43.0.10"
)

// K3sNode is one node of the k3s corpus.
type K3sNode struct {
	Name, IP, PodCIDR string
	Args              []string // the argv pkg/nodeconfig records (subcommand first)
}

// K3sNodes are the corpus's nodes: two servers (the first with --cluster-init) and an agent.
func K3sNodes(program string) []K3sNode {
	return []K3sNode{
		{Name: "server-1", IP: "192.168.56.11", PodCIDR: "10.42.0.0/24", Args: []string{"server", "--cluster-init", "--token", "********", "--write-kubeconfig-mode", "0644"}},
		{Name: "server-2", IP: "192.168.56.12", PodCIDR: "10.42.1.0/24", Args: []string{"server", "--server", "https://192.168.56.11:6443", "--token", "********"}},
		{Name: "agent-1", IP: "192.168.56.21", PodCIDR: "10.42.2.0/24", Args: []string{"agent", "--server", "https://192.168.56.11:6443", "--token", "********"}},
	}
}

// K3sServices are the corpus's Services and their cluster IPs.
var K3sServices = []struct{ Namespace, Name, IP string }{
	{"default", "kubernetes", "10.43.0.1"},
	{"kube-system", "kube-dns", K3sClusterDNS},
	{"kube-system", "metrics-server", "10.43.155.37"},
	{"kube-system", "traefik", "10.43.88.140"},
	{"demo", "web", "10.43.201.9"},
}

// K3sBootstrapKey is the corpus's /bootstrap key (the first 12 hex digits of sha256 of the token).
const K3sBootstrapKey = "/bootstrap/2a5f07c1d93b"

// K3sBootstrapValue is its value: salt, ":", base64 of the (here random-looking) ciphertext.
var K3sBootstrapValue = []byte("aabbccddeeff0011:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5c, 0x13, 0xa7, 0x42}, 96)))

// K3s returns the corpus's keys for program "k3s" or "rke2", in write order.
func K3s(program string) ([]Entry, error) {
	b, err := newBuilder()
	if err != nil {
		return nil, err
	}
	b.systemNamespaces()
	b.namespace("demo", tApps, nil)
	b.k3sServiceCIDR()
	for _, n := range K3sNodes(program) {
		b.k3sNode(program, n)
	}
	for _, s := range K3sServices {
		if s.Name == "kube-dns" && program == "k3s" {
			b.k3sCoreDNS()
			continue
		}
		b.k3sService(s.Namespace, s.Name, s.IP, nil)
	}
	if program == "rke2" {
		b.rke2Charts()
	} else {
		b.k3sAddon("coredns", "/var/lib/rancher/k3s/server/manifests/coredns.yaml")
	}
	b.entries = append(b.entries,
		Entry{Key: K3sBootstrapKey, Value: K3sBootstrapValue},
		Entry{Key: program + "/apiaddresses", Value: []byte(`["192.168.56.11:6443","192.168.56.12:6443"]` + "\n")})
	return b.entries, b.err
}

func (b *builder) k3sServiceCIDR() {
	obj := &networkingv1.ServiceCIDR{TypeMeta: typeMeta("networking.k8s.io/v1", "ServiceCIDR"), ObjectMeta: objectMeta("ServiceCIDR", "", "kubernetes", tInit),
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{K3sServiceCIDR}}}
	obj.Finalizers = []string{"networking.k8s.io/service-cidr-finalizer"}
	b.add("/registry/servicecidrs/kubernetes", obj)
}

// k3sNode adds a Node with the annotations pkg/nodeconfig writes.
func (b *builder) k3sNode(program string, n K3sNode) {
	obj := &corev1.Node{TypeMeta: typeMeta("v1", "Node"), ObjectMeta: objectMeta("Node", "", n.Name, tInit)}
	args, _ := json.Marshal(n.Args)
	env, _ := json.Marshal(map[string]string{strings.ToUpper(program) + "_TOKEN": "********"})
	sum := sha256.Sum256([]byte(string(args) + string(env)))
	obj.Annotations = map[string]string{
		program + ".io/node-args":                      string(args),
		program + ".io/node-env":                       string(env),
		program + ".io/node-config-hash":               base32.StdEncoding.EncodeToString(sum[:]),
		"flannel.alpha.coreos.com/backend-type":        "vxlan",
		"flannel.alpha.coreos.com/kube-subnet-manager": "true",
		"flannel.alpha.coreos.com/public-ip":           n.IP,
	}
	obj.Labels = map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux"}
	if n.Args[0] == "server" {
		obj.Labels["node-role.kubernetes.io/control-plane"] = "true"
		obj.Labels["node-role.kubernetes.io/etcd"] = "true"
	}
	obj.Spec.PodCIDR, obj.Spec.PodCIDRs = n.PodCIDR, []string{n.PodCIDR}
	obj.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP}, {Type: corev1.NodeHostName, Address: n.Name}}
	b.add("/registry/minions/"+n.Name, obj)
}

// k3sService adds a Service at ip with its IPAddress.
func (b *builder) k3sService(namespace, name, ip string, svc *corev1.Service) {
	if svc == nil {
		svc = &corev1.Service{ObjectMeta: objectMeta("Service", namespace, name, tAddons)}
		svc.Spec.Ports = []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)}}
		svc.Spec.Type = corev1.ServiceTypeClusterIP
		svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
		single := corev1.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &single
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		svc.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	}
	svc.TypeMeta = typeMeta("v1", "Service")
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
	f := Service{Namespace: namespace, Name: name}
	b.add(IPAddressKey(ip), ipAddressObject(netip.MustParseAddr(ip), f, tAddons))
	b.add(f.Key(), svc)
}

func ptrTo[T any](v T) *T { return &v }

// The objectset metadata wrangler's apply gives the objects of k3s's Addon coredns.
var k3sCoreDNSOwner = map[string]string{
	"objectset.rio.cattle.io/id":              "",
	"objectset.rio.cattle.io/owner-gvk":       "k3s.cattle.io/v1, Kind=Addon",
	"objectset.rio.cattle.io/owner-name":      "coredns",
	"objectset.rio.cattle.io/owner-namespace": "kube-system",
}

const k3sCoreDNSHash = "bce283298811743a0386ab510f2f67ef74240c57"

// K3sCoreDNSDesired is the kube-dns Service k3s's deploy controller hands wrangler's apply: k3s's
// template rendered with clusterDNS, with the objectset owner annotations and hash label.
// WranglerApplied of it is the applied annotation wrangler writes.
func K3sCoreDNSDesired(clusterDNS string) (map[string]any, error) {
	var m map[string]any
	if err := sigyaml.Unmarshal([]byte(k3sfixtures.RenderCoreDNSService(clusterDNS)), &m); err != nil {
		return nil, fmt.Errorf("k3s CoreDNS template: %w", err)
	}
	meta := m["metadata"].(map[string]any)
	ann := meta["annotations"].(map[string]any)
	for k, v := range k3sCoreDNSOwner {
		ann[k] = v
	}
	meta["labels"].(map[string]any)["objectset.rio.cattle.io/hash"] = k3sCoreDNSHash
	return m, nil
}

// k3sCoreDNS adds the kube-dns Service as k3s's deploy controller applies it: rendered from k3s's
// template, with wrangler's applied annotation and objectset labels, owned by the Addon coredns.
func (b *builder) k3sCoreDNS() {
	m, err := K3sCoreDNSDesired(K3sClusterDNS)
	if err != nil {
		b.fail("%v", err)
		return
	}
	svc := &corev1.Service{}
	if err := sigyaml.UnmarshalStrict([]byte(k3sfixtures.RenderCoreDNSService(K3sClusterDNS)), svc); err != nil {
		b.fail("k3s CoreDNS template as a Service: %v", err)
		return
	}
	for k, v := range k3sCoreDNSOwner {
		svc.Annotations[k] = v
	}
	svc.Labels["objectset.rio.cattle.io/hash"] = k3sCoreDNSHash
	applied, err := WranglerApplied(m)
	if err != nil {
		b.fail("wrangler applied annotation: %v", err)
		return
	}
	svc.Annotations["objectset.rio.cattle.io/applied"] = applied
	svc.ObjectMeta = mergeMeta(objectMeta("Service", "kube-system", "kube-dns", tAddons), svc.ObjectMeta)
	svc.Spec.Type, svc.Spec.SessionAffinity = corev1.ServiceTypeClusterIP, corev1.ServiceAffinityNone
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	svc.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].TargetPort = intstr.FromInt32(svc.Spec.Ports[i].Port)
	}
	b.k3sService("kube-system", "kube-dns", K3sClusterDNS, svc)
}

func mergeMeta(base, from metav1.ObjectMeta) metav1.ObjectMeta {
	base.Labels, base.Annotations = from.Labels, from.Annotations
	return base
}

// WranglerApplied encodes obj as wrangler's apply stores it in objectset.rio.cattle.io/applied
// (rancher/wrangler pkg/apply desiredset_compare.go, serializeApplied and compressAndEncode):
// json.Marshal of the object (strings of more than 64 characters cut, as pruneValues does), gzip at
// the default level, base64 with the standard alphabet and no padding.
func WranglerApplied(obj map[string]any) (string, error) {
	doc, err := json.Marshal(prune(obj))
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(doc); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(buf.Bytes()), nil
}

// prune cuts strings longer than 64 characters, as wrangler's pruneValues does outside its known
// list keys (none of which this corpus has long values for).
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = prune(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prune(e)
		}
		return out
	case string:
		if len(x) > 64 {
			return x[:64]
		}
	}
	return v
}

// k3sAddon adds the Addon k3s's deploy controller records for a packaged manifest.
func (b *builder) k3sAddon(name, source string) {
	obj := map[string]any{
		"apiVersion": "k3s.cattle.io/v1", "kind": "Addon",
		"metadata": map[string]any{"name": name, "namespace": "kube-system", "uid": string(uid("Addon", "kube-system", name)),
			"generation": 1, "creationTimestamp": at(tAddons).UTC().Format(time.RFC3339)},
		"spec":   map[string]any{"source": source, "checksum": fmt.Sprintf("%x", sha256.Sum256([]byte(name)))},
		"status": map[string]any{},
	}
	b.addEntry(b.enc.customResource("/registry/k3s.cattle.io/addons/kube-system/"+name, obj))
}

// rke2Charts adds RKE2's CoreDNS and Canal charts with the cluster values RKE2 injects, and the
// user's HelmChartConfig overriding Canal's pool.
func (b *builder) rke2Charts() {
	set := map[string]any{
		"global.clusterCIDR": K3sPodCIDR, "global.clusterCIDRv4": K3sPodCIDR, "global.clusterCIDRv6": "",
		"global.clusterDNS": K3sClusterDNS, "global.clusterDomain": "cluster.local", "global.rke2DataDir": "/var/lib/rancher/rke2",
		"global.serviceCIDR": K3sServiceCIDR, "global.systemDefaultIngressClass": "ingress-nginx",
		"global.systemDefaultRegistry": "", "global.cattle.systemDefaultRegistry": "", "global.prime.enabled": "false",
	}
	for _, c := range []string{"rke2-coredns", "rke2-canal"} {
		spec := map[string]any{"chart": "https://%{KUBERNETES_API}%/static/charts/" + c + ".tgz", "bootstrap": true, "set": set}
		meta := map[string]any{"name": c, "namespace": "kube-system", "annotations": map[string]any{"rke2.cattle.io/inject-cluster-config": "true"}}
		desired := map[string]any{"apiVersion": "helm.cattle.io/v1", "kind": "HelmChart", "metadata": meta, "spec": spec}
		applied, err := WranglerApplied(desired)
		if err != nil {
			b.fail("wrangler applied annotation: %v", err)
			return
		}
		stored := map[string]any{"apiVersion": "helm.cattle.io/v1", "kind": "HelmChart", "spec": spec,
			"metadata": map[string]any{"name": c, "namespace": "kube-system", "uid": string(uid("HelmChart", "kube-system", c)), "generation": 1,
				"creationTimestamp": at(tAddons).UTC().Format(time.RFC3339),
				"annotations": map[string]any{"rke2.cattle.io/inject-cluster-config": "true", "objectset.rio.cattle.io/applied": applied,
					"objectset.rio.cattle.io/owner-gvk": "k3s.cattle.io/v1, Kind=Addon", "objectset.rio.cattle.io/owner-name": c,
					"objectset.rio.cattle.io/owner-namespace": "kube-system", "objectset.rio.cattle.io/id": ""}}}
		b.addEntry(b.enc.customResource("/registry/helm.cattle.io/helmcharts/kube-system/"+c, stored))
		b.k3sAddon(c, "/var/lib/rancher/rke2/server/manifests/"+c+".yaml")
	}
	hcc := map[string]any{"apiVersion": "helm.cattle.io/v1", "kind": "HelmChartConfig",
		"metadata": map[string]any{"name": "rke2-canal", "namespace": "kube-system", "uid": string(uid("HelmChartConfig", "kube-system", "rke2-canal")),
			"generation": 1, "creationTimestamp": at(tApps).UTC().Format(time.RFC3339)},
		"spec": map[string]any{"valuesContent": "# the operator's overrides\nflannel:\n  iface: \"eth1\"   # the private NIC\ncalico:\n  ipv4pool:\n    cidr: 10.42.0.0/16\n  vethuMTU: 1450\n"}}
	b.addEntry(b.enc.customResource("/registry/helm.cattle.io/helmchartconfigs/kube-system/rke2-canal", hcc))
}

// WriteK3s writes the corpus of program ("k3s" or "rke2") to a server, one put per key, as the
// apiserver and k3s would.
func WriteK3s(ctx context.Context, srv *etcdtest.Server, program string) error {
	entries, err := K3s(program)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, err := srv.Put(ctx, e.Key, e.Value); err != nil {
			return fmt.Errorf("sample: put %s: %w", e.Key, err)
		}
	}
	return nil
}
