package rules

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// PodCIDR moves every Node's spec.podCIDR and spec.podCIDRs from the old
// cluster CIDR to the new one, keeping each node's own mask size and its
// offset, and refuses any result kube-controller-manager would crash on: a
// node CIDR outside the new cluster CIDR, or two that overlap (DESIGN.md decision 10).
type PodCIDR struct {
	opts  Options
	plan  *Plan
	pp    *PodPlan
	moves map[string][]string // node key -> new podCIDRs
	notes []string
}

func (r *PodCIDR) Name() string       { return NamePodCIDR }
func (r *PodCIDR) Prefixes() []string { return []string{wellknown.PrefixNodes} }
func (r *PodCIDR) Lists() []string {
	return slices.Concat(clashListed, []string{wellknown.PrefixNodeLeases}, state.DistributionListed, scaleListed(r.opts.DNSService))
}

// Counts names what the scale plan counts.
func (r *PodCIDR) Counts() []string { return scaleCounted }

func (r *PodCIDR) Notes() []string { return r.notes }

// Prepare maps every node and refuses before anything is written.
func (r *PodCIDR) Prepare(ctx context.Context, v *state.View) error {
	if len(v.Keys(wellknown.PrefixNodes)) == 0 {
		if err := v.WrongPrefix(); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", transform.ErrRefused, v.Missing("Nodes", wellknown.PrefixNodes))
	}
	oldP, newP, oldSrc, err := r.resolveRanges(ctx, v)
	if err != nil {
		return err
	}
	if err := r.plan.checkClashes(v, "PodNetworkCIDR", "pod", oldP, newP); err != nil {
		return err
	}
	nodes, err := listNodePods(v)
	if err != nil {
		return err
	}
	lay, err := planPods(podWish{Old: oldP, New: newP, Nodes: nodes, Repack: r.opts.RepackNodes})
	if err != nil {
		return err
	}
	r.pp = &PodPlan{Old: oldP, New: newP, OldSource: oldSrc, Nodes: lay.Nodes}
	r.plan.Pod = r.pp
	r.moves = lay.Moves
	var repacked []string
	for _, m := range lay.Nodes {
		if m.Repacked {
			repacked = append(repacked, fmt.Sprintf("%s %s -> %s", m.Node, strings.Join(m.Old, ","), strings.Join(m.New, ",")))
		}
	}
	if len(repacked) > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d nodes did not fit the new range at their offsets and got free blocks of their size (--repack-nodes): %s; "+
			"their pods' addresses do not keep their offsets: recreate those pods, and check that the CNI takes the node's block from node.spec.podCIDR",
			len(repacked), capList(repacked, 20, "; ")))
	}
	noKubelet, err := r.plan.noteNoKubelet(v)
	if err != nil {
		return err
	}
	r.notes = append(r.notes, noKubelet...)
	return r.plan.readScale(v, r.opts.DNSService)
}

// resolveRanges returns the old and new cluster CIDRs, paired by family,
// and where the old ones were found.
func (r *PodCIDR) resolveRanges(ctx context.Context, v *state.View) (oldP, newP []netip.Prefix, oldSrc string, err error) {
	oldP, newP, oldSrc, nets, err := r.plan.resolveRange(ctx, v, movingRange{kind: "pod network CIDR",
		field: "PodNetworkCIDR", value: r.opts.PodNetworkCIDR, oldField: "OldPodNetworkCIDR", oldValue: r.opts.OldPodNetworkCIDR,
		sources: func(n *state.Networks) []state.Source { return records(n.PodCIDR) }})
	if err != nil {
		return nil, nil, "", err
	}
	if r.opts.ServiceCIDR == "" {
		if err := disjoint("pod", newP, "service", nets.ServiceCIDR); err != nil {
			return nil, nil, "", err
		}
	}
	return oldP, newP, oldSrc, nil
}

// listNodePods reads every Node's pod CIDRs.
func listNodePods(v *state.View) ([]nodePods, error) {
	var out []nodePods
	err := v.Each(wellknown.PrefixNodes, func(o *state.Object) error {
		node, err := state.As[*corev1.Node](o, "a Node")
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		out = append(out, nodePods{Key: o.Key, Name: node.Name, PodCIDR: node.Spec.PodCIDR, PodCIDRs: node.Spec.PodCIDRs})
		return nil
	})
	return out, err
}

