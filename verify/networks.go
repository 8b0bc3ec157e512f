package verify

// The network invariants: with the new service and pod CIDRs given, the
// snapshot is read once into plain data (serviceState, state.Networks) and
// every check is a pure function of that data returning its problems.

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// serviceIP is one ClusterIP of one Service.
type serviceIP struct {
	key  string // the Service's etcd key
	addr netip.Addr
	dns  bool // the Service is the cluster DNS Service or a DNS bridge
}

// rangeAlloc is one service IP RangeAllocation as stored.
type rangeAlloc struct {
	key   string
	valid bool // the stored object is a RangeAllocation
	cidr  string
	data  []byte
}

// ipAddress is one IPAddress object and its parentRef.
type ipAddress struct {
	key                   string
	ns, name, group, resc string
}

// serviceState is what the Service checks read.
type serviceState struct {
	ips         []serviceIP // every ClusterIP of every Service but ExternalName ones, in key order
	ranges      []rangeAlloc
	ipAddresses []ipAddress
	defaultCIDR []string // the default ServiceCIDR's spec.cidrs
	hasDefault  bool     // the default ServiceCIDR exists
	// extraCIDRs are the other ServiceCIDRs' spec.cidrs, by key.
	extraCIDRs map[string][]string
}

// parseServiceCIDRMap parses Config.ServiceCIDRMap ("OLD=NEW" entries).
func parseServiceCIDRMap(entries []string) (map[netip.Prefix]netip.Prefix, error) {
	out := map[netip.Prefix]netip.Prefix{}
	for _, e := range entries {
		op, np, err := cidr.ParsePair(e)
		if err != nil {
			return nil, option.Errorf("ServiceCIDRMap", "{} %w", err)
		}
		out[op] = np
	}
	return out, nil
}

// checkExtraServiceCIDRs: no ServiceCIDR still holds a mapped old range,
// and every mapped new range is held by one.
func checkExtraServiceCIDRs(cidrs map[string][]string, extra map[netip.Prefix]netip.Prefix) []string {
	var probs []string
	held := map[netip.Prefix]bool{}
	for key, cs := range cidrs {
		for _, c := range cs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				continue
			}
			held[p.Masked()] = true
			if n, ok := extra[p.Masked()]; ok {
				probs = append(probs, fmt.Sprintf("%s: still holds %s (want %s)", key, c, n))
			}
		}
	}
	for o, n := range extra {
		if !held[n] {
			probs = append(probs, fmt.Sprintf("no ServiceCIDR holds %s (the new range of %s)", n, o))
		}
	}
	sort.Strings(probs)
	return probs
}

// checkNetworks checks the snapshot against the new CIDRs of cfg.
func checkNetworks(ctx context.Context, c *checker, v *state.View, cfg Config) error {
	svcNet, podNet, err := parseNetworks(cfg)
	if err != nil {
		return err
	}
	// An empty default prefix (another --etcd-prefix) would pass every
	// check below on no objects at all.
	var missing []string
	if len(svcNet) > 0 && len(v.Keys(wellknown.PrefixServices)) == 0 {
		missing = append(missing, v.Missing("Services", wellknown.PrefixServices))
	}
	if len(podNet) > 0 && len(v.Keys(wellknown.PrefixNodes)) == 0 {
		missing = append(missing, v.Missing("Nodes", wellknown.PrefixNodes))
	}
	if len(missing) > 0 {
		if err := v.WrongPrefix(); err != nil {
			return err
		}
	}
	c.add("the objects to check are there", missing, "Services and Nodes under %s", wellknown.DefaultPrefix)
	if len(missing) > 0 {
		return nil
	}
	nets, err := state.Detect(ctx, v)
	if err != nil {
		return err
	}
	// A family the options do not name did not move: it is checked at the
	// range the snapshot records for it (one family of a dual-stack
	// cluster moved), in the recorded family order.
	svcNet = completeFamilies(svcNet, nets.ServiceCIDR)
	podNet = completeFamilies(podNet, nets.PodCIDR)
	var dnsIPs []string
	if len(svcNet) > 0 {
		if err := checkDNSService(v, cfg.DNSService); err != nil {
			return err
		}
		s, err := readServiceState(v, wellknown.PrefixServices+cfg.DNSService)
		if err != nil {
			return err
		}
		dnsIPs = s.dnsIPs()
		extra, err := parseServiceCIDRMap(cfg.ServiceCIDRMap)
		if err != nil {
			return err
		}
		addServiceChecks(c, s, svcNet, extra, cfg.KeepServiceIPs)
	}
	if len(podNet) > 0 {
		c.add("node pod CIDRs inside the cluster CIDR and disjoint", checkNodeCIDRs(nets.Nodes, podNet), "%d nodes", len(nets.Nodes))
		if err := addCNIChecks(c, v); err != nil {
			return err
		}
	}
	c.add("configuration agrees with the CIDRs", checkConfiguration(nets, svcNet, podNet, dnsIPs),
		"kubeadm-config, kubelet-config, kube-proxy, flannel, ServiceCIDR, RangeAllocation")
	return nil
}

