package app

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/wellknown"
)

// liveServiceCIDRVersion is the Kubernetes version whose ServiceCIDR
// objects (KEP-1880, networking.k8s.io/v1) let a cluster add service
// ranges while it runs.
const liveServiceCIDRVersion = "1.33"

// printLiveAlternative says, once, whether the change could be made live
// instead: when the new service range only adds addresses (every old range
// inside its new one) and the pod range stays, Kubernetes 1.33+ extends
// the service range with a new ServiceCIDR object, without downtime;
// moving kubernetes.default, the cluster DNS Service or the pod range has
// no live path, which is what this offline migration is for. A service
// range that does not move (--service-cidr naming the cluster's own range)
// gets no alternative: there is nothing to make live.
func printLiveAlternative(out io.Writer, p *rules.Plan) {
	if p == nil || p.Service == nil || len(p.Service.New) == 0 || sameRanges(p.Service.Old, p.Service.New) {
		return
	}
	s := p.Service
	adds := len(s.Old) > 0
	for _, o := range s.Old {
		n, ok := newOfFamily(s.New, o)
		adds = adds && ok && n.Bits() <= o.Bits() && n.Contains(o.Addr())
	}
	podMoves := p.Pod != nil && len(p.Pod.New) > 0 && !slices.Equal(p.Pod.Old, p.Pod.New)
	var moved []string
	for _, m := range s.Services {
		name := strings.TrimPrefix(m.Key, wellknown.Prefix("services"))
		if slices.Equal(m.Old, m.New) || m.Kept {
			continue
		}
		ip := func(v []string) string { return strings.Join(v, ",") }
		switch {
		case name == "default/kubernetes":
			moved = append(moved, fmt.Sprintf("kubernetes.default (%s -> %s)", ip(m.Old), ip(m.New)))
		case s.DNS.IsValid() && slices.Contains(m.New, s.DNS.String()):
			moved = append(moved, fmt.Sprintf("the cluster DNS Service %s (%s -> %s)", name, ip(m.Old), ip(m.New)))
		}
	}
	if podMoves {
		moved = append(moved, fmt.Sprintf("the pod range (%s -> %s)", cidr.Join(p.Pod.Old), cidr.Join(p.Pod.New)))
	}
	fmt.Fprintln(out, "\nLive alternative:")
	if adds && !podMoves && len(moved) == 0 {
		fmt.Fprintf(out, "  the new service range %s only adds addresses to %s: Kubernetes %s+ adds them while the cluster runs, with no downtime\n"+
			"  and no restore: create a ServiceCIDR object (networking.k8s.io/v1) for %s; kube-apiserver then allocates from it\n",
			cidr.Join(s.New), cidr.Join(s.Old), liveServiceCIDRVersion, cidr.Join(s.New))
		return
	}
	why := "it only adds addresses, and the new service range " + cidr.Join(s.New) + " does not hold the old " + cidr.Join(s.Old)
	if len(moved) > 0 {
		why = "it cannot move " + orList(moved)
	}
	fmt.Fprintf(out, "  none: Kubernetes %s+ can extend the service range live with a new ServiceCIDR object (no downtime), but %s;\n"+
		"  that takes this offline migration\n", liveServiceCIDRVersion, why)
}

// newOfFamily is the new range of old's family.
func newOfFamily(news []netip.Prefix, old netip.Prefix) (netip.Prefix, bool) {
	for _, n := range news {
		if n.Addr().Is4() == old.Addr().Is4() {
			return n, true
		}
	}
	return netip.Prefix{}, false
}

// sameRanges reports whether a and b hold the same ranges, in any order.
func sameRanges(a, b []netip.Prefix) bool {
	if len(a) != len(b) {
		return false
	}
	for _, p := range a {
		if !slices.ContainsFunc(b, func(q netip.Prefix) bool { return q.Masked() == p.Masked() }) {
			return false
		}
	}
	return true
}
