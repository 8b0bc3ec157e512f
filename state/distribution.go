package state

// Which Kubernetes distribution wrote a snapshot, and the records of the
// ranges that only k3s and RKE2 keep. Facts, from the sources:
//   - k3s-io/k3s pkg/nodeconfig/nodeconfig.go: every node stores its argv
//     (config file flags merged, "--flag=value" split in two, secrets
//     masked) as the JSON list in annotation <program>.io/node-args, with
//     <program>.io/node-env and <program>.io/node-config-hash; it rewrites
//     them when the hash of args+env changes, i.e. at the first start with
//     new flags. argv[0] is the subcommand: "server" or "agent".
//   - RKE2 is k3s built with version.Program=rke2 (rancher/rke2
//     scripts/build-binary), so its annotations are rke2.io/node-args and
//     its keys rke2/apiaddresses.
//   - k3s's server flag defaults (`k3s server --help`, the same in RKE2's
//     server configuration reference): cluster CIDR 10.42.0.0/16, service
//     CIDR 10.43.0.0/16; cluster DNS defaults to the tenth address of each
//     service range (pkg/server/server.go, utilsnet.GetIndexedIP(svc, 10)).
//   - Outside /registry: /bootstrap/<hash of the token> (the encrypted
//     bootstrap data), <program>/apiaddresses, <program>/etcd/learnerProgress
//     (pkg/etcd/etcd.go).
//   - RKE2 injects global.clusterCIDR/serviceCIDR/clusterDNS into the
//     spec.set of HelmCharts annotated rke2.cattle.io/inject-cluster-config
//     (rancher/rke2 pkg/bootstrap/bootstrap.go, setChartValues).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/wellknown"
)

// Distribution names.
const (
	DistKubeadm = "kubeadm"
	DistK3s     = "k3s"
	DistRKE2    = "rke2"
	DistUnknown = "unknown"
)

// k3s and RKE2 records.
const (
	// PrefixBootstrap holds k3s/RKE2's bootstrap data, encrypted with the
	// server token.
	PrefixBootstrap = "/bootstrap/"
	// PrefixHelmCharts and PrefixHelmChartConfigs are helm-controller's
	// custom resources (helm.cattle.io/v1).
	PrefixHelmCharts       = wellknown.PrefixHelmCharts
	PrefixHelmChartConfigs = wellknown.PrefixHelmChartConfigs
	// PrefixAddons are k3s's deploy controller's Addons (k3s.cattle.io/v1).
	PrefixAddons = wellknown.PrefixK3sAddons
	// AnnotationInjectClusterConfig marks the HelmCharts RKE2 writes its
	// cluster values into.
	AnnotationInjectClusterConfig = "rke2.cattle.io/inject-cluster-config"
)

// k3s's defaults for the flags a server's node-args may leave out.
const (
	K3sDefaultClusterCIDR = "10.42.0.0/16"
	K3sDefaultServiceCIDR = "10.43.0.0/16"
)

// SourceNodeArgs is a range recorded in the k3s/RKE2 node-args annotation
// (or its default when the flag is absent); SourceHelmChart one in an RKE2
// HelmChart's injected cluster values.
// SourceK3sDefault is k3s's default for a flag no server's node-args
// gives: evidence of the old range, but no record a migration rewrites
// (after it the servers run with the flag set in their config files).
const (
	SourceNodeArgs   SourceKind = "node-args"
	SourceK3sDefault SourceKind = "k3s-default"
	SourceHelmChart  SourceKind = "helmchart"
)

// Distribution is what wrote the snapshot and the evidence.
type Distribution struct {
	Name    string   `json:"name"`
	FoundBy []string `json:"foundBy"`
	// Program is k3s's version.Program for k3s and RKE2 ("k3s", "rke2"):
	// the prefix of their annotations and keys.
	Program string `json:"program,omitempty"`
	// Servers and Agents are the nodes whose node-args say so.
	Servers []NodeArgs `json:"servers,omitempty"`
	Agents  []string   `json:"agents,omitempty"`
	// KeysOutsideRegistry are the k3s/RKE2 keys outside /registry.
	KeysOutsideRegistry []string `json:"keysOutsideRegistry,omitempty"`

	// byNodes: the Nodes' node-args annotations named the program (what
	// each server and agent ran with); other evidence (keys, HelmCharts)
	// is then listed but does not change it.
	byNodes bool
}

