package rules

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// serviceWish is what the service-IP planner starts from: the Services'
// addresses and what the options ask for. It needs no snapshot.
type serviceWish struct {
	// IPs maps every Service's key to its cluster IPs, in order. A headless
	// or ExternalName Service is present with none.
	IPs map[string][]netip.Addr
	// Old and New are the service ranges, paired by family (pairByFamily).
	Old, New []netip.Prefix
	// Extra are the added ServiceCIDRs' ranges that move (ServiceCIDRMap);
	// an address inside one of their old ranges moves by it.
	Extra []RangeMove
	// Keep lists the keys of the Services that keep their addresses.
	Keep []string
	// Repack gives the Services whose address does not fit (or clashes)
	// free addresses, in key order, instead of refusing (see freeAddress).
	Repack bool
	// DNS is the cluster DNS Service's key.
	DNS string
	// Bridge is the key of the DNS bridge to create beside the kept DNS
	// Service, "" for none. An existing Service of that name is left alone.
	Bridge string
}

// serviceLayout is the service-IP planner's answer.
type serviceLayout struct {
	// Plan holds the ranges, the moves, the bridge and the DNS address;
	// OldSource is left to the caller.
	Plan *ServicePlan
	// Used maps every address in use after the move (the bridge's
	// included) to its Service's key.
	Used map[netip.Addr]string
	// Notes are what the user should know about the layout.
	Notes []string
}

// servicePlanner carries the planner's state from one step to the next.
type servicePlanner struct {
	w     serviceWish
	keep  map[string]bool
	keys  []string                // the Services with a cluster IP, sorted
	final map[string][]netip.Addr // each Service's addresses after the move
	needs map[string][]int        // indexes of addresses awaiting a repacked one
	owner map[netip.Addr]string
	notes []string

	bridge netip.Addr
}

// planServices maps every Service's cluster IPs to the new ranges: each
// address keeps its offset (default/kubernetes takes the first address),
// kept Services keep theirs, and with Repack the ones that do not fit or
// clash take free addresses, upper band first. It refuses, listing every
// Service at fault, when an offset does not fit or two Services would
// share an address.
func planServices(w serviceWish) (*serviceLayout, error) {
	if err := checkKept(w.Keep, w.IPs); err != nil {
		return nil, err
	}
	p := &servicePlanner{w: w, keep: map[string]bool{}, final: map[string][]netip.Addr{},
		needs: map[string][]int{}, owner: map[netip.Addr]string{}}
	for _, k := range w.Keep {
		p.keep[k] = true
	}
	for k, ips := range w.IPs {
		if len(ips) > 0 {
			p.keys = append(p.keys, k)
		}
	}
	sort.Strings(p.keys)
	for _, step := range []func() error{p.mapOffsets, p.claim, p.planBridge, p.repack, p.checkCapacity} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return p.layout(), nil
}

// checkKept refuses kept Services that are not in the snapshot or have no
// cluster IP, naming all of them, sorted.
func checkKept(keep []string, ips map[string][]netip.Addr) error {
	var missing, headless []string
	keys := slices.Clone(keep)
	sort.Strings(keys)
	for _, k := range slices.Compact(keys) {
		switch as, ok := ips[k]; {
		case !ok:
			missing = append(missing, svcName(k))
		case len(as) == 0:
			headless = append(headless, svcName(k))
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, strings.Join(missing, ", ")+": no such Service with a cluster IP in the snapshot"+nearServices(missing, ips))
	}
	if len(headless) > 0 {
		problems = append(problems, strings.Join(headless, ", ")+": the Service has no cluster IP to keep (headless or ExternalName)")
	}
	if len(problems) > 0 {
		return option.Errorf("KeepServiceIPs", "{} %s", strings.Join(problems, "; "))
	}
	return nil
}