// checkDNSService refuses a --dns-service other than the default that names
// no Service of the snapshot, with the names nearest to it.
func checkDNSService(v *state.View, dns string) error {
	if dns == defaultDNSService {
		return nil
	}
	var names []string
	for _, k := range v.Keys(wellknown.PrefixServices) {
		if k.Key == wellknown.PrefixServices+dns {
			return nil
		}
		names = append(names, strings.TrimPrefix(k.Key, wellknown.PrefixServices))
	}
	hint := ""
	if near := wellknown.Near(dns, names); len(near) > 0 {
		hint = "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return option.Errorf("DNSService", "{} %s: no such Service in the snapshot%s", dns, hint)
}

// completeFamilies adds to named (the new ranges of the families that
// moved) the recorded range of every other family, in the order of the
// first record that holds every family; nil stays nil (not checked).
func completeFamilies(named []netip.Prefix, srcs []state.Source) []netip.Prefix {
	if len(named) == 0 {
		return nil
	}
	var recorded []netip.Prefix
	for _, s := range srcs {
		if s.Kind == state.SourceNodes {
			continue
		}
		ps, err := cidr.ParseList(strings.Join(s.CIDRs, ","))
		if err != nil {
			continue
		}
		if len(ps) > len(recorded) {
			recorded = ps
		}
	}
	return cidr.Complete(named, recorded)
}

// parseNetworks parses the new CIDRs (ranges a cluster can use); an empty
// one is not given (nil).
func parseNetworks(cfg Config) (svc, pod []netip.Prefix, err error) {
	if cfg.ServiceCIDR != "" {
		if svc, err = cidr.ParseUsable(cfg.ServiceCIDR); err != nil {
			return nil, nil, option.Errorf("ServiceCIDR", "{}: %w", err)
		}
	}
	if cfg.PodNetworkCIDR != "" {
		if pod, err = cidr.ParseUsable(cfg.PodNetworkCIDR); err != nil {
			return nil, nil, option.Errorf("PodNetworkCIDR", "{}: %w", err)
		}
	}
	return svc, pod, nil
}

// addServiceChecks runs the checks of the service range.
func addServiceChecks(c *checker, s *serviceState, svcNet []netip.Prefix, extra map[netip.Prefix]netip.Prefix, keep []string) {
	owner := owners(s.ips)
	all := slices.Clone(svcNet)
	for _, n := range extra {
		all = append(all, n)
	}
	exempt := ""
	if len(keep) > 0 {
		exempt = "; exempt: " + strings.Join(keep, ",")
	}
	c.add("Service ClusterIPs in the new range", checkServicesInRange(s.ips, all, keep), "%d Service addresses%s", len(owner), exempt)
	c.add("no duplicate ClusterIPs", checkDuplicateIPs(s.ips), "")
	c.add("RangeAllocation matches the Services", checkRangeAllocations(s.ranges, svcNet, owner), "")
	if len(s.ipAddresses) > 0 {
		c.add("IPAddress objects match the Services", checkIPAddresses(s.ipAddresses, all, owner), "%d IPAddress objects", len(s.ipAddresses))
	}
	if len(extra) > 0 {
		c.add("added ServiceCIDRs moved", checkExtraServiceCIDRs(s.extraCIDRs, extra), "%d mapped ranges", len(extra))
	}
	if s.hasDefault {
		c.add("default ServiceCIDR is the new range", checkDefaultServiceCIDR(s.defaultCIDR, svcNet), "")
	}
}

// readServiceState reads the Services, the RangeAllocations, the IPAddress
// objects and the default ServiceCIDR. dnsKey is the DNS Service's key.
func readServiceState(v *state.View, dnsKey string) (*serviceState, error) {
	s := &serviceState{}
	var err error
	if s.ips, err = readServiceIPs(v, dnsKey); err != nil {
		return nil, err
	}
	if s.ranges, err = readRanges(v); err != nil {
		return nil, err
	}
	if s.ipAddresses, err = readIPAddresses(v); err != nil {
		return nil, err
	}
	o, ok, err := v.Get(wellknown.KeyDefaultServiceCIDR)
	if err != nil {
		return nil, err
	}
	if ok {
		s.defaultCIDR, _ = state.ServiceCIDRSpec(o.Value.Obj)
		s.hasDefault = true
	}
	s.extraCIDRs = map[string][]string{}
	err = v.Each(wellknown.PrefixServiceCIDRs, func(o *state.Object) error {
		if o.Key != wellknown.KeyDefaultServiceCIDR {
			s.extraCIDRs[o.Key], _ = state.ServiceCIDRSpec(o.Value.Obj)
		}
		return nil
	})
	return s, err
}

// readServiceIPs lists every parsable ClusterIP of every Service that is not
// of type ExternalName.
func readServiceIPs(v *state.View, dnsKey string) ([]serviceIP, error) {
	var out []serviceIP
	err := v.Each(wellknown.PrefixServices, func(o *state.Object) error {
		svc, ok := o.Value.Obj.(*corev1.Service)
		if !ok || svc.Spec.Type == corev1.ServiceTypeExternalName {
			return nil
		}
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		dns := o.Key == dnsKey || svc.Annotations[state.AnnotationBridgeFor] != ""
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, serviceIP{key: o.Key, addr: a, dns: dns})
			}
		}
		return nil
	})
	return out, err
}