// IsK3sFamily reports whether d is k3s or RKE2.
func (d *Distribution) IsK3sFamily() bool {
	return d != nil && (d.Name == DistK3s || d.Name == DistRKE2)
}

// NodeArgsAnnotation is the program's node-args annotation.
func (d *Distribution) NodeArgsAnnotation() string { return d.Program + ".io/node-args" }

// APIAddressesKey is the program's list of apiserver addresses.
func (d *Distribution) APIAddressesKey() string { return d.Program + "/apiaddresses" }

// NodeArgs is the ranges one server's node-args give, with k3s's defaults
// for absent flags (listed in Defaulted).
type NodeArgs struct {
	Node        string   `json:"node"`
	ClusterCIDR string   `json:"clusterCIDR"`
	ServiceCIDR string   `json:"serviceCIDR"`
	ClusterDNS  string   `json:"clusterDNS"`
	Defaulted   []string `json:"defaulted,omitempty"`
}

// ParseNodeArgs reads the JSON argv of a node-args annotation: the
// subcommand and the ranges (the last occurrence of a repeated flag wins,
// as for k3s's CLI; StringSlice flags repeated are joined with commas).
func ParseNodeArgs(node, annotation string) (sub string, na NodeArgs, err error) {
	var argv []string
	if err := json.Unmarshal([]byte(annotation), &argv); err != nil {
		return "", na, fmt.Errorf("node %s: node-args annotation is not a JSON list of strings: %w", node, err)
	}
	na.Node = node
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		sub = argv[0]
	}
	vals := map[string][]string{}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch a {
		case "--cluster-cidr", "--service-cidr", "--cluster-dns":
			if i+1 < len(argv) {
				vals[a] = append(vals[a], argv[i+1])
				i++
			}
		}
	}
	get := func(flag, def string) string {
		if v := vals[flag]; len(v) > 0 {
			return strings.Join(v, ",")
		}
		na.Defaulted = append(na.Defaulted, flag)
		return def
	}
	na.ClusterCIDR = get("--cluster-cidr", K3sDefaultClusterCIDR)
	na.ServiceCIDR = get("--service-cidr", K3sDefaultServiceCIDR)
	dns, err := DefaultClusterDNS(na.ServiceCIDR)
	if err != nil {
		return "", na, fmt.Errorf("node %s: %w", node, err)
	}
	na.ClusterDNS = get("--cluster-dns", dns)
	return sub, na, nil
}

// DefaultClusterDNS is k3s's --cluster-dns default: the tenth address of
// each service range, comma-joined (pkg/server/server.go uses
// utilsnet.GetIndexedIP(svcCIDR, 10) for every range).
func DefaultClusterDNS(serviceCIDRs string) (string, error) {
	var out []string
	for _, c := range cidr.Split(serviceCIDRs) {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return "", fmt.Errorf("service CIDR %q: %w", c, err)
		}
		a := p.Masked().Addr()
		for range 10 {
			a = a.Next()
		}
		if !p.Contains(a) {
			return "", fmt.Errorf("service CIDR %s has no tenth address for the cluster DNS", p)
		}
		out = append(out, a.String())
	}
	return strings.Join(out, ","), nil
}

// DistributionListed are the prefixes DetectDistribution lists (for
// snapshot.IndexOptions.Named and transform.Lister): a rule whose Prepare
// detects the networks, the CNI or the distribution names them, or every
// detection walks the whole bucket once per prefix.
var DistributionListed = []string{PrefixBootstrap, "k3s/", "rke2/", PrefixHelmCharts, PrefixAddons}

// DetectDistribution finds who wrote the snapshot: kubeadm (its
// kubeadm-config), k3s or RKE2 (their node-args annotations, keys outside
// /registry, Addons and injected HelmCharts), or unknown.
func DetectDistribution(v *View) (*Distribution, error) {
	d := &Distribution{Name: DistUnknown}
	if len(present(v, wellknown.KeyKubeadmConfig)) > 0 { // its presence is enough: not decoded (it may be encrypted)
		d.Name = DistKubeadm
		d.FoundBy = append(d.FoundBy, "ConfigMap kube-system/kubeadm-config")
	}
	// Evidence that cannot be decrypted here is evidence unread, not an error.
	if err := detectNodeArgs(v, d); err != nil && !errors.Is(err, ErrEncrypted) {
		return nil, err
	}
	detectK3sKeys(v, d)
	if err := detectInjectedCharts(v, d); err != nil && !errors.Is(err, ErrEncrypted) {
		return nil, err
	}
	if d.Name == DistUnknown && len(v.Keys(PrefixAddons)) > 0 {
		d.Name, d.Program = DistK3s, "k3s"
		d.FoundBy = append(d.FoundBy, "k3s.cattle.io Addons")
	}
	return d, nil
}

