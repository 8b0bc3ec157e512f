package rules

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

// PodCIDR moves every Node's spec.podCIDR and spec.podCIDRs from the old
// cluster CIDR to the new one, keeping each node's own mask size and its
// offset, and refuses any result kube-controller-manager would crash on: a
// node CIDR outside the new cluster CIDR, or two that overlap (DESIGN 10).
type PodCIDR struct {
	opts  Options
	plan  *Plan
	pp    *PodPlan
	moves map[string][]string // node key -> new podCIDRs
}

func (r *PodCIDR) Name() string       { return NamePodCIDR }
func (r *PodCIDR) Prefixes() []string { return []string{state.PrefixNodes} }
func (r *PodCIDR) Lists() []string    { return []string{state.PrefixNodes} }

// Prepare maps every node and refuses before anything is written.
func (r *PodCIDR) Prepare(ctx context.Context, v *state.View) error {
	newP, err := parsePrefixes("--pod-network-cidr", r.opts.PodNetworkCIDR)
	if err != nil {
		return err
	}
	nets, err := r.plan.networks(ctx, v)
	if err != nil {
		return err
	}
	// Node podCIDRs' covering prefix is evidence, not a record: leave it out
	// of the agreement check (a cluster may use only part of its range).
	var recorded []state.Source
	for _, s := range nets.PodCIDR {
		if s.Kind != state.SourceNodes {
			recorded = append(recorded, s)
		}
	}
	srcs, err := toDetected(recorded)
	if err != nil {
		return err
	}
	oldP, oldSrc, err := resolveOld("pod network CIDR", "--old-pod-network-cidr", r.opts.OldPodNetworkCIDR, srcs, newP)
	if err != nil {
		return err
	}
	oldP, newP, err = pairByFamily("pod network CIDR", oldP, newP)
	if err != nil {
		return err
	}
	if r.opts.ServiceCIDR == "" {
		if svc, err := recordedPrefixes(nets.ServiceCIDR); err == nil {
			if err := disjoint("pod", newP, "service", svc); err != nil {
				return err
			}
		}
	}
	pp := &PodPlan{Old: oldP, New: newP, OldSource: oldSrc}
	r.pp, r.plan.Pod = pp, pp
	r.moves = map[string][]string{}

	nodes, err := v.List(state.PrefixNodes)
	if err != nil {
		return err
	}
	type placed struct {
		node string
		p    netip.Prefix
	}
	var all []placed
	var problems []string
	for _, o := range nodes {
		node, ok := o.Value.Obj.(*corev1.Node)
		if !ok {
			return fmt.Errorf("%s: stored object is %s, not a Node", o.Key, o.Value.GVK)
		}
		cur := nodeCIDRs(node)
		if len(cur) == 0 {
			continue
		}
		if node.Spec.PodCIDR != "" && len(node.Spec.PodCIDRs) > 0 && node.Spec.PodCIDRs[0] != node.Spec.PodCIDR {
			problems = append(problems, fmt.Sprintf("node %s: podCIDR %s differs from podCIDRs[0] %s", node.Name, node.Spec.PodCIDR, node.Spec.PodCIDRs[0]))
			continue
		}
		out := make([]string, len(cur))
		for i, c := range cur {
			out[i] = c
			p, err := netip.ParsePrefix(c)
			if err != nil {
				problems = append(problems, fmt.Sprintf("node %s: podCIDR %q is not a CIDR", node.Name, c))
				continue
			}
			p = p.Masked()
			mapped := p
			o, n, ok := pairOfPrefix(oldP, newP, p)
			switch {
			case !ok:
				// family not remapped: stays
			case n.Contains(p.Addr()) && n.Bits() <= p.Bits() && !o.Contains(p.Addr()):
				// already in the new range (a second run): stays
			case !o.Contains(p.Addr()) || p.Bits() < o.Bits():
				problems = append(problems, fmt.Sprintf("node %s: %s is outside the old cluster CIDR %s", node.Name, p, o))
				continue
			default:
				m, _ := cidr.NewMapper(o, n)
				mapped, err = m.MapPrefix(p)
				if err != nil {
					problems = append(problems, fmt.Sprintf("node %s: %v", node.Name, err))
					continue
				}
			}
			out[i] = mapped.String()
			all = append(all, placed{node.Name, mapped})
		}
		if strings.Join(out, ",") != strings.Join(cur, ",") {
			r.moves[o.Key] = out
			pp.Nodes = append(pp.Nodes, NodeMove{Node: node.Name, Old: cur, New: out})
		}
	}
	// Every new node CIDR inside the new cluster CIDR, none overlapping.
	for i := range all {
		if _, n, ok := pairOfPrefix(oldP, newP, all[i].p); ok && !(n.Contains(all[i].p.Addr()) && all[i].p.Bits() >= n.Bits()) {
			problems = append(problems, fmt.Sprintf("node %s: %s would be outside the new cluster CIDR %s", all[i].node, all[i].p, n))
		}
		for j := i + 1; j < len(all); j++ {
			if all[i].p.Overlaps(all[j].p) {
				problems = append(problems, fmt.Sprintf("nodes %s (%s) and %s (%s) overlap", all[i].node, all[i].p, all[j].node, all[j].p))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: kube-controller-manager would exit at start with these node CIDRs: %s", transform.ErrRefused, strings.Join(problems, "; "))
	}
	return nil
}

func nodeCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return append([]string(nil), n.Spec.PodCIDRs...)
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func pairOfPrefix(old, new []netip.Prefix, p netip.Prefix) (netip.Prefix, netip.Prefix, bool) {
	return pairOf(old, new, p.Addr())
}

// Apply rewrites one Node.
func (r *PodCIDR) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	out, ok := r.moves[obj.Key]
	if !ok {
		return transform.Result{}, nil
	}
	node := obj.Value.Obj.(*corev1.Node)
	old := nodeCIDRs(node)
	mapping := map[string]string{}
	for i := range old {
		mapping[old[i]] = out[i]
	}
	if node.Spec.PodCIDR != "" {
		node.Spec.PodCIDR = out[0]
	}
	if len(node.Spec.PodCIDRs) > 0 {
		node.Spec.PodCIDRs = append([]string(nil), out...)
	}
	changes := []transform.Change{{Field: "spec.podCIDRs", Old: strings.Join(old, ","), New: strings.Join(out, ",")}}
	more, err := editSpecCopies(&node.ObjectMeta, []string{"podCIDR", "podCIDRs"}, mapping, "podCIDRs")
	if err != nil {
		return transform.Result{}, err
	}
	changes = append(changes, more...)
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}
