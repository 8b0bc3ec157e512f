package state

// Which CNI a snapshot's cluster runs, and where its IPAM keeps pod
// addresses: read from the ConfigMaps, DaemonSets and custom resources each
// CNI's manifests create. Rules use it to refuse a pod-CIDR move that would
// leave IPAM state behind; inspect and plan show it. What each CNI's
// objects are is package cni's table; the IPAM modes are read here.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/wellknown"
)

// The CNIs Detect names (package cni's names).
const (
	CNIFlannel = cni.Flannel
	CNICanal   = cni.Canal
	CNICalico  = cni.Calico
	CNICilium  = cni.Cilium
	CNIWeave   = cni.Weave
)

// IPAM modes Detect names (besides a Cilium mode it does not know, which is
// shown as Cilium calls it).
const (
	IPAMKubeSubnetManager = "kube subnet manager" // flannel: node.spec.podCIDR
	IPAMHostLocal         = "host-local"          // the CNI plugin on node.spec.podCIDR
	IPAMCalico            = "calico-ipam"
	IPAMClusterPool       = "cluster-pool"
	IPAMKubernetes        = "kubernetes"
	IPAMMultiPool         = "multi-pool"
	IPAMWeave             = "weave"
)

// CNIListed are the prefixes DetectCNI lists (for snapshot.IndexOptions.Named
// and transform.Lister): every CNI's IPAM and marker resources, and the
// DaemonSets.
var CNIListed = cniListed()

func cniListed() []string {
	var out []string
	for _, c := range cni.All() {
		for _, r := range slices.Concat(c.IPAM, c.Markers) {
			out = append(out, wellknown.Prefix(r))
		}
	}
	return append(out, wellknown.PrefixDaemonSets)
}

// CNIObjects counts one kind of IPAM object a CNI keeps in etcd.
type CNIObjects struct {
	Resource string `json:"resource"`
	Count    int    `json:"count"`
}

// CNI is one CNI found in the snapshot.
type CNI struct {
	// Name is one of the CNI* constants.
	Name string `json:"name"`
	// IPAM is the address management mode (IPAM* constants, or Cilium's own
	// name for a mode this build does not know); "" when nothing says.
	IPAM string `json:"ipam,omitempty"`
	// Evidence names the objects it was found by.
	Evidence []string `json:"evidence"`
	// State counts the IPAM objects it keeps in etcd.
	State []CNIObjects `json:"state,omitempty"`
	// HoldsPodAddresses is true when those objects record pod ranges or
	// addresses of their own, which moving the Nodes' podCIDRs does not move.
	HoldsPodAddresses bool `json:"holdsPodAddresses"`
	// Note says what the detection concluded, in a sentence.
	Note string `json:"note,omitempty"`
}

// StateString lists the IPAM objects, e.g. "3 ciliumnodes.cilium.io".
func (c CNI) StateString() string {
	var s []string
	for _, o := range c.State {
		s = append(s, fmt.Sprintf("%d %s", o.Count, o.Resource))
	}
	return strings.Join(s, ", ")
}

// String is the CNI as one line: "cilium (cluster-pool IPAM; 3 ciliumnodes.cilium.io)".
func (c CNI) String() string {
	var in []string
	if c.IPAM != "" {
		in = append(in, c.IPAM+" IPAM")
	}
	if s := c.StateString(); s != "" {
		in = append(in, s)
	}
	out := c.Name
	if len(in) > 0 {
		out += " (" + strings.Join(in, "; ") + ")"
	}
	if c.Note != "" {
		out += ": " + c.Note
	}
	return out
}

// cniDetectors read each CNI of package cni's table, by name: the objects
// are the table's, what they say about the IPAM mode is read here.
var cniDetectors = map[string]func(*View, cni.CNI) (*CNI, error){
	cni.Flannel: detectFlannelCNI,
	cni.Canal:   detectCanal,
	cni.Calico:  detectCalico,
	cni.Cilium:  detectCilium,
	cni.Weave:   detectWeave,
}

