package cni_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/cni"
)

// TestTable: every row names a CNI once and has what each consumer
// derives from it: objects to detect it by, an agent role for the staged
// restart, host state for node apply and the runbook; the rows that may be
// left by hand say how.
func TestTable(t *testing.T) {
	if got := strings.Join(cni.Names(), ","); got != "flannel,canal,calico,cilium,weave" {
		t.Errorf("Names: %s", got)
	}
	roles := map[string]string{}
	for _, c := range cni.All() {
		if c.Display == "" || !strings.EqualFold(c.Display, c.Name) {
			t.Errorf("%s: display name %q", c.Name, c.Display)
		}
		if len(c.ConfigMaps)+len(c.DaemonSets)+len(c.IPAM)+len(c.HelmCharts) == 0 && c.NodeAnnotation == "" {
			t.Errorf("%s: nothing to detect it by", c.Name)
		}
		agent := false
		for _, r := range c.Roles {
			if prev, ok := roles[r.Name]; ok {
				t.Errorf("role %s is %s's and %s's", r.Name, prev, c.Name)
			}
			roles[r.Name] = c.Name
			if r.Label == "" || r.Value == "" || r.Phase < cni.PhaseOperator || r.Phase > cni.PhaseControl {
				t.Errorf("%s: role %+v", c.Name, r)
			}
			agent = agent || r.Phase == cni.PhaseAgent && r.Kind == "DaemonSet"
		}
		if !agent {
			t.Errorf("%s: no agent DaemonSet role: the staged restart would not restart its agents", c.Name)
		}
		if h := c.HostState; len(h.Agents) == 0 || len(h.Links)+len(h.Paths) == 0 || h.Empty() {
			t.Errorf("%s: host state %+v: node apply would leave the old range's interfaces and files", c.Name, h)
		}
		if (c.IPAMRule == "") != (c.ByHand == "") || c.ByHand != "" && (!strings.Contains(c.ByHand, "%[1]s") || !strings.Contains(c.ByHand, "%[2]s")) {
			t.Errorf("%s: IPAMRule %q, ByHand %q", c.Name, c.IPAMRule, c.ByHand)
		}
		if got, ok := cni.Lookup(c.Name); !ok || got.Name != c.Name {
			t.Errorf("Lookup(%s): %v %v", c.Name, got.Name, ok)
		}
	}
	if _, ok := cni.Lookup("kube-router"); ok {
		t.Error("Lookup of a CNI the table lacks succeeded")
	}
	if got := cni.DisplayList(); got != "flannel, Canal, Calico, Cilium or Weave" {
		t.Errorf("DisplayList: %s", got)
	}
	if got := strings.Join(cni.Leavable(), ","); got != "calico,cilium" {
		t.Errorf("Leavable: %s", got)
	}
}

// TestDerived: the lists the consumers take, in their order.
func TestDerived(t *testing.T) {
	var got []string
	last := cni.PhaseOperator
	for _, r := range cni.Roles() {
		if r.Phase < last {
			t.Errorf("Roles: %s (phase %d) after phase %d", r.Name, r.Phase, last)
		}
		last = r.Phase
		got = append(got, r.Name)
	}
	if s := strings.Join(got, ","); s != "cilium-operator,flannel,canal,calico-node,cilium,weave-net,calico-kube-controllers" {
		t.Errorf("Roles: %s", s)
	}
	for _, c := range []struct{ got, want string }{
		{strings.Join(cni.Namespaces(), ","), "kube-flannel,tigera-operator,calico-system,cilium"},
		{strings.Join(cni.PodState(), ","), "ciliumendpoints.cilium.io"},
		{strings.Join(cni.PolicyGroups(), ","), "crd.projectcalico.org,cilium.io"},
		{strings.Join(cni.Groups(false), ","), "crd.projectcalico.org,cilium.io"},
		{strings.Join(cni.Groups(true), ","), "crd.projectcalico.org,operator.tigera.io,cilium.io"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// TestTableUnchangeable: a caller that changes what All or Lookup returned
// does not change the table.
func TestTableUnchangeable(t *testing.T) {
	all := cni.All()
	all[0].Name = "changed"
	all[0].HostState.Links[0] = "changed"
	c, _ := cni.Lookup(cni.Flannel)
	c.Roles[0].Value = "changed"
	again := cni.MustLookup(cni.Flannel)
	if again.Name != cni.Flannel || slices.Contains(again.HostState.Links, "changed") || again.Roles[0].Value != "flannel" {
		t.Errorf("the table changed: %+v", again)
	}
}
