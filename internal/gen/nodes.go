package gen

import (
	"fmt"
	"net/netip"
)

// podCIDRAllocator hands out disjoint node pod CIDRs inside a /16 cluster CIDR, the way an
// operator who mixes node sizes ends up with them: mostly /26 (62 pods), every third node a /24
// where room allows, and /27 or /28 when the range gets tight. It works on /28 granules
// (16 addresses), aligned first fit.
type podCIDRAllocator struct {
	base netip.Prefix
	used [4096]bool // one per /28 of the /16
	free int
}

func newPodCIDRAllocator(cluster netip.Prefix) (*podCIDRAllocator, error) {
	if cluster.Bits() != 16 || !cluster.Addr().Is4() {
		return nil, fmt.Errorf("gen: the pod CIDR allocator needs an IPv4 /16, not %s", cluster)
	}
	return &podCIDRAllocator{base: cluster.Masked(), free: 4096}, nil
}

func (a *podCIDRAllocator) granule(p netip.Prefix) (first, n int) {
	b := p.Addr().As4()
	first = (int(b[2])<<8 | int(b[3])) >> 4
	n = 1 << (28 - p.Bits())
	if p.Bits() > 28 {
		n = 1
	}
	return first, n
}

// reserve marks p (a node CIDR that already exists) as used.
func (a *podCIDRAllocator) reserve(p netip.Prefix) error {
	if !a.base.Contains(p.Addr()) || p.Bits() < 16 {
		return fmt.Errorf("gen: %s is not inside %s", p, a.base)
	}
	first, n := a.granule(p.Masked())
	for i := first; i < first+n; i++ {
		if !a.used[i] {
			a.used[i] = true
			a.free--
		}
	}
	return nil
}

// alloc returns the first free aligned prefix of the given mask size (24..28).
func (a *podCIDRAllocator) alloc(bits int) (netip.Prefix, bool) {
	n := 1 << (28 - bits)
next:
	for first := 0; first+n <= len(a.used); first += n {
		for i := first; i < first+n; i++ {
			if a.used[i] {
				continue next
			}
		}
		for i := first; i < first+n; i++ {
			a.used[i] = true
		}
		a.free -= n
		b := a.base.Addr().As4()
		off := first << 4
		b[2], b[3] = byte(off>>8), byte(off)
		return netip.PrefixFrom(netip.AddrFrom4(b), bits), true
	}
	return netip.Prefix{}, false
}

// next allocates the CIDR of node j, with remaining nodes still to place after it.
func (a *podCIDRAllocator) next(j, remaining int) (netip.Prefix, error) {
	// Granules the rest will need at least: /26 each while that fits, else /27, else /28.
	unit := 4
	if a.free < 4*(remaining+1) {
		unit = 2
	}
	if a.free < 2*(remaining+1) {
		unit = 1
	}
	prefs := []int{26, 27, 28}
	if j%3 == 0 {
		prefs = []int{24, 26, 27, 28}
	}
	for _, bits := range prefs {
		g := 1 << (28 - bits)
		if a.free-g < unit*remaining {
			continue
		}
		if p, ok := a.alloc(bits); ok {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("gen: no room left in %s for another node CIDR (%d nodes is too many)", a.base, j+remaining+1)
}