// nearServices is "; did you mean kube-system/kube-dns?" for the Services
// with a cluster IP nearest in spelling to the missing ones, or "".
func nearServices(missing []string, ips map[string][]netip.Addr) string {
	var names, near []string
	for k, as := range ips {
		if len(as) > 0 {
			names = append(names, svcName(k))
		}
	}
	for _, m := range missing {
		near = append(near, wellknown.Near(m, names)...)
	}
	sort.Strings(near)
	near = slices.Compact(near)
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// mapOffsets gives every address that moves the address at its offset in
// the new range of its family; with Repack, the ones that do not fit wait
// for a repacked address.
func (p *servicePlanner) mapOffsets() error {
	var misfits []string
	far := map[netip.Prefix][]*big.Int{} // per new range, the offsets it cannot hold
	for _, key := range p.keys {
		ips := p.w.IPs[key]
		out := slices.Clone(ips)
		for i, a := range ips {
			n, off, moves := p.target(key, a)
			switch {
			case !moves:
			case cidr.Usable(n, off):
				out[i], _ = cidr.AddrAt(n, off)
			case p.w.Repack:
				p.needs[key] = append(p.needs[key], i)
			default:
				misfits = append(misfits, fmt.Sprintf("%s (%s, offset %s)", svcName(key), a, off))
				far[n] = append(far[n], off)
			}
		}
		p.final[key] = out
	}
	if len(misfits) > 0 {
		sort.Strings(misfits)
		// A summary, however many Services: how many, the offsets' span and
		// the smallest range that keeps them all; a few examples; every one
		// in -o json's details.
		err := option.Errorf("ServiceCIDR", "%w: the new service range %s is too small to keep %d Services at their offsets (%s; e.g. %s); %s; choose a larger range or pass {Repack}",
			transform.ErrRefused, cidr.Join(p.w.New), len(misfits), offsetSpan(far), capList(misfits, misfitExamples, ", "), smallestRanges(far))
		err.Details = misfits // all of them, for -o json
		return err
	}
	return nil
}

// misfitExamples is how many Services a too-small-range refusal names.
const misfitExamples = 3

// offsetSpan is the lowest and highest offset of far: "offsets 775 to
// 65534".
func offsetSpan(far map[netip.Prefix][]*big.Int) string {
	var lo, hi *big.Int
	for _, offs := range far {
		for _, o := range offs {
			if lo == nil || o.Cmp(lo) < 0 {
				lo = o
			}
			if hi == nil || o.Cmp(hi) > 0 {
				hi = o
			}
		}
	}
	if lo.Cmp(hi) == 0 {
		return "offset " + lo.String()
	}
	return "offsets " + lo.String() + " to " + hi.String()
}

// smallestRanges names, for each new range of far, the smallest range at
// its address that holds every offset it cannot: "the smallest range at
// that address that keeps every one where it is: 172.24.0.0/16".
func smallestRanges(far map[netip.Prefix][]*big.Int) string {
	var fits []string
	for n, offs := range far {
		fit := ""
		for bits := n.Bits() - 1; bits >= 0; bits-- {
			wider := netip.PrefixFrom(n.Addr(), bits).Masked()
			if wider.Addr() != n.Masked().Addr() {
				break // a wider range starts lower: the offsets would land elsewhere
			}
			if !slices.ContainsFunc(offs, func(o *big.Int) bool { return !cidr.Usable(wider, o) }) {
				fit = wider.String()
				break
			}
		}
		if fit == "" {
			return "no range starting at " + n.Masked().Addr().String() + " keeps them where they are"
		}
		fits = append(fits, fit)
	}
	sort.Strings(fits)
	return "the smallest range at that address that keeps every one where it is: " + strings.Join(fits, ", ")
}

// target returns the new range and the offset Service key's address a
// moves to, and false when a stays: its family is not remapped, it is
// outside the old range, or the Service is kept.
func (p *servicePlanner) target(key string, a netip.Addr) (netip.Prefix, *big.Int, bool) {
	o, n, ok := p.pairOf(a)
	switch {
	case !ok:
		return n, nil, false
	case !o.Contains(a):
		if !n.Contains(a) {
			p.notef("%s: %s is outside the old range %s and is left unchanged", key, a, o)
		}
		return n, nil, false
	case p.keep[key]:
		return n, nil, false
	}
	off, _ := cidr.Offset(o, a)
	if key == keyDefaultKubernetes {
		off = big.NewInt(1) // the apiserver's own Service: first address of the range
	}
	return n, off, true
}

// claim gives every address its owner, kept Services first so they win;
// two Services on one address are a clash, which Repack resolves by moving
// the later one (unless it is kept or default/kubernetes).
func (p *servicePlanner) claim() error {
	order := slices.Clone(p.keys)
	sort.SliceStable(order, func(i, j int) bool { return p.keep[order[i]] && !p.keep[order[j]] })
	var clashes []string
	for _, key := range order {
		for i, a := range p.final[key] {
			if slices.Contains(p.needs[key], i) {
				continue
			}
			prev, taken := p.owner[a]
			switch {
			case !taken || prev == key:
				p.owner[a] = key
			case p.w.Repack && !p.keep[key] && key != keyDefaultKubernetes:
				p.needs[key] = append(p.needs[key], i)
			default:
				clashes = append(clashes, fmt.Sprintf("%s and %s at %s", svcName(prev), svcName(key), a))
			}
		}
	}
	if len(clashes) > 0 {
		sort.Strings(clashes)
		return fmt.Errorf("%w: after the mapping two Services would share an address: %s", transform.ErrRefused, strings.Join(clashes, "; "))
	}
	return nil
}

// planBridge reserves the address the kept DNS Service would have been
// mapped to for its bridge.
func (p *servicePlanner) planBridge() error {
	if p.w.Bridge == "" {
		return nil
	}
	if _, exists := p.w.IPs[p.w.Bridge]; exists {
		p.notef("%s already exists; no new bridge created", p.w.Bridge)
		return nil
	}
	dns := p.w.IPs[p.w.DNS]
	if len(dns) == 0 {
		return option.Errorf("DNSBridge", "{}: the DNS Service %s has no cluster IP in the snapshot", svcName(p.w.DNS))
	}
	o, n, ok := cidr.PairOf(p.w.Old, p.w.New, dns[0])
	if !ok || !o.Contains(dns[0]) {
		return option.Errorf("DNSBridge", "{}: %s (%s) is not in the old service range", svcName(p.w.DNS), dns[0])
	}
	off, _ := cidr.Offset(o, dns[0])
	if !cidr.Usable(n, off) {
		return option.Errorf("DNSBridge", "%w: {}: offset %s of %s does not fit the new range %s", transform.ErrRefused, off, dns[0], n)
	}
	a, _ := cidr.AddrAt(n, off)
	if prev, taken := p.owner[a]; taken {
		return option.Errorf("DNSBridge", "%w: {}: %s is taken by %s", transform.ErrRefused, a, prev)
	}
	p.owner[a] = p.w.Bridge
	p.bridge = a
	return nil
}

// repack gives the waiting addresses free usable addresses of their new
// range (upper band first, as kube-apiserver does), Services in key order.
func (p *servicePlanner) repack() error {
	for _, key := range p.keys {
		for _, i := range p.needs[key] {
			_, n, _ := p.pairOf(p.final[key][i])
			a, err := freeAddress(n, p.owner)
			if err != nil {
				return option.Errorf("Repack", "%w: {}: %v", transform.ErrRefused, err)
			}
			p.owner[a] = key
			p.final[key][i] = a
		}
	}
	return nil
}

// checkCapacity refuses a new range whose bitmap cannot hold every address
// of its family.
func (p *servicePlanner) checkCapacity() error {
	news := slices.Clone(p.w.New)
	for _, m := range p.w.Extra {
		news = append(news, m.New)
	}
	for _, n := range news {
		used := 0
		for a := range p.owner {
			if n.Contains(a) {
				used++
			}
		}
		if count := cidr.NewServiceRange(n).Count; big.NewInt(int64(used)).Cmp(count) > 0 {
			return fmt.Errorf("%w: the new service range %s holds %s addresses, but %d Services need one", transform.ErrRefused, n, count, used)
		}
	}
	return nil
}

// layout records the moves: every Service that changes or is kept, in key
// order.
func (p *servicePlanner) layout() *serviceLayout {
	// Sized exactly: the plan lives through the stream, and a map or a
	// slice grown by appends holds up to twice its entries.
	moved, listed := p.count()
	sp := &ServicePlan{Old: p.w.Old, New: p.w.New, Extra: p.w.Extra, IPs: make(map[netip.Addr]netip.Addr, moved), Bridge: p.bridge}
	if listed > 0 {
		sp.Services = make([]ServiceMove, 0, listed) // none stays nil: "services": null in JSON
	}
	for _, key := range p.keys {
		ips, final := p.w.IPs[key], p.final[key]
		mv := ServiceMove{Key: key, Old: addrStrings(ips), New: addrStrings(final), Kept: p.keep[key], Packed: len(p.needs[key]) > 0}
		changed := false
		for i, a := range ips {
			if final[i] != a {
				sp.IPs[a] = final[i]
				changed = true
			}
		}
		if changed || mv.Kept {
			sp.Services = append(sp.Services, mv)
		}
		if key == p.w.DNS {
			sp.DNS = final[0]
		}
		if mv.Kept {
			p.noteKeptOutside(key)
		}
	}
	return &serviceLayout{Plan: sp, Used: p.owner, Notes: p.notes}
}

// count returns how many addresses move and how many Services layout
// lists (the ones that change or are kept).
func (p *servicePlanner) count() (moved, listed int) {
	for _, key := range p.keys {
		changed := 0
		for i, a := range p.w.IPs[key] {
			if p.final[key][i] != a {
				changed++
			}
		}
		moved += changed
		if changed > 0 || p.keep[key] {
			listed++
		}
	}
	return moved, listed
}

// noteKeptOutside tells the user to move a kept address that is outside
// the new range later.
func (p *servicePlanner) noteKeptOutside(key string) {
	for _, a := range p.w.IPs[key] {
		if _, n, ok := p.pairOf(a); ok && !n.Contains(a) {
			p.notef("%s keeps %s, outside the new range %s: move it later (delete and recreate the Service with a new-range clusterIP) once nothing depends on the old address",
				svcName(key), a, n)
		}
	}
}

// pairOf returns the old and new range address a moves by: an added
// ServiceCIDR's that holds it, else the default range pair of its family.
func (p *servicePlanner) pairOf(a netip.Addr) (o, n netip.Prefix, ok bool) {
	for _, m := range p.w.Extra {
		if m.Old.Contains(a) {
			return m.Old, m.New, true
		}
	}
	return cidr.PairOf(p.w.Old, p.w.New, a)
}

func (p *servicePlanner) notef(format string, args ...any) {
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
}

// freeAddress returns a usable address of n not in used, as kube-apiserver
// hands out dynamic ones (KEP-3070): from the upper band first, keeping the
// lower band (the first rangeOffset addresses after the network address)
// for Services that ask for a static clusterIP, then from the lower band.
// Within a band it takes the lowest free address, so a plan is repeatable.
func freeAddress(n netip.Prefix, used map[netip.Addr]string) (netip.Addr, error) {
	count := cidr.NewServiceRange(n).Count
	lower := big.NewInt(int64(rangeOffset(n)))
	one := big.NewInt(1)
	bands := [][2]*big.Int{{new(big.Int).Add(lower, one), count}, {one, lower}}
	for _, band := range bands {
		for off := new(big.Int).Set(band[0]); off.Cmp(band[1]) <= 0; off.Add(off, one) {
			a, err := cidr.AddrAt(n, off)
			if err != nil {
				break
			}
			if _, taken := used[a]; !taken && cidr.Usable(n, off) {
				return a, nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address left in %s", n)
}

// rangeOffset is the size of kube-apiserver's lower (static) band in n:
// min(max(16, size/16), 256), none for ranges of 16 addresses or fewer
// (pkg/registry/core/service/ipallocator/bitmap.go, calculateRangeOffset).
func rangeOffset(n netip.Prefix) int {
	size := cidr.Size(n)
	switch {
	case size.Cmp(big.NewInt(16)) <= 0:
		return 0
	case size.Cmp(big.NewInt(16*256)) >= 0:
		return 256
	}
	return max(16, int(size.Int64()/16))
}

// svcName is a Service's "namespace/name" from its key.
func svcName(key string) string { return strings.TrimPrefix(key, wellknown.PrefixServices) }