func detectNodeArgs(v *View, d *Distribution) error {
	return v.Each(wellknown.PrefixNodes, func(o *Object) error {
		node, ok := o.Value.Obj.(*corev1.Node)
		if !ok {
			return nil
		}
		for _, prog := range []string{"rke2", "k3s"} {
			ann, ok := node.Annotations[prog+".io/node-args"]
			if !ok {
				continue
			}
			d.setK3s(prog, fmt.Sprintf("Node %s annotation %s.io/node-args", node.Name, prog))
			d.byNodes = true
			sub, na, err := ParseNodeArgs(node.Name, ann)
			if err != nil {
				return fmt.Errorf("%s: %w", o.Key, err)
			}
			if sub == "agent" {
				d.Agents = append(d.Agents, node.Name)
			} else {
				d.Servers = append(d.Servers, na)
			}
			break
		}
		return nil
	})
}

// setK3s records k3s-family evidence. The Nodes' node-args annotations
// decide (a k3s cluster may hold a HelmChart annotated for RKE2, copied
// from elsewhere): once they have named the program, other evidence is
// only listed. Among equals RKE2's wins over k3s's (RKE2 is k3s inside,
// and RKE2 evidence is never written by k3s).
func (d *Distribution) setK3s(program, why string) {
	name := DistK3s
	if program == "rke2" {
		name = DistRKE2
	}
	switch {
	case d.byNodes && !strings.HasPrefix(why, "Node "):
		// the Nodes have decided
	case d.Name != DistRKE2:
		d.Name, d.Program = name, program
	}
	if !slices.Contains(d.FoundBy, why) && len(d.FoundBy) < 8 {
		d.FoundBy = append(d.FoundBy, why)
	}
}

func detectK3sKeys(v *View, d *Distribution) {
	ix := v.Index()
	for _, p := range []string{PrefixBootstrap, "k3s/", "rke2/"} {
		for _, kr := range ix.LiveKeysWithPrefix(p) {
			d.KeysOutsideRegistry = append(d.KeysOutsideRegistry, kr.Key)
		}
	}
	sort.Strings(d.KeysOutsideRegistry)
	for _, k := range d.KeysOutsideRegistry {
		switch {
		case strings.HasPrefix(k, "rke2/"):
			d.setK3s("rke2", "key "+k)
		case strings.HasPrefix(k, "k3s/"):
			d.setK3s("k3s", "key "+k)
		}
	}
	if d.IsK3sFamily() {
		for _, k := range d.KeysOutsideRegistry {
			if strings.HasPrefix(k, PrefixBootstrap) {
				d.FoundBy = append(d.FoundBy, "key "+k+" (bootstrap data)")
				break
			}
		}
	}
}

func detectInjectedCharts(v *View, d *Distribution) error {
	return v.Each(PrefixHelmCharts, func(o *Object) error {
		u, ok := o.Value.Obj.(*unstructured.Unstructured)
		if ok && u.GetAnnotations()[AnnotationInjectClusterConfig] == "true" {
			d.setK3s("rke2", "HelmChart "+u.GetNamespace()+"/"+u.GetName()+" annotated "+AnnotationInjectClusterConfig)
		}
		return nil
	})
}

// detectK3sRanges adds the ranges the servers' node-args record (and the
// injected HelmChart values) as Sources. A k3s/RKE2 cluster has no
// kubeadm-config: these, the ServiceCIDR and the Nodes are its records.
func detectK3sRanges(v *View, n *Networks) error {
	d, err := DetectDistribution(v)
	if err != nil || !d.IsK3sFamily() {
		return err
	}
	ann := d.NodeArgsAnnotation()
	addGrouped(&n.ServiceCIDR, d.Servers, ann, "--service-cidr", func(a NodeArgs) string { return a.ServiceCIDR })
	addGrouped(&n.PodCIDR, d.Servers, ann, "--cluster-cidr", func(a NodeArgs) string { return a.ClusterCIDR })
	// An explicit --cluster-dns is a record; k3s's default (the tenth
	// address of the service range) is not, and is left out.
	if len(n.ClusterDNS) == 0 && len(d.Servers) > 0 && !slices.Contains(d.Servers[0].Defaulted, "--cluster-dns") {
		s := d.Servers[0]
		n.ClusterDNS, n.ClusterDNSSource = cidr.Split(s.ClusterDNS), ann+" --cluster-dns of server "+s.Node
	}
	return detectChartValues(v, n)
}