// readRanges reads the primary and secondary service IP RangeAllocations.
func readRanges(v *state.View) ([]rangeAlloc, error) {
	ars, err := state.ServiceAllocatorRanges(v)
	if err != nil {
		return nil, err
	}
	var out []rangeAlloc
	for _, ar := range ars {
		r := rangeAlloc{key: ar.Key}
		if ra := ar.Range; ra != nil {
			r.valid, r.cidr, r.data = true, ra.Range, ra.Data
		}
		out = append(out, r)
	}
	return out, nil
}

// readIPAddresses reads every IPAddress object's parentRef.
func readIPAddresses(v *state.View) ([]ipAddress, error) {
	var out []ipAddress
	err := v.Each(wellknown.PrefixIPAddresses, func(o *state.Object) error {
		a := ipAddress{key: o.Key}
		switch ip := o.Value.Obj.(type) {
		case *networkingv1.IPAddress:
			if r := ip.Spec.ParentRef; r != nil {
				a.ns, a.name, a.group, a.resc = r.Namespace, r.Name, r.Group, r.Resource
			}
		case *networkingv1beta1.IPAddress:
			if r := ip.Spec.ParentRef; r != nil {
				a.ns, a.name, a.group, a.resc = r.Namespace, r.Name, r.Group, r.Resource
			}
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// dnsIPs are the addresses of the DNS Service and of any DNS bridge.
func (s *serviceState) dnsIPs() []string {
	var out []string
	for _, ip := range s.ips {
		if ip.dns {
			out = append(out, ip.addr.String())
		}
	}
	return out
}

// owners maps each ClusterIP to its Service's key (the last one listed
// when two Services claim it).
func owners(ips []serviceIP) map[netip.Addr]string {
	owner := map[netip.Addr]string{}
	for _, ip := range ips {
		owner[ip.addr] = ip.key
	}
	return owner
}

// checkServicesInRange: every ClusterIP is inside the new range of its
// family, but those of the kept Services (namespace/name).
func checkServicesInRange(ips []serviceIP, svcNet []netip.Prefix, keep []string) []string {
	var probs []string
	for _, ip := range ips {
		kept := slices.Contains(keep, strings.TrimPrefix(ip.key, wellknown.PrefixServices))
		if _, in := inAny(svcNet, ip.addr); in || kept {
			continue
		}
		if fam, ok := familyOf(svcNet, ip.addr); ok {
			probs = append(probs, fmt.Sprintf("%s: %s is outside %s", ip.key, ip.addr, fam))
		}
	}
	return probs
}

// checkDuplicateIPs: no two Services share a ClusterIP.
func checkDuplicateIPs(ips []serviceIP) []string {
	var probs []string
	owner := map[netip.Addr]string{}
	for _, ip := range ips {
		if prev, dup := owner[ip.addr]; dup {
			probs = append(probs, fmt.Sprintf("%s: %s and %s", ip.addr, prev, ip.key))
		}
		owner[ip.addr] = ip.key
	}
	return probs
}

// checkRangeAllocations: each RangeAllocation of a family the new range has
// covers the new range, and its bitmap holds exactly the Services'
// addresses the bitmap can hold.
func checkRangeAllocations(ranges []rangeAlloc, svcNet []netip.Prefix, owner map[netip.Addr]string) []string {
	var probs []string
	for _, r := range ranges {
		if !r.valid {
			probs = append(probs, r.key+": not a RangeAllocation")
			continue
		}
		rp, err := netip.ParsePrefix(r.cidr)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: range %q is not a CIDR", r.key, r.cidr))
			continue
		}
		want, ok := familyOf(svcNet, rp.Addr())
		if !ok {
			continue
		}
		if rp != want {
			probs = append(probs, fmt.Sprintf("%s: range %s, want %s", r.key, rp, want))
			continue
		}
		have, err := cidr.BitmapAddrs(rp, r.data)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %v", r.key, err))
			continue
		}
		var expect []netip.Addr
		sr := cidr.NewServiceRange(rp)
		for a := range owner {
			if off, err := cidr.Offset(rp, a); err == nil && off.Sign() > 0 && off.Cmp(sr.Count) <= 0 {
				expect = append(expect, a)
			}
		}
		if d := diffAddrs(have, expect); d != "" {
			probs = append(probs, fmt.Sprintf("%s: bitmap differs from the Services: %s", r.key, d))
		}
	}
	return probs
}

// checkIPAddresses: one IPAddress object per ClusterIP in the new range,
// named after it, its parentRef the Service; no orphans.
func checkIPAddresses(objs []ipAddress, svcNet []netip.Prefix, owner map[netip.Addr]string) []string {
	var probs []string
	seen := map[netip.Addr]bool{}
	for _, o := range objs {
		a, err := netip.ParseAddr(strings.TrimPrefix(o.key, wellknown.PrefixIPAddresses))
		if err != nil {
			probs = append(probs, o.key+": name is not an IP")
			continue
		}
		seen[a] = true
		want, owned := owner[a]
		switch {
		case !owned:
			probs = append(probs, fmt.Sprintf("%s: no Service has this address (orphan)", o.key))
		case o.group != "" || o.resc != "services" || wellknown.PrefixServices+o.ns+"/"+o.name != want:
			probs = append(probs, fmt.Sprintf("%s: parentRef %s/%s %s/%s, want %s", o.key, o.group, o.resc, o.ns, o.name, want))
		}
	}
	for a, k := range owner {
		if _, ok := inAny(svcNet, a); ok && !seen[a] {
			probs = append(probs, fmt.Sprintf("%s: %s has no IPAddress object", k, a))
		}
	}
	sort.Strings(probs)
	return probs
}

// checkDefaultServiceCIDR: the default ServiceCIDR's spec.cidrs are the new range.
func checkDefaultServiceCIDR(got []string, svcNet []netip.Prefix) []string {
	if strings.Join(got, ",") != cidr.Join(svcNet) {
		return []string{fmt.Sprintf("spec.cidrs %s, want %s", strings.Join(got, ","), cidr.Join(svcNet))}
	}
	return nil
}

// checkNodeCIDRs: every node's pod CIDRs are inside the cluster CIDR of
// their family, and no two overlap (kube-controller-manager exits otherwise).
func checkNodeCIDRs(nodes []state.NodeCIDR, podNet []netip.Prefix) []string {
	var probs []string
	type nodeCIDR struct {
		node string
		p    netip.Prefix
	}
	var all []nodeCIDR
	for _, n := range nodes {
		for _, s := range n.PodCIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				probs = append(probs, fmt.Sprintf("node %s: %q is not a CIDR", n.Node, s))
				continue
			}
			fam, ok := familyOf(podNet, p.Addr())
			if !ok {
				probs = append(probs, fmt.Sprintf("node %s: %s has a family the cluster CIDR does not (kube-controller-manager exits)", n.Node, p))
				continue
			}
			if !fam.Contains(p.Addr()) || p.Bits() < fam.Bits() {
				probs = append(probs, fmt.Sprintf("node %s: %s is outside the cluster CIDR %s (kube-controller-manager exits)", n.Node, p, fam))
			}
			all = append(all, nodeCIDR{n.Node, p})
		}
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if all[i].p.Overlaps(all[j].p) {
				probs = append(probs, fmt.Sprintf("nodes %s (%s) and %s (%s) overlap", all[i].node, all[i].p, all[j].node, all[j].p))
			}
		}
	}
	return probs
}