func nodeCIDRs(n *corev1.Node) []string {
	return nodePods{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs}.cidrs()
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

// NamePodCIDR is the pod-cidr rule.
const NamePodCIDR = "pod-cidr"

// PodCIDROptions are the pod-cidr rule's options.
type PodCIDROptions struct {
	// PodNetworkCIDR is the new cluster (pod) CIDR. Empty: pod-cidr is off.
	PodNetworkCIDR string `json:"podSubnet,omitempty"`
	// OldPodNetworkCIDR overrides detection of the old one.
	OldPodNetworkCIDR string `json:"oldPodSubnet,omitempty"`
	// RepackNodes gives a node CIDR that does not fit the new (smaller)
	// cluster CIDR at its offset the lowest free block of its own size,
	// as kube-controller-manager's allocator would hand one out; nodes
	// that fit stay at their offsets. Default false: such a node is a
	// refusal. Requires PodNetworkCIDR.
	RepackNodes bool `json:"repackNodes,omitempty"`
}

var podCIDREntry = Entry{
	Name:    NamePodCIDR,
	Summary: "move every Node's pod CIDRs to the new cluster CIDR, each node's mask size and offset kept",
	Touches: []string{"nodes (spec.podCIDR, spec.podCIDRs, last-applied and managedFields copies)"},
	Enabled: func(o *Options) bool { return o.PodNetworkCIDR != "" },
	New:     func(o Options, p *Plan) transform.Rule { return &PodCIDR{opts: o, plan: p} },
	Example: func() Options {
		return Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}
	},
	Validate: validatePodOptions,
	Options: func(o *Options) []Option {
		return []Option{
			{Field: "PodNetworkCIDR", Name: "pod-network-cidr", CLI: true, Verify: true, Config: "networking.podSubnet", Value: &o.PodNetworkCIDR,
				Usage: "new cluster (pod) CIDR, e.g. 10.55.0.0/16; on a dual-stack cluster one CIDR moves its family and keeps the other, two (comma-separated) move both"},
			{Field: "OldPodNetworkCIDR", Name: "old-pod-network-cidr", CLI: true, Config: "networking.oldPodSubnet", Value: &o.OldPodNetworkCIDR,
				Usage: "the old pod CIDR (default: detected from kubeadm-config, kube-proxy and flannel)"},
			{Field: "RepackNodes", Name: "repack-nodes", CLI: true, Config: "networking.repackNodes", Value: &o.RepackNodes,
				Usage: "allow a smaller new pod range: nodes whose CIDR does not fit at its offset get a free block of their own size"},
		}
	},
}

// validatePodOptions checks the pod-cidr options, and that the new pod and
// service ranges (when both move) are disjoint.
func validatePodOptions(o *Options) error {
	if o.PodNetworkCIDR == "" {
		if o.OldPodNetworkCIDR != "" {
			return option.Errorf("OldPodNetworkCIDR", "{} needs {PodNetworkCIDR}")
		}
		if o.RepackNodes {
			return option.Errorf("RepackNodes", "{} needs {PodNetworkCIDR}")
		}
		return nil
	}
	pod, err := parseCIDRList("PodNetworkCIDR", o.PodNetworkCIDR)
	if err != nil {
		return err
	}
	ps, _ := parsePrefixes("PodNetworkCIDR", o.PodNetworkCIDR) // parsed just above
	if err := checkUsable("PodNetworkCIDR", "pod network", ps); err != nil {
		return err
	}
	if o.ServiceCIDR == "" {
		return nil
	}
	svc, err := parseCIDRList("ServiceCIDR", o.ServiceCIDR)
	if err != nil {
		return err
	}
	for _, s := range svc {
		for _, p := range pod {
			if overlaps(s, p) {
				return option.Errorf("PodNetworkCIDR", "the new service CIDR %s overlaps the new pod CIDR %s: they must be disjoint", s, p)
			}
		}
	}
	return nil
}
