package rules

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"

	"github.com/snapshift/snapshift/wellknown"
)

// RangeMove is one range that moves with its addresses at their offsets:
// a ServiceCIDR added beside the default one (--service-cidr-map).
type RangeMove struct {
	Old netip.Prefix `json:"old"`
	New netip.Prefix `json:"new"`
	// ServiceCIDR names the ServiceCIDR object that holds Old.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
}

// ParseServiceCIDRMap parses the ServiceCIDRMap option: "OLD=NEW" entries,
// each a CIDR pair of one family with the new range at least as large,
// no two old or two new ranges overlapping.
func ParseServiceCIDRMap(entries []string) ([]RangeMove, error) {
	var out []RangeMove
	for _, e := range entries {
		op, np, err := cidr.ParsePair(e)
		if err != nil {
			return nil, option.Errorf("ServiceCIDRMap", "{} %w", err)
		}
		if why := cidr.Unusable(np); why != "" {
			return nil, option.Errorf("ServiceCIDRMap", "{} %s: the new range %s %s: %s", e, np, why, cidr.UsableNote)
		}
		for _, m := range out {
			if m.Old.Overlaps(op) || m.New.Overlaps(np) {
				return nil, option.Errorf("ServiceCIDRMap", "{} %q overlaps %s=%s", e, m.Old, m.New)
			}
		}
		out = append(out, RangeMove{Old: op, New: np})
	}
	return out, nil
}

// extraRanges pairs the ServiceCIDRs added beside the default one with the
// ServiceCIDRMap option: every range of every added ServiceCIDR (but a
// terminating one an earlier migration made, which hands out nothing) must
// be mapped, every mapping must name such a range, and the new ranges must
// not overlap the new default ranges, the pod range or addresses in use.
func (r *ServiceCIDR) extraRanges(ctx context.Context, v *state.View, newP []netip.Prefix) ([]RangeMove, error) {
	moves, err := ParseServiceCIDRMap(r.opts.ServiceCIDRMap)
	if err != nil {
		return nil, err
	}
	held := map[netip.Prefix]string{} // old range -> ServiceCIDR name
	var unmapped []string
	for _, kr := range v.Keys(wellknown.PrefixServiceCIDRs) {
		if kr.Key == wellknown.KeyDefaultServiceCIDR {
			continue
		}
		o, ok, err := v.Get(kr.Key)
		if err != nil || !ok {
			return nil, err
		}
		if isKeptServiceCIDR(o) {
			continue // an earlier migration's, terminating: it hands out nothing
		}
		name := strings.TrimPrefix(kr.Key, wellknown.PrefixServiceCIDRs)
		cidrs, _ := state.ServiceCIDRSpec(o.Value.Obj)
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return nil, fmt.Errorf("%s: spec.cidrs %q is not a CIDR", kr.Key, c)
			}
			held[p.Masked()] = name
			if !mapped(moves, p.Masked()) {
				unmapped = append(unmapped, fmt.Sprintf("%s (%s)", name, c))
			}
		}
	}
	if len(unmapped) > 0 {
		sort.Strings(unmapped)
		return nil, fmt.Errorf("%w: %w", transform.ErrRefused, option.Errorf("ServiceCIDRMap",
			"the snapshot holds ServiceCIDRs added beside the default one that {ServiceCIDR} does not move: %s; give {} OLD=NEW for each range (or delete them from the cluster once no Service uses them, and take a new snapshot)",
			strings.Join(unmapped, ", ")))
	}
	for i, m := range moves {
		name, ok := held[m.Old]
		if !ok {
			return nil, option.Errorf("ServiceCIDRMap", "{} %s=%s: no ServiceCIDR besides the default one holds %s", m.Old, m.New, m.Old)
		}
		moves[i].ServiceCIDR = name
		for _, n := range newP {
			if n.Overlaps(m.New) {
				return nil, option.Errorf("ServiceCIDRMap", "{} %s=%s: the new range overlaps the new service range %s", m.Old, m.New, n)
			}
		}
		for _, o := range moves[:i] {
			if o.Old.Overlaps(m.New) {
				return nil, option.Errorf("ServiceCIDRMap", "{} %s=%s: the new range overlaps %s, which moves", m.Old, m.New, o.Old)
			}
		}
		if err := r.plan.checkClashes(v, "ServiceCIDRMap", "service", []netip.Prefix{m.Old}, []netip.Prefix{m.New}); err != nil {
			return nil, err
		}
	}
	return moves, r.extraDisjointFromPods(ctx, v, moves)
}

// extraDisjointFromPods refuses a mapped range over the pod range: the new
// one when the pod range moves too, else the one the snapshot records.
func (r *ServiceCIDR) extraDisjointFromPods(ctx context.Context, v *state.View, moves []RangeMove) error {
	var pod []netip.Prefix
	if r.opts.PodNetworkCIDR != "" {
		pod, _ = cidr.ParseList(r.opts.PodNetworkCIDR)
	} else {
		nets, err := r.plan.networks(ctx, v)
		if err != nil {
			return err
		}
		pod, _ = recordedPrefixes(nets.PodCIDR)
	}
	for _, m := range moves {
		for _, p := range pod {
			if p.Overlaps(m.New) {
				return option.Errorf("ServiceCIDRMap", "{} %s=%s: the new range overlaps the pod range %s", m.Old, m.New, p)
			}
		}
	}
	return nil
}

func mapped(moves []RangeMove, p netip.Prefix) bool {
	for _, m := range moves {
		if m.Old == p {
			return true
		}
	}
	return false
}