// checkConfiguration: every recorded service and pod CIDR is the new one
// (the Nodes' covering prefix is evidence, not a record: left out), and
// kubelet's clusterDNS is the DNS Service's or its bridge's address — or a
// link-local address, where NodeLocal DNSCache listens (169.254.20.10 by
// default, kubespray's 169.254.25.10), which no range move touches.
func checkConfiguration(nets *state.Networks, svcNet, podNet []netip.Prefix, dnsIPs []string) []string {
	probs := append(disagreements(nets.ServiceCIDR, svcNet), disagreements(nets.PodCIDR, podNet)...)
	if len(svcNet) > 0 {
		for _, d := range nets.ClusterDNS {
			if a, err := netip.ParseAddr(d); err == nil && a.IsLinkLocalUnicast() {
				continue
			}
			if !slices.Contains(dnsIPs, d) {
				probs = append(probs, fmt.Sprintf("kubelet-config clusterDNS %s is not the address of kube-dns or kube-dns-bridge (%s)", d, strings.Join(dnsIPs, ",")))
			}
		}
	}
	return probs
}

// disagreements lists the records among srcs that do not say want (none
// when want is not given).
func disagreements(srcs []state.Source, want []netip.Prefix) []string {
	var probs []string
	for _, s := range srcs {
		if s.Kind == state.SourceNodes || s.Kind == state.SourceK3sDefault || len(want) == 0 {
			continue
		}
		if strings.Join(s.CIDRs, ",") != cidr.Join(want) {
			probs = append(probs, fmt.Sprintf("%s says %s, want %s", s.Source, strings.Join(s.CIDRs, ","), cidr.Join(want)))
		}
	}
	return probs
}