// DetectCNI names every CNI the snapshot shows, in the table's order
// (flannel, Canal, Calico, Cilium, Weave), the CNI k3s or RKE2 embeds
// right after Canal. An empty list means none was recognised. A CNI of the
// table without a detector is an error (TestEveryCNIDetected holds the
// two together).
func DetectCNI(ctx context.Context, v *View) ([]CNI, error) {
	var out []CNI
	for _, row := range cni.All() {
		d, ok := cniDetectors[row.Name]
		if !ok {
			return nil, fmt.Errorf("state: no detection of CNI %q (package cni's table)", row.Name)
		}
		detect := []func(*View) (*CNI, error){func(v *View) (*CNI, error) { return d(v, row) }}
		if row.Name == cni.Canal {
			// k3s's flannel and RKE2's Canal, when neither the flannel nor
			// the Canal detector found their manifests' objects.
			detect = append(detect, detectEmbeddedCNI)
		}
		for _, d := range detect {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			c, err := d(v)
			if err != nil {
				return nil, err
			}
			if c != nil {
				out = append(out, *c)
			}
		}
	}
	return out, nil
}

// cniEvidence names the CNI's ConfigMaps, DaemonSets (by prefix where the
// table says so) and marker resources that the snapshot holds, in that
// order.
func cniEvidence(v *View, row cni.CNI) []string {
	ev := present(v, wellknown.CNIKeys("configmaps", row.ConfigMaps)...)
	ds := wellknown.CNIKeys("daemonsets", row.DaemonSets)
	if row.DaemonSetPrefix {
		ev = append(ev, presentPrefix(v, ds...)...)
	} else {
		ev = append(ev, present(v, ds...)...)
	}
	for _, m := range row.Markers {
		if len(v.Keys(wellknown.Prefix(m))) > 0 {
			ev = append(ev, m)
		}
	}
	return ev
}

// cniState counts the CNI's IPAM objects, each resource that has any.
func cniState(v *View, row cni.CNI) []CNIObjects {
	var out []CNIObjects
	for _, r := range row.IPAM {
		if n, ok := count(v, r, wellknown.Prefix(r)); ok {
			out = append(out, n)
		}
	}
	return out
}

// present returns the display names of the keys that are live.
func present(v *View, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if _, ok, err := v.Raw(k); err == nil && ok {
			out = append(out, displayKey(k))
		}
	}
	return out
}

// presentPrefix is present for key prefixes (flannel's DaemonSet had
// -amd64 style names).
func presentPrefix(v *View, prefixes ...string) []string {
	var out []string
	for _, p := range prefixes {
		for _, kr := range v.Keys(p) {
			out = append(out, displayKey(kr.Key))
		}
	}
	return out
}

// displayKey names an object by kind and namespace/name.
func displayKey(k string) string {
	rest := strings.TrimPrefix(k, wellknown.DefaultPrefix)
	kind, name, _ := strings.Cut(rest, "/")
	switch kind {
	case "configmaps":
		return "ConfigMap " + name
	case "daemonsets":
		return "DaemonSet " + name
	}
	return rest
}

func count(v *View, resource, prefix string) (CNIObjects, bool) {
	n := len(v.Keys(prefix))
	return CNIObjects{Resource: resource, Count: n}, n > 0
}

func detectFlannelCNI(v *View, row cni.CNI) (*CNI, error) {
	ev := cniEvidence(v, row)
	if len(ev) == 0 {
		return nil, nil
	}
	return &CNI{Name: CNIFlannel, IPAM: IPAMKubeSubnetManager, Evidence: ev}, nil
}

func detectCanal(v *View, row cni.CNI) (*CNI, error) {
	ev := cniEvidence(v, row)
	if len(ev) == 0 {
		return nil, nil
	}
	c := &CNI{Name: CNICanal, IPAM: IPAMHostLocal, Evidence: ev}
	if t, ok, err := cniConfigIPAM(v, wellknown.KeyCanalConfig); err != nil {
		return nil, err
	} else if ok && t != "host-local" {
		c.IPAM = t
	}
	return c, nil
}

// ipamType finds the IPAM plugin type in a CNI network config template
// (calico-config and canal-config keep it with placeholders such as
// "mtu": __CNI_MTU__, so it is not JSON).
var ipamType = regexp.MustCompile(`"ipam"\s*:\s*\{[^}]*?"type"\s*:\s*"([^"]+)"`)

func cniConfigIPAM(v *View, key string) (string, bool, error) {
	cm, ok, err := configMap(v, key)
	if err != nil || !ok {
		return "", false, err
	}
	m := ipamType.FindStringSubmatch(cm.Data["cni_network_config"])
	if m == nil {
		return "", false, nil
	}
	return m[1], true, nil
}

