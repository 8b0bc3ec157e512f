package state

// Which CNI a snapshot's cluster runs, and where its IPAM keeps pod
// addresses: read from the ConfigMaps, DaemonSets and custom resources each
// CNI's manifests create. Rules use it to refuse a pod-CIDR move that would
// leave IPAM state behind; inspect and plan show it.

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/wellknown"
)

// The CNIs Detect names.
const (
	CNIFlannel = "flannel"
	CNICanal   = "canal"
	CNICalico  = "calico"
	CNICilium  = "cilium"
	CNIWeave   = "weave"
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
// and transform.Lister).
var CNIListed = []string{wellknown.PrefixCiliumNodes, wellknown.PrefixCiliumPools, wellknown.PrefixCalicoPools, wellknown.PrefixCalicoBlocks,
	wellknown.PrefixCalicoAffs, wellknown.PrefixCalicoHandles, wellknown.PrefixTigeraInstall, "/registry/daemonsets/"}

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

// DetectCNI names every CNI the snapshot shows, in the order flannel,
// Canal, Calico, Cilium, Weave. An empty list means none was recognised.
func DetectCNI(ctx context.Context, v *View) ([]CNI, error) {
	var out []CNI
	for _, d := range []func(*View) (*CNI, error){detectFlannelCNI, detectCanal, detectEmbeddedCNI, detectCalico, detectCilium, detectWeave} {
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
	return out, nil
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
	rest := strings.TrimPrefix(k, "/registry/")
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

func detectFlannelCNI(v *View) (*CNI, error) {
	ev := append(present(v, wellknown.FlannelConfigKeys...), presentPrefix(v, wellknown.FlannelDaemonSets...)...)
	if len(ev) == 0 {
		return nil, nil
	}
	return &CNI{Name: CNIFlannel, IPAM: IPAMKubeSubnetManager, Evidence: ev}, nil
}

func detectCanal(v *View) (*CNI, error) {
	ev := present(v, wellknown.KeyCanalConfig, wellknown.KeyCanalDaemonSet)
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

func detectCalico(v *View) (*CNI, error) {
	ev := append(present(v, wellknown.KeyCalicoConfig), presentPrefix(v, wellknown.CalicoDaemonSets...)...)
	if n := len(v.Keys(wellknown.PrefixTigeraInstall)); n > 0 {
		ev = append(ev, "installations.operator.tigera.io")
	}
	c := &CNI{Name: CNICalico}
	for _, o := range []struct{ res, prefix string }{
		{"ippools.crd.projectcalico.org", wellknown.PrefixCalicoPools}, {"ipamblocks.crd.projectcalico.org", wellknown.PrefixCalicoBlocks},
		{"blockaffinities.crd.projectcalico.org", wellknown.PrefixCalicoAffs}, {"ipamhandles.crd.projectcalico.org", wellknown.PrefixCalicoHandles},
	} {
		if n, ok := count(v, o.res, o.prefix); ok {
			c.State = append(c.State, n)
		}
	}
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

func detectCilium(v *View) (*CNI, error) {
	ev := present(v, wellknown.KeyCiliumConfig, wellknown.KeyCiliumDaemonSet)
	nodes, hasNodes := count(v, "ciliumnodes.cilium.io", wellknown.PrefixCiliumNodes)
	pools, hasPools := count(v, "ciliumpodippools.cilium.io", wellknown.PrefixCiliumPools)
	if len(ev) == 0 && !hasNodes && !hasPools {
		return nil, nil
	}
	c := &CNI{Name: CNICilium, Evidence: ev, IPAM: IPAMClusterPool} // Cilium's default mode
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
	if hasNodes {
		c.State = append(c.State, nodes)
	}
	if hasPools {
		c.State = append(c.State, pools)
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

func detectWeave(v *View) (*CNI, error) {
	o, ok, err := v.Get(wellknown.KeyWeaveDaemonSet)
	if err != nil || !ok {
		return nil, err
	}
	c := &CNI{Name: CNIWeave, IPAM: IPAMWeave, Evidence: []string{displayKey(wellknown.KeyWeaveDaemonSet)},
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
