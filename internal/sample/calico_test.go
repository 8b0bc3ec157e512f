package sample_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/internal/sample"
)

// TestCalicoStateMatchesThePods checks the sample's Calico IPAM state
// against its Nodes and Pods: every block lies in its node's pod CIDR and
// allocates exactly the addresses of that node's pods on the pod network,
// each under the handle its attributes name, which counts it; every block
// has its node's affinity; and the CRDs stored are Calico's four.
func TestCalicoStateMatchesThePods(t *testing.T) {
	objs := byKey(t)
	podIP := map[string]*corev1.Pod{}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && !p.Spec.HostNetwork {
			podIP[p.Status.PodIP] = p
		}
	}
	nodeCIDR := map[string]netip.Prefix{}
	for _, n := range sample.Nodes() {
		nodeCIDR[n.Name] = netip.MustParsePrefix(n.PodCIDR)
	}
	stored := calicoStored(t)
	seen := 0
	for c, allocs := range sample.CalicoBlocks() {
		block := netip.MustParsePrefix(c)
		name := strings.NewReplacer(".", "-", "/", "-").Replace(c)
		b, ok := stored["/registry/crd.projectcalico.org/ipamblocks/"+name]
		if !ok {
			t.Fatalf("block %s: no IPAMBlock %s", c, name)
		}
		spec := b["spec"].(map[string]any)
		slots, attrs := spec["allocations"].([]any), spec["attributes"].([]any)
		for _, a := range allocs {
			p := podIP[a.IP]
			if p == nil || p.Namespace != a.Namespace || p.Name != a.Pod || p.Spec.NodeName != a.Node {
				t.Errorf("block %s allocates %s to %s/%s on %s, which no such Pod holds", c, a.IP, a.Namespace, a.Pod, a.Node)
			}
			if !nodeCIDR[a.Node].Contains(block.Addr()) || "host:"+a.Node != spec["affinity"] {
				t.Errorf("block %s (affinity %v) is not in node %s's pod CIDR %s", c, spec["affinity"], a.Node, nodeCIDR[a.Node])
			}
			ord := int(netip.MustParseAddr(a.IP).As4()[3] - block.Addr().As4()[3])
			attr := attrs[int(slots[ord].(float64))].(map[string]any)
			h := stored["/registry/crd.projectcalico.org/ipamhandles/"+attr["handle_id"].(string)]
			if h == nil || h["spec"].(map[string]any)["block"].(map[string]any)[c] != float64(1) {
				t.Errorf("block %s: %s's handle %v does not count it", c, a.IP, attr["handle_id"])
			}
			if _, ok := stored["/registry/crd.projectcalico.org/blockaffinities/"+a.Node+"-"+name]; !ok {
				t.Errorf("block %s: no BlockAffinity for node %s", c, a.Node)
			}
			seen++
		}
	}
	for ip := range podIP {
		if netip.MustParsePrefix(sample.PodCIDR).Contains(netip.MustParseAddr(ip)) {
			seen--
		}
	}
	if seen != 0 {
		t.Errorf("the blocks allocate %d addresses more than the live Pods on the pod network hold", seen)
	}
}

// calicoStored decodes the sample's Calico objects, by key, and checks
// that Calico's four IPAM CRDs are stored.
func calicoStored(t *testing.T) map[string]map[string]any {
	t.Helper()
	stored := map[string]map[string]any{}
	crds := 0
	for _, e := range objects(t) {
		if strings.HasPrefix(e.Key, "/registry/apiextensions.k8s.io/customresourcedefinitions/") && strings.HasSuffix(e.Key, ".crd.projectcalico.org") {
			crds++
		}
		if strings.HasPrefix(e.Key, "/registry/crd.projectcalico.org/") {
			var m map[string]any
			if err := json.Unmarshal(e.Value, &m); err != nil {
				t.Fatalf("%s: %v", e.Key, err)
			}
			stored[e.Key] = m
		}
	}
	if crds != 4 {
		t.Errorf("%d Calico CRDs stored, want 4 (ippools, ipamblocks, blockaffinities, ipamhandles)", crds)
	}
	return stored
}