func inAny(ps []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, p := range ps {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

func familyOf(ps []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, p := range ps {
		if p.Addr().Is4() == a.Is4() {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

func diffAddrs(have, want []netip.Addr) string {
	h, w := map[netip.Addr]bool{}, map[netip.Addr]bool{}
	for _, a := range have {
		h[a] = true
	}
	for _, a := range want {
		w[a] = true
	}
	var extra, missing []string
	for a := range h {
		if !w[a] {
			extra = append(extra, a.String())
		}
	}
	for a := range w {
		if !h[a] {
			missing = append(missing, a.String())
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, "allocated but no Service: "+strings.Join(extra, ","))
	}
	if len(missing) > 0 {
		parts = append(parts, "Service but not allocated: "+strings.Join(missing, ","))
	}
	return strings.Join(parts, "; ")
}

// networkListed are the prefixes checkNetworks (and state.Detect, with its
// CNI and distribution detection) list. Named in the index, none of them
// is listed by a walk of the whole bucket. (In a check of a file just
// written, IndexOptions.Only still decides which keys are recorded at all:
// a named prefix Only refuses lists nothing, as its walk did.)
var networkListed = slices.Concat([]string{wellknown.PrefixServices, wellknown.PrefixIPAddresses, wellknown.PrefixNodes},
	state.CNIListed, state.DistributionListed)

// networkKeyPrefixes are where everything checkNetworks reads lives
// (the ConfigMaps of kube-system and of the CNIs' namespaces).
var networkKeyPrefixes = slices.Concat([]string{
	wellknown.PrefixServices, wellknown.PrefixIPAddresses, wellknown.PrefixNodes,
	wellknown.PrefixRanges, wellknown.PrefixServiceCIDRs, wellknown.PrefixKubeSystemConfigMaps,
}, cniConfigPrefixes(), cniKeyPrefixes)

// storedPrefixes returns canonical prefixes as a snapshot under prefix
// stores them.
func storedPrefixes(prefix string, canonical []string) []string {
	out := make([]string, len(canonical))
	for i, p := range canonical {
		out[i] = state.Stored(prefix, p)
	}
	return out
}

func hasAnyPrefix(key []byte, prefixes []string) bool {
	for _, p := range prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}
