package cidr

import (
	"fmt"
	"net/netip"
	"strings"
)

// Complete fills in the families a move does not name. named holds the new
// range of each family that moves (at most one per family); recorded is a
// cluster's ranges as recorded (kubeadm-config, the ServiceCIDR, the
// manifests' flags), in their order. The result is the cluster's ranges
// after the move: recorded, in its order, with each family that named
// holds replaced by named's range; a family that only named holds is
// appended. So moving the IPv4 range of "192.168.0.0/16,fd00:10:96::/108"
// to 172.24.0.0/16 gives "172.24.0.0/16,fd00:10:96::/108", and an IPv6-only
// move of an IPv4-first cluster keeps IPv4 first.
func Complete(named, recorded []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(recorded)+len(named))
	used := make([]bool, len(named))
	for _, r := range recorded {
		p := r
		for i, n := range named {
			if SameFamily(n, r) {
				p, used[i] = n, true
				break
			}
		}
		out = append(out, p)
	}
	for i, n := range named {
		if !used[i] {
			out = append(out, n)
		}
	}
	return out
}

// Missing returns the families of recorded that named does not hold.
func Missing(named, recorded []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, r := range recorded {
		found := false
		for _, n := range named {
			found = found || SameFamily(n, r)
		}
		if !found {
			out = append(out, r)
		}
	}
	return out
}

// ParsePair parses "OLD=NEW": two CIDRs of one family.
func ParsePair(s string) (old, new netip.Prefix, err error) {
	o, n, ok := strings.Cut(s, "=")
	if !ok {
		return old, new, fmt.Errorf("%q: want OLD=NEW, e.g. 10.100.0.0/16=172.25.0.0/16", s)
	}
	if old, err = Parse(strings.TrimSpace(o)); err != nil {
		return old, new, fmt.Errorf("%q: %w", s, err)
	}
	if new, err = Parse(strings.TrimSpace(n)); err != nil {
		return old, new, fmt.Errorf("%q: %w", s, err)
	}
	if !SameFamily(old, new) {
		return old, new, fmt.Errorf("%q: %s is %s and %s is %s: a mapping stays within one family", s, old, Family(old), new, Family(new))
	}
	return old, new, nil
}
