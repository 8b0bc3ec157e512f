package rules

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sort"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
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
	// Repack gives a node CIDR that does not fit the new range at its
	// offset a free block of its own size instead of refusing (repackNodes).
	Repack bool
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
	outs := make([][]string, len(w.Nodes))
	misfitCount := 0
	var waiting []waitingCIDR
	var all []misfit // every misfit, for the summary
	for i, n := range w.Nodes {
		out, got, probs, misfits := mapNode(w.Old, w.New, n)
		misfitCount += len(misfits)
		for _, m := range misfits {
			if !w.Repack {
				probs = append(probs, fmt.Sprintf("node %s: %v", n.Name, m.err))
				all = append(all, m)
				continue
			}
			waiting = append(waiting, waitingCIDR{node: i, index: m.index, p: m.p, name: n.Name})
		}
		outs[i] = out
		placed, problems = append(placed, got...), append(problems, probs...)
	}
	problems = append(problems, checkPlacement(w.Old, w.New, placed)...)
	if len(problems) == 0 && len(waiting) > 0 {
		problems = repackNodes(w, waiting, outs, &placed)
	}
	repacked := map[int]bool{}
	for _, c := range waiting {
		repacked[c.node] = true
	}
	for i, n := range w.Nodes {
		if cur := n.cidrs(); outs[i] != nil && !slices.Equal(outs[i], cur) {
			lay.Moves[n.Key] = outs[i]
			lay.Nodes = append(lay.Nodes, NodeMove{Node: n.Name, Old: cur, New: outs[i], Repacked: repacked[i]})
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		// The message lists the first ones (one readable line, as the
		// Service refusal); -o json prints every one (Details).
		const msg = "%w: kube-controller-manager would exit at start with these node CIDRs: %s"
		if misfitCount > 0 && !w.Repack {
			list := capList(problems, maxListed, "; ")
			if sum, ok := misfitSummary(w, all); ok && len(problems) > 3 {
				list = sum // a long refusal is a summary; -o json lists every node (Details)
			}
			err := option.Errorf("RepackNodes", msg+"; choose a larger range, or pass {RepackNodes} to give the nodes that do not fit free blocks of their size",
				transform.ErrRefused, list)
			err.Details = problems
			return nil, err
		}
		return nil, fmt.Errorf(msg, transform.ErrRefused, capList(problems, maxListed, "; "))
	}
	return lay, nil
}

// waitingCIDR is a node CIDR that does not fit the new range at its offset
// and waits for a repacked block.
type waitingCIDR struct {
	node, index int
	p           netip.Prefix // the old CIDR
	name        string
}

// repackNodes gives every waiting CIDR the lowest free block of its own
// size in the new cluster CIDR of its family, the largest blocks first
// (then by node name): each node keeps its mask size, and no block
// overlaps another, so kube-controller-manager occupies them all at start
// (nodeipam's range allocator marks each node's CIDR at its index).
func repackNodes(w podWish, waiting []waitingCIDR, outs [][]string, placed *[]placedCIDR) []string {
	sort.SliceStable(waiting, func(a, b int) bool {
		if waiting[a].p.Bits() != waiting[b].p.Bits() {
			return waiting[a].p.Bits() < waiting[b].p.Bits()
		}
		return waiting[a].name < waiting[b].name
	})
	var problems []string
	for _, c := range waiting {
		_, n, _ := cidr.PairOf(w.Old, w.New, c.p.Addr())
		block, ok := freeBlock(n, c.p.Bits(), *placed)
		if !ok {
			problems = append(problems, fmt.Sprintf("node %s: no free /%d left in the new cluster CIDR %s for %s", c.name, c.p.Bits(), n, c.p))
			continue
		}
		outs[c.node][c.index] = block.String()
		*placed = append(*placed, placedCIDR{c.name, block})
	}
	return problems
}

