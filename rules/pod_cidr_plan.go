package rules

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/transform"
)

// nodePods is one Node's pod CIDRs, as its spec records them.
type nodePods struct {
	Key, Name string
	PodCIDR   string   // spec.podCIDR
	PodCIDRs  []string // spec.podCIDRs
}

// cidrs returns the node's pod CIDRs: podCIDRs, else the single podCIDR.
func (n nodePods) cidrs() []string {
	if len(n.PodCIDRs) > 0 {
		return slices.Clone(n.PodCIDRs)
	}
	if n.PodCIDR != "" {
		return []string{n.PodCIDR}
	}
	return nil
}

// podWish is what the node pod-CIDR planner starts from. It needs no
// snapshot.
type podWish struct {
	// Old and New are the cluster CIDRs, paired by family (pairByFamily).
	Old, New []netip.Prefix
	Nodes    []nodePods
}

// podLayout is the node pod-CIDR planner's answer.
type podLayout struct {
	// Nodes are the Nodes that change, in the order given.
	Nodes []NodeMove
	// Moves maps each of their keys to its new podCIDRs.
	Moves map[string][]string
}

// placedCIDR is a node CIDR after the move.
type placedCIDR struct {
	node string
	p    netip.Prefix
}

// planPods moves every node CIDR to the same offset in the new cluster
// CIDR of its family, keeping its mask size. It refuses, listing every
// problem, what kube-controller-manager would exit at start on: a node
// CIDR outside the new cluster CIDR, or two that overlap.
func planPods(w podWish) (*podLayout, error) {
	lay := &podLayout{Moves: map[string][]string{}}
	var placed []placedCIDR
	var problems []string
	for _, n := range w.Nodes {
		cur := n.cidrs()
		out, got, probs := mapNode(w.Old, w.New, n)
		placed, problems = append(placed, got...), append(problems, probs...)
		if out != nil && !slices.Equal(out, cur) {
			lay.Moves[n.Key] = out
			lay.Nodes = append(lay.Nodes, NodeMove{Node: n.Name, Old: cur, New: out})
		}
	}
	problems = append(problems, checkPlacement(w.Old, w.New, placed)...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("%w: kube-controller-manager would exit at start with these node CIDRs: %s", transform.ErrRefused, strings.Join(problems, "; "))
	}
	return lay, nil
}

// mapNode maps one node's CIDRs. It returns the new list (nil when the
// node has none or its spec is inconsistent), the CIDRs it placed and the
// problems it found.
func mapNode(old, new []netip.Prefix, n nodePods) (out []string, placed []placedCIDR, problems []string) {
	cur := n.cidrs()
	if len(cur) == 0 {
		return nil, nil, nil
	}
	if n.PodCIDR != "" && len(n.PodCIDRs) > 0 && n.PodCIDRs[0] != n.PodCIDR {
		return nil, nil, []string{fmt.Sprintf("node %s: podCIDR %s differs from podCIDRs[0] %s", n.Name, n.PodCIDR, n.PodCIDRs[0])}
	}
	out = slices.Clone(cur)
	for i, c := range cur {
		p, err := mapNodeCIDR(old, new, c)
		if err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", n.Name, err))
			continue
		}
		out[i] = p.String()
		placed = append(placed, placedCIDR{n.Name, p})
	}
	return out, placed, problems
}

// mapNodeCIDR maps one node CIDR to the prefix of the same length at the
// same offset in the new cluster CIDR of its family. A CIDR of a family
// that is not remapped, or already in the new range (a second run), stays.
func mapNodeCIDR(old, new []netip.Prefix, c string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		return p, fmt.Errorf("podCIDR %q is not a CIDR", c)
	}
	p = p.Masked()
	o, n, ok := cidr.PairOf(old, new, p.Addr())
	switch {
	case !ok:
		return p, nil
	case n.Contains(p.Addr()) && n.Bits() <= p.Bits() && !o.Contains(p.Addr()):
		return p, nil
	case !o.Contains(p.Addr()) || p.Bits() < o.Bits():
		return p, fmt.Errorf("%s is outside the old cluster CIDR %s", p, o)
	}
	m, err := cidr.NewMapper(o, n)
	if err != nil {
		return p, err
	}
	return m.MapPrefix(p)
}

// checkPlacement lists the node CIDRs outside the new cluster CIDR and the
// pairs that overlap.
func checkPlacement(old, new []netip.Prefix, placed []placedCIDR) []string {
	var problems []string
	for i, a := range placed {
		if _, n, ok := cidr.PairOf(old, new, a.p.Addr()); ok && !(n.Contains(a.p.Addr()) && a.p.Bits() >= n.Bits()) {
			problems = append(problems, fmt.Sprintf("node %s: %s would be outside the new cluster CIDR %s", a.node, a.p, n))
		}
		for _, b := range placed[i+1:] {
			if a.p.Overlaps(b.p) {
				problems = append(problems, fmt.Sprintf("nodes %s (%s) and %s (%s) overlap", a.node, a.p, b.node, b.p))
			}
		}
	}
	return problems
}
