package rules

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// Cilium's multi-pool IPAM (cilium.io CiliumPodIPPool): the operator hands
// each node CIDRs of maskSize from a pool's CIDRs (spec.ipam.pools.allocated
// of its CiliumNode) and, at start, restores those allocations from the
// CiliumNodes before it hands out new ones. A pool CIDR inside the old pod
// range moves by offset, like a node's, and so do the allocations from it;
// pools outside the old range stay.

// planPodIPPools maps the CiliumPodIPPools' CIDRs that lie in the old pod
// range, and their copy in cilium-config's auto-create-cilium-pod-ip-pools.
// A pool CIDR wider than the old pod range (it holds more than the range
// being moved) is refused by name.
func (r *Cilium) planPodIPPools(v *state.View, data map[string]string) error {
	objs, err := v.List(wellknown.PrefixCiliumPools)
	if err != nil {
		return err
	}
	r.pools = map[string]map[string]string{}
	var problems []string
	for _, o := range objs {
		u, err := state.As[*unstructured.Unstructured](o, "a custom resource")
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		moves := map[string]string{}
		for _, fam := range []string{"ipv4", "ipv6"} {
			cidrs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", fam, "cidrs")
			for _, c := range cidrs {
				n, moved, err := r.mapPoolCIDR(c)
				if err != nil {
					problems = append(problems, fmt.Sprintf("CiliumPodIPPool %s: %v", u.GetName(), err))
				} else if moved {
					moves[c] = n
				}
			}
		}
		r.pools[o.Key] = moves
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return option.Errorf("LeaveCNIState", "%w: these Cilium pools cannot move with the pod CIDR: %s; give {} cilium to move them by hand", transform.ErrRefused, strings.Join(problems, "; "))
	}
	const autoCreate = "auto-create-cilium-pod-ip-pools"
	if s, ok := data[autoCreate]; ok {
		if n := cidrToken.ReplaceAllStringFunc(s, func(t string) string {
			// "ipv4-cidrs:10.244.0.0/16": the key's colon runs into the token.
			lead := ""
			if _, err := netip.ParsePrefix(t); err != nil && strings.HasPrefix(t, ":") {
				lead, t = ":", t[1:]
			}
			if m, moved, err := r.mapPoolCIDR(t); err == nil && moved {
				return lead + m
			}
			return lead + t
		}); n != s {
			r.pool[autoCreate] = n
		}
	}
	return nil
}

// mapPoolCIDR maps a pool CIDR inside the old pod range; moved is false
// for one outside it (or already in the new range).
func (r *Cilium) mapPoolCIDR(c string) (string, bool, error) {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		return c, false, fmt.Errorf("%q is not a CIDR", c)
	}
	p = p.Masked()
	o, n, ok := cidr.PairOf(r.plan.Pod.Old, r.plan.Pod.New, p.Addr())
	switch {
	case !ok || !o.Overlaps(p) || o == n:
		return c, false, nil
	case p.Bits() < o.Bits():
		return c, false, fmt.Errorf("%s is wider than the old pod CIDR %s", p, o)
	}
	np, err := mapNodeCIDR(r.plan.Pod.Old, r.plan.Pod.New, c)
	if err != nil {
		return c, false, err
	}
	return np.String(), np != p, nil
}

// poolAllocations lists a CiliumNode's multi-pool allocations that lie in
// the old pod range (allocations from other pools stay).
func (r *Cilium) poolAllocations(u *unstructured.Unstructured) []string {
	allocated, _, _ := unstructured.NestedSlice(u.Object, "spec", "ipam", "pools", "allocated")
	var out []string
	for _, e := range allocated {
		a, _ := e.(map[string]any)
		list, _ := a["cidrs"].([]any)
		for _, c := range list {
			s, _ := c.(string)
			if p, err := netip.ParsePrefix(s); err == nil {
				if o, _, ok := cidr.PairOf(r.plan.Pod.Old, r.plan.Pod.New, p.Addr()); ok && o.Contains(p.Addr()) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// editPodIPPool rewrites a CiliumPodIPPool's moved CIDRs; maskSize stays.
func editPodIPPool(u *unstructured.Unstructured, moves map[string]string) []transform.Change {
	var changes []transform.Change
	spec, _ := u.Object["spec"].(map[string]any)
	for _, fam := range []string{"ipv4", "ipv6"} {
		f, _ := spec[fam].(map[string]any)
		list, _ := f["cidrs"].([]any)
		for i, c := range list {
			if s, ok := c.(string); ok && moves[s] != "" {
				changes = append(changes, transform.Change{Field: "spec." + fam + ".cidrs", Old: s, New: moves[s]})
				list[i] = moves[s]
			}
		}
	}
	return changes
}