// freeBlock returns the lowest block of the given size in n that overlaps
// no placed CIDR.
func freeBlock(n netip.Prefix, bits int, placed []placedCIDR) (netip.Prefix, bool) {
	if bits < n.Bits() {
		return netip.Prefix{}, false
	}
	size := cidr.Size(netip.PrefixFrom(n.Addr(), bits))
	count := new(big.Int).Div(cidr.Size(n), size)
	for i := big.NewInt(0); i.Cmp(count) < 0; i.Add(i, big.NewInt(1)) {
		a, err := cidr.AddrAt(n, new(big.Int).Mul(i, size))
		if err != nil {
			break
		}
		cand := netip.PrefixFrom(a, bits)
		free := true
		for _, p := range placed {
			if p.p.Overlaps(cand) {
				free = false
				break
			}
		}
		if free {
			return cand, true
		}
	}
	return netip.Prefix{}, false
}

// misfitSummary says, for IPv4, how many node CIDRs do not fit the new
// range at their offsets, the span of their offsets, and the smallest range
// at the new range's address that holds them all where they are (false
// when a misfit is IPv6 or outside the old ranges: the list says more).
func misfitSummary(w podWish, ms []misfit) (string, bool) {
	if len(ms) == 0 {
		return "", false
	}
	var newV4 netip.Prefix
	for _, p := range w.New {
		if p.Addr().Is4() {
			newV4 = p.Masked()
		}
	}
	if !newV4.IsValid() {
		return "", false
	}
	var lo, hi uint64 = ^uint64(0), 0
	for _, m := range ms {
		if !m.p.Addr().Is4() {
			return "", false
		}
		var base netip.Prefix
		for _, o := range w.Old {
			if o.Addr().Is4() && o.Contains(m.p.Addr()) {
				base = o.Masked()
			}
		}
		if !base.IsValid() {
			return "", false
		}
		off := uint64(v4(m.p.Addr()) - v4(base.Addr()))
		end := off + uint64(1)<<(32-m.p.Bits())
		lo, hi = min(lo, off), max(hi, end)
	}
	bits := 32
	for bits > 0 && uint64(1)<<(32-bits) < hi {
		bits--
	}
	fit := netip.PrefixFrom(newV4.Addr(), bits).Masked()
	return fmt.Sprintf("%d node CIDRs do not fit %s at their offsets (%d to %d from the old range's start); the smallest range at that address that holds every one where it is: %s",
		len(ms), newV4, lo, hi-1, fit), true
}

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// misfit is a node CIDR that does not fit the new range at its offset.
type misfit struct {
	index int
	p     netip.Prefix
	err   error
}

// mapNode maps one node's CIDRs. It returns the new list (nil when the
// node has none or its spec is inconsistent), the CIDRs it placed, the
// problems it found and the CIDRs that do not fit at their offsets.
func mapNode(old, new []netip.Prefix, n nodePods) (out []string, placed []placedCIDR, problems []string, misfits []misfit) {
	cur := n.cidrs()
	if len(cur) == 0 {
		return nil, nil, nil, nil
	}
	if n.PodCIDR != "" && len(n.PodCIDRs) > 0 && n.PodCIDRs[0] != n.PodCIDR {
		return nil, nil, []string{fmt.Sprintf("node %s: podCIDR %s differs from podCIDRs[0] %s", n.Name, n.PodCIDR, n.PodCIDRs[0])}, nil
	}
	out = slices.Clone(cur)
	for i, c := range cur {
		p, err := mapNodeCIDR(old, new, c)
		if errors.Is(err, cidr.ErrDoesNotFit) {
			o, _ := netip.ParsePrefix(c)
			misfits = append(misfits, misfit{index: i, p: o.Masked(), err: err})
			continue
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("node %s: %v", n.Name, err))
			continue
		}
		out[i] = p.String()
		placed = append(placed, placedCIDR{n.Name, p})
	}
	return out, placed, problems, misfits
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