func detectCalico(v *View, row cni.CNI) (*CNI, error) {
	ev := cniEvidence(v, row)
	c := &CNI{Name: CNICalico, State: cniState(v, row)}
	if len(ev) == 0 && len(c.State) == 0 {
		return nil, nil
	}
	c.Evidence = ev
	t, ok, err := cniConfigIPAM(v, wellknown.KeyCalicoConfig)
	if err != nil {
		return nil, err
	}
	blocks := len(v.Keys(wellknown.PrefixCalicoBlocks)) > 0
	switch {
	case ok && t == IPAMCalico, !ok && blocks, !ok && len(ev) > 0:
		// calico.yaml and the operator default to Calico IPAM.
		c.IPAM = IPAMCalico
	case ok:
		c.IPAM = t
	}
	switch {
	case len(ev) == 0 && !blocks:
		c.IPAM = ""
		c.Note = "IPPools only: no calico-node, calico-config or IPAM blocks, so Calico allocates nothing here"
	case c.IPAM == IPAMCalico:
		c.HoldsPodAddresses = len(c.State) > 0
	case c.IPAM == IPAMHostLocal:
		c.Note = "pod addresses come from node.spec.podCIDR; calico-node still reads the IPPools for NAT-outgoing and encapsulation"
	}
	if len(ev) == 0 {
		c.Evidence = []string{"custom resources only"}
	}
	return c, nil
}

func detectCilium(v *View, row cni.CNI) (*CNI, error) {
	ev := cniEvidence(v, row)
	st := cniState(v, row)
	if len(ev) == 0 && len(st) == 0 {
		return nil, nil
	}
	hasPools := len(v.Keys(wellknown.PrefixCiliumPools)) > 0
	c := &CNI{Name: CNICilium, Evidence: ev, IPAM: IPAMClusterPool, State: st} // Cilium's default mode
	if len(ev) == 0 {
		c.Evidence = []string{"custom resources only"}
	}
	cm, ok, err := configMap(v, wellknown.KeyCiliumConfig)
	if err != nil {
		return nil, err
	}
	if ok && cm.Data["ipam"] != "" {
		c.IPAM = cm.Data["ipam"]
	}
	switch c.IPAM {
	case IPAMClusterPool, IPAMMultiPool:
		withCIDRs, err := ciliumNodesWithPodCIDRs(v)
		if err != nil {
			return nil, err
		}
		c.HoldsPodAddresses = withCIDRs > 0 || hasPools
	case IPAMKubernetes:
		c.Note = "pod CIDRs come from node.spec.podCIDRs"
	default:
		c.Note = "pod addresses come from the " + c.IPAM + " IPAM, not from the cluster pod CIDR"
	}
	return c, nil
}

// ciliumNodesWithPodCIDRs counts the CiliumNodes whose spec.ipam.podCIDRs
// (cluster-pool) or spec.ipam.pools (multi-pool) hold a range.
func ciliumNodesWithPodCIDRs(v *View) (int, error) {
	objs, err := v.List(wellknown.PrefixCiliumNodes)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		u, ok := o.Value.Obj.(*unstructured.Unstructured)
		if !ok {
			return 0, fmt.Errorf("%s: stored object is %s, not a custom resource", o.Key, o.Value.GVK)
		}
		cidrs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ipam", "podCIDRs")
		pools, _, _ := unstructured.NestedSlice(u.Object, "spec", "ipam", "pools", "allocated")
		if len(cidrs) > 0 || len(pools) > 0 {
			n++
		}
	}
	return n, nil
}

func detectWeave(v *View, row cni.CNI) (*CNI, error) {
	key := wellknown.CNIKeys("daemonsets", row.DaemonSets)[0]
	o, ok, err := v.Get(key)
	if err != nil || !ok {
		return nil, err
	}
	c := &CNI{Name: CNIWeave, IPAM: IPAMWeave, Evidence: []string{displayKey(key)},
		Note: "weave keeps its IPAM ring on each node, not in etcd"}
	if ds, ok := o.Value.Obj.(*appsv1.DaemonSet); ok {
		for _, ct := range ds.Spec.Template.Spec.Containers {
			for _, e := range ct.Env {
				if e.Name == "IPALLOC_RANGE" {
					c.Note = "IPALLOC_RANGE " + e.Value + "; " + c.Note
				}
			}
		}
	}
	return c, nil
}
