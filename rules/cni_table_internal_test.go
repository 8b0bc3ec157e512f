package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/state"
)

// TestCNITableRules: every CNI package cni says a rule moves the IPAM state
// of names a registered rule, --leave-cni-state takes exactly those CNIs
// (and names them in its usage), and the note for state left by hand is
// that CNI's, with its state and the new range filled in.
func TestCNITableRules(t *testing.T) {
	for _, name := range cni.Leavable() {
		row := cni.MustLookup(name)
		e, err := Lookup(row.IPAMRule)
		if err != nil {
			t.Errorf("%s: its IPAM rule %q is not registered: %v", name, row.IPAMRule, err)
			continue
		}
		if e.Name != name {
			t.Errorf("%s is moved by rule %s", name, e.Name)
		}
		o := Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}, CNIOptions: CNIOptions{LeaveCNIState: []string{name}}}
		if err := validateCNIOptions(&o); err != nil {
			t.Errorf("--leave-cni-state %s: %v", name, err)
		}
		r := &CNI{opts: o, plan: &Plan{}}
		c := state.CNI{Name: name, IPAM: state.IPAMClusterPool, State: []state.CNIObjects{{Resource: row.IPAM[0], Count: 3}}, HoldsPodAddresses: true}
		if r.moved(c) {
			t.Errorf("%s: moved although --leave-cni-state names it", name)
		}
		note := r.byHand(c)
		if !strings.HasPrefix(note, row.Display+" IPAM state left at the old range (--leave-cni-state "+name+": 3 "+row.IPAM[0]+")") ||
			!strings.Contains(note, "the new pod CIDR") || strings.Contains(note, "%!") {
			t.Errorf("%s: by-hand note %q", name, note)
		}
	}
	o := Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}, CNIOptions: CNIOptions{LeaveCNIState: []string{cni.Weave}}}
	if err := validateCNIOptions(&o); err == nil || !strings.Contains(err.Error(), "calico or cilium") {
		t.Errorf("--leave-cni-state weave: %v", err)
	}
	var usage string
	for _, op := range cniEntry.Options(&Options{}) {
		usage = op.Usage
	}
	if !strings.Contains(usage, "(calico, cilium)") || !strings.Contains(cniEntry.Summary, "(Calico, Cilium)") {
		t.Errorf("usage %q, summary %q", usage, cniEntry.Summary)
	}
	// A CNI whose state no rule moves is never "moved".
	r := &CNI{opts: Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}, plan: &Plan{}}
	for _, name := range cni.Names() {
		if !slices.Contains(cni.Leavable(), name) && r.moved(state.CNI{Name: name}) {
			t.Errorf("%s: moved, but no rule moves its state", name)
		}
	}
	if !r.moved(state.CNI{Name: cni.Calico, IPAM: state.IPAMCalico}) || r.moved(state.CNI{Name: cni.Cilium, IPAM: state.IPAMKubernetes}) ||
		!r.moved(state.CNI{Name: cni.Cilium, IPAM: state.IPAMMultiPool}) {
		t.Error("moved: Calico's state moves with --pod-network-cidr, Cilium's only in its pool modes")
	}
}
