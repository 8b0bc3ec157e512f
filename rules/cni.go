package rules

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameCNI is the cni rule.
const NameCNI = "cni"

// CNIOptions are the cni rule's options.
type CNIOptions struct {
	// LeaveCNIState names CNIs (calico, cilium) whose IPAM state the
	// operator moves by hand: their objects are left at the old range and
	// the notes say what to do.
	LeaveCNIState []string `json:"leaveCNIState,omitempty"`
}

// cniLeavable are the CNIs whose IPAM state can be refused, hence left:
// those a rule moves (package cni's IPAMRule).
var cniLeavable = cni.Leavable()

// CNI names the CNIs of the snapshot in the plan, moves Weave's
// IPALLOC_RANGE, and refuses a pod-CIDR move that would leave a CNI's IPAM
// state at the old range when no enabled rule moves it
// (DESIGN.md decision 17), unless --leave-cni-state names that CNI.
type CNI struct {
	opts  Options
	plan  *Plan
	weave string // new IPALLOC_RANGE, "" when it stays
	notes []string
}

var cniEntry = Entry{
	Name:    NameCNI,
	Summary: "name the CNI in the plan, move Weave's IPALLOC_RANGE, and refuse to leave CNI IPAM state (" + leavableDisplay() + ") at the old pod range unless acknowledged",
	Touches: []string{"daemonsets.apps kube-system/weave-net (env IPALLOC_RANGE)"},
	// It must know what the CNI rules planned (and refused) first.
	After:    []string{NamePodCIDR, NameCilium, NameCalico},
	Enabled:  func(o *Options) bool { return o.PodNetworkCIDR != "" },
	Validate: validateCNIOptions,
	New:      func(o Options, p *Plan) transform.Rule { return &CNI{opts: o, plan: p} },
	Example:  func() Options { return Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}} },
	Options: func(o *Options) []Option {
		return []Option{{Field: "LeaveCNIState", Name: "leave-cni-state", CLI: true, Config: "networking.leaveCNIState", Value: &o.LeaveCNIState,
			Usage: "leave this CNI's IPAM state (" + strings.Join(cniLeavable, ", ") + ") at the old pod range and move it by hand (repeatable); the notes say how"}}
	},
}

// leavableDisplay names the leavable CNIs as prose does ("Calico, Cilium").
func leavableDisplay() string {
	var d []string
	for _, n := range cni.Leavable() {
		d = append(d, cni.MustLookup(n).Display)
	}
	return strings.Join(d, ", ")
}

func validateCNIOptions(o *Options) error {
	for _, c := range o.LeaveCNIState {
		if !slices.Contains(cniLeavable, c) {
			return option.Errorf("LeaveCNIState", "{} takes %s, not %q%s", strings.Join(cniLeavable, " or "), c, choiceHint(c, cniLeavable...))
		}
	}
	if len(o.LeaveCNIState) > 0 && o.PodNetworkCIDR == "" {
		return option.Errorf("LeaveCNIState", "{} needs {PodNetworkCIDR}")
	}
	return nil
}

func (r *CNI) Name() string       { return NameCNI }
func (r *CNI) Prefixes() []string { return []string{wellknown.KeyWeaveDaemonSet} }
func (r *CNI) Lists() []string    { return slices.Concat(state.CNIListed, state.DistributionListed) }
func (r *CNI) Notes() []string    { return r.notes }

// Prepare detects the CNIs, refuses IPAM state no rule moves, and plans
// Weave's range.
func (r *CNI) Prepare(ctx context.Context, v *state.View) error {
	cnis, err := state.DetectCNI(ctx, v)
	if err != nil {
		return err
	}
	r.plan.CNI = cnis
	if len(cnis) == 0 {
		r.notes = append(r.notes, "CNI: unknown (no "+cni.DisplayList()+" objects): check that the CNI reads node.spec.podCIDR or move its pod range by hand")
	}
	for _, c := range cnis {
		r.notes = append(r.notes, "CNI: "+c.String())
		if c.Name == state.CNICalico && c.IPAM == state.IPAMHostLocal && !r.moved(c) {
			r.notes = append(r.notes, "Calico's IPPools are not moved by this build: after the restore, create an IPPool for the new pod CIDR with the old pool's ipipMode/vxlanMode and natOutgoing and delete the old one, or pods' traffic leaves the cluster without NAT")
		}
		if !c.HoldsPodAddresses || r.moved(c) {
			continue
		}
		if !slices.Contains(r.opts.LeaveCNIState, c.Name) {
			return option.Errorf("LeaveCNIState", "%w: %s IPAM (%s) keeps pod addresses in %s, which no enabled rule moves, so its pods would keep getting old-range addresses: give {} %s to move them by hand",
				transform.ErrRefused, c.Name, c.IPAM, c.StateString(), c.Name)
		}
		r.notes = append(r.notes, r.byHand(c))
	}
	if r.plan.Pod != nil {
		return r.planWeave(v)
	}
	return nil
}