// addGrouped adds one Source per distinct value of a flag, naming the
// servers that record it and whether it is k3s's default.
func addGrouped(into *[]Source, servers []NodeArgs, ann, flag string, val func(NodeArgs) string) {
	byVal := map[string][]string{}
	var order []string
	for _, s := range servers {
		v := val(s)
		if slices.Contains(s.Defaulted, flag) {
			v += " (default)"
		}
		if _, ok := byVal[v]; !ok {
			order = append(order, v)
		}
		byVal[v] = append(byVal[v], s.Node)
	}
	for _, v := range order {
		cidrs, def := strings.CutSuffix(v, " (default)")
		what := fmt.Sprintf("%s %s of servers %s", ann, flag, strings.Join(byVal[v], ", "))
		if def {
			what = fmt.Sprintf("k3s default: no %s in %s of servers %s", flag, ann, strings.Join(byVal[v], ", "))
		}
		kind := SourceNodeArgs
		if def {
			kind = SourceK3sDefault
		}
		*into = append(*into, Source{kind, what, cidr.Split(cidrs)})
	}
}

// detectChartValues adds the cluster values RKE2 injected into HelmCharts.
func detectChartValues(v *View, n *Networks) error {
	return v.Each(PrefixHelmCharts, func(o *Object) error {
		u, ok := o.Value.Obj.(*unstructured.Unstructured)
		if !ok || u.GetAnnotations()[AnnotationInjectClusterConfig] != "true" {
			return nil
		}
		set, _, _ := unstructured.NestedMap(u.Object, "spec", "set")
		name := "HelmChart " + u.GetNamespace() + "/" + u.GetName()
		if s, ok := set["global.serviceCIDR"].(string); ok && s != "" {
			n.ServiceCIDR = append(n.ServiceCIDR, Source{SourceHelmChart, name + " spec.set global.serviceCIDR", cidr.Split(s)})
		}
		if s, ok := set["global.clusterCIDR"].(string); ok && s != "" {
			n.PodCIDR = append(n.PodCIDR, Source{SourceHelmChart, name + " spec.set global.clusterCIDR", cidr.Split(s)})
		}
		return nil
	})
}

// detectEmbeddedCNI names the CNI k3s and RKE2 run without the objects the
// upstream manifests create: k3s's flannel is built into the k3s binary (no
// ConfigMap, no DaemonSet; its nodes carry flannel's kube subnet manager
// annotations), RKE2's default Canal is the rke2-canal HelmChart.
func detectEmbeddedCNI(v *View) (*CNI, error) {
	if len(present(v, wellknown.FlannelConfigKeys...)) > 0 || len(present(v, wellknown.KeyCanalConfig, wellknown.KeyCanalDaemonSet)) > 0 {
		return nil, nil // the flannel and Canal detectors name it
	}
	d, err := DetectDistribution(v)
	if err != nil || !d.IsK3sFamily() {
		return nil, err
	}
	if d.Name == DistRKE2 {
		for _, hc := range cni.MustLookup(cni.Canal).HelmCharts {
			if ev := present(v, PrefixHelmCharts+hc.String()); len(ev) > 0 {
				return &CNI{Name: CNICanal, IPAM: IPAMHostLocal, Evidence: []string{"HelmChart " + hc.String() + " (RKE2's default CNI)"}}, nil
			}
		}
		return nil, nil
	}
	annotation := cni.MustLookup(cni.Flannel).NodeAnnotation
	n := 0
	err = v.Each(wellknown.PrefixNodes, func(o *Object) error {
		if node, ok := o.Value.Obj.(*corev1.Node); ok && node.Annotations[annotation] == "true" {
			n++
		}
		return nil
	})
	if err != nil || n == 0 {
		return nil, err
	}
	return &CNI{Name: CNIFlannel, IPAM: IPAMKubeSubnetManager,
		Evidence: []string{fmt.Sprintf("k3s's embedded flannel (%d Nodes annotated %s)", n, annotation)}}, nil
}