// moved reports whether an enabled rule moves the CNI's IPAM state: the
// rule package cni names for it (Cilium's only in the modes whose pools
// it keeps in etcd).
func (r *CNI) moved(c state.CNI) bool {
	row, ok := cni.Lookup(c.Name)
	if !ok || row.IPAMRule == "" || slices.Contains(r.opts.LeaveCNIState, c.Name) {
		return false
	}
	e, err := Lookup(row.IPAMRule)
	if err != nil || !e.Enabled(&r.opts) {
		return false
	}
	return c.Name != state.CNICilium || c.IPAM == state.IPAMClusterPool || c.IPAM == state.IPAMMultiPool
}

// byHand is the note for IPAM state left at the old range (package cni's
// ByHand).
func (r *CNI) byHand(c state.CNI) string {
	newRange := "the new pod CIDR"
	if r.plan.Pod != nil {
		newRange = cidr.Join(r.plan.Pod.New)
	}
	return fmt.Sprintf(cni.MustLookup(c.Name).ByHand, c.StateString(), newRange)
}

// planWeave maps IPALLOC_RANGE when it is the old pod CIDR.
func (r *CNI) planWeave(v *state.View) error {
	o, ok, err := v.Get(wellknown.KeyWeaveDaemonSet)
	if err != nil || !ok {
		return err
	}
	ds, err := state.As[*appsv1.DaemonSet](o, "a DaemonSet")
	if err != nil {
		return fmt.Errorf("%s: %w", o.Key, err)
	}
	cur := weaveRange(ds)
	if cur == "" {
		r.notes = append(r.notes, "weave-net sets no IPALLOC_RANGE, so Weave uses its default 10.32.0.0/12, not the pod CIDR: nothing of Weave's moves")
		return nil
	}
	p, err := netip.ParsePrefix(cur)
	if err != nil {
		return fmt.Errorf("%w: weave-net IPALLOC_RANGE %q is not a CIDR", transform.ErrRefused, cur)
	}
	o4, n4, ok := cidr.PairOf(r.plan.Pod.Old, r.plan.Pod.New, p.Addr())
	switch {
	case !ok || p.Masked() == n4:
		return nil
	case p.Masked() != o4:
		return fmt.Errorf("%w: weave-net IPALLOC_RANGE is %s, not the old pod CIDR %s: Weave hands out pod addresses from its own range, so give it as --old-pod-network-cidr",
			transform.ErrRefused, p, o4)
	}
	r.weave = n4.String()
	return nil
}

func weaveRange(ds *appsv1.DaemonSet) string {
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "IPALLOC_RANGE" {
				return e.Value
			}
		}
	}
	return ""
}

// Apply moves weave-net's IPALLOC_RANGE.
func (r *CNI) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	if obj.Key != wellknown.KeyWeaveDaemonSet || r.weave == "" {
		return transform.Result{}, nil
	}
	ds, err := state.As[*appsv1.DaemonSet](obj, "a DaemonSet")
	if err != nil {
		return transform.Result{}, err
	}
	var changes []transform.Change
	for ci := range ds.Spec.Template.Spec.Containers {
		c := &ds.Spec.Template.Spec.Containers[ci]
		for i := range c.Env {
			if c.Env[i].Name == "IPALLOC_RANGE" && c.Env[i].Value != r.weave {
				changes = append(changes, transform.Change{Field: fmt.Sprintf("containers[%s].env[IPALLOC_RANGE]", c.Name), Old: c.Env[i].Value, New: r.weave})
				c.Env[i].Value = r.weave
			}
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	r.notes = append(r.notes, "weave-net: IPALLOC_RANGE moved; Weave persists its IPAM ring on each node (/var/lib/weave/weave-netdata.db) and does not take a new IPALLOC_RANGE while that file holds the old one: delete it on every node before weave-net starts, then recreate every pod that is not on the host network")
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}
