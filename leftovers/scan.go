package leftovers

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// LeftoverScan finds addresses of the old ranges that remain in the output
// after the rules: pod status IPs, endpoints, annotations, env values, other
// ConfigMaps, custom resources. It reads the stored bytes (protobuf keeps
// strings as plain bytes, so a textual scan finds them without decoding)
// and groups what it finds by resource. It is a report, not a rule: an
// operator rehearsing on a copy sees what the rules did not cover.
type LeftoverScan struct {
	plan *rules.Plan
	// MaxExamples bounds the keys listed per resource. Default 10; a
	// negative value lists every key.
	MaxExamples int
	// Encryption, when set, decrypts values encrypted at rest so they are
	// scanned too; without it (or for KMS) they are counted, not scanned.
	Encryption *encryption.Config

	groups    map[string]*LeftoverGroup
	encrypted int
	prefix    string // where the input keeps its objects (SetEtcdPrefix); "" the default

	ready   bool
	rs      []netip.Prefix
	needles [][]byte // IPv4: dotted-decimal beginnings
	needle6 [][]byte // IPv6: canonical beginnings ("fd00:10:96:")
	// groups4 and groups6 are the needles grouped for find's search,
	// made once with them.
	groups4, groups6 []leadGroup
	kept             map[string]bool
	// keptAddrs are the addresses of the exempt Services: an object that
	// refers only to them still reaches a Service that stays where it is.
	keptAddrs map[netip.Addr]bool
	// movedTo are the new addresses of the Services the plan moved, when
	// an old service range overlaps its new one (stays asks only then).
	movedTo map[netip.Addr]bool
	cd      *codec.Codec // for Helm release Secrets, made on first use
	// seen is Observe's set of the addresses found in one value, reused;
	// resources keeps resource's answers.
	seen      map[netip.Addr]bool
	resources map[string]string
	hits      []hit  // find's, reused
	b64       []byte // decodeHelmRelease's, reused
}

// LeftoverGroup is one resource's leftovers.
type LeftoverGroup struct {
	Resource string     `json:"resource"`
	Keys     int        `json:"keys"`
	Examples []Leftover `json:"examples"`
	// Intended marks exempt Services, which keep old addresses on purpose.
	Intended bool `json:"intended,omitempty"`
	// Namespaces counts the keys per namespace, in the order to recreate
	// them, for pod-level state (Pods, Endpoints, EndpointSlices,
	// CiliumEndpoints): their controllers recreate it after the restart.
	Namespaces []NamespaceCount `json:"namespaces,omitempty"`
	perNS      map[string]int
}

// NamespaceCount is a number of keys in one namespace.
type NamespaceCount struct {
	Namespace string `json:"namespace"`
	Keys      int    `json:"keys"`
}

// podLevel are the resources whose old addresses the workloads' own
// controllers replace once the pods are recreated on the new ranges (with
// the CNIs' per-pod resources, package cni's PodState).
var podLevel = setOf(slices.Concat([]string{"pods", "endpoints", "endpointslices.discovery.k8s.io"}, cni.PodState()))

// recreateFirst are the namespaces whose pods go first (the CNIs' own,
// package cni's Namespaces, then kube-system: kube-proxy, DNS), before
// webhooks and the rest, in the rebuild runbook's staged order.
var recreateFirst = append(cni.Namespaces(), "kube-system")

func setOf(ss []string) map[string]bool {
	out := make(map[string]bool, len(ss))
	for _, s := range ss {
		out[s] = true
	}
	return out
}

// RecreateOrder sorts namespace counts into the order to recreate their
// pods: recreateFirst, then the rest by name.
func RecreateOrder(perNS map[string]int) []NamespaceCount {
	out := make([]NamespaceCount, 0, len(perNS))
	for ns, n := range perNS {
		out = append(out, NamespaceCount{ns, n})
	}
	rank := func(ns string) int {
		if i := slices.Index(recreateFirst, ns); i >= 0 {
			return i
		}
		return len(recreateFirst)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i].Namespace), rank(out[j].Namespace); ri != rj {
			return ri < rj
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}

// namespaceOf is the namespace in a namespaced key under resource res
// (/registry/<res path>/<ns>/<name>), or "".
// It reads the key in place: it runs for every pod-level key with a
// leftover (660k Pods on the 8 GiB bench).
func namespaceOf(key, res string) string {
	rest := strings.TrimPrefix(key, wellknown.DefaultPrefix)
	skip := strings.Count(res, "/") + 1
	if res == "endpoints" {
		skip = 2 // services/endpoints
	}
	if strings.Count(rest, "/") != skip+1 { // skip+2 segments
		return ""
	}
	for range skip {
		rest = rest[strings.IndexByte(rest, '/')+1:]
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// resource is wellknown.Resource(key), kept by the key's first two
// segments after the prefix, which are all it depends on (a resource
// path, keyOf's services/specs, a group and its plural, ranges/<name>):
// it runs for every key with a leftover.
func (s *LeftoverScan) resource(key string) string {
	rest, ok := strings.CutPrefix(key, wellknown.DefaultPrefix)
	if !ok {
		return wellknown.Resource(key)
	}
	head := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if j := strings.IndexByte(rest[i+1:], '/'); j >= 0 {
			head = rest[:i+1+j]
		}
	}
	if r, ok := s.resources[head]; ok {
		return r
	}
	r := wellknown.Resource(key)
	if s.resources == nil {
		s.resources = map[string]string{}
	}
	s.resources[strings.Clone(head)] = r
	return r
}

// Leftover is one key and the old-range addresses in it.
type Leftover struct {
	Key       string   `json:"key"`
	Addresses []string `json:"addresses,omitempty"`
	Note      string   `json:"note,omitempty"`
}

// LeftoverReport is the scan's result.
type LeftoverReport struct {
	Ranges    []string         `json:"ranges"`
	Groups    []*LeftoverGroup `json:"groups"`
	Encrypted int              `json:"encryptedNotScanned,omitempty"`
}

// NewLeftoverScan scans for the old ranges of plan (filled in by Prepare).
func NewLeftoverScan(plan *rules.Plan) *LeftoverScan {
	return &LeftoverScan{plan: plan, MaxExamples: 10, groups: map[string]*LeftoverGroup{}}
}

func (s *LeftoverScan) ranges() []netip.Prefix {
	var out []netip.Prefix
	if s.plan.Service != nil {
		for i, o := range s.plan.Service.Old {
			if o != s.plan.Service.New[i] {
				out = append(out, o)
			}
		}
	}
	if s.plan.Pod != nil {
		for i, o := range s.plan.Pod.Old {
			if o != s.plan.Pod.New[i] {
				out = append(out, o)
			}
		}
	}
	return out
}

// prepare computes, once the plan exists, the ranges, the text each of
// their IPv4 addresses starts with (octet-aligned, so bytes.Index can find
// candidates at memory speed), and the keys kept on purpose.
func (s *LeftoverScan) prepare() {
	if s.ready {
		return
	}
	s.ready = true
	s.rs = s.ranges()
	s.kept, s.keptAddrs, s.movedTo = map[string]bool{}, map[netip.Addr]bool{}, map[netip.Addr]bool{}
	if s.plan.Service != nil {
		if rangesOverlap(s.plan.Service) {
			// Only then: 4.7 MB through the stream on 32k moved Services.
			for _, n := range s.plan.Service.IPs {
				s.movedTo[n] = true
			}
		}
		if n := s.plan.Service.KeptServiceCIDR; n != "" {
			s.kept[wellknown.PrefixServiceCIDRs+n] = true
		}
		for _, mv := range s.plan.Service.Services {
			if mv.Kept {
				s.kept[mv.Key] = true
				for _, ip := range mv.Old { // its own IPAddress objects
					s.kept[wellknown.PrefixIPAddresses+ip] = true
					if a, err := netip.ParseAddr(ip); err == nil {
						s.keptAddrs[a] = true
					}
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range s.rs {
		if !r.Addr().Is4() {
			if p := textPrefix6(r); !seen[p] {
				seen[p] = true
				s.needle6 = append(s.needle6, []byte(p))
			}
			continue
		}
		for _, p := range textPrefixes(r) {
			if !seen[p] {
				seen[p] = true
				s.needles = append(s.needles, []byte(p))
			}
		}
	}
	s.groups4, s.groups6 = leadGroups(s.needles), leadGroups(s.needle6)
}

// textPrefixes lists the dotted-decimal beginnings every address of an IPv4
// range starts with: "192.168." for 192.168.0.0/16, "10.96." to "10.111."
// for 10.96.0.0/12; at most 256 of them, else the first octet alone.
func textPrefixes(r netip.Prefix) []string {
	b := r.Masked().Addr().As4()
	bits := min(r.Bits(), 24) // the last octet is never followed by a dot
	full := bits / 8
	base := ""
	for i := 0; i < full; i++ {
		base += fmt.Sprintf("%d.", b[i])
	}
	if bits%8 == 0 {
		return []string{base}
	}
	var out []string
	for v := 0; v < 1<<(8-bits%8); v++ {
		out = append(out, fmt.Sprintf("%s%d.", base, int(b[full])+v))
	}
	return out
}

// Observe implements transform.Observer.
func (s *LeftoverScan) Observe(k, value []byte, _ bool) {
	if codec.Detect(value) == codec.Encrypted {
		plain, err := s.decrypt(k, value)
		if err != nil {
			s.encrypted++
			return
		}
		value = plain
	}
	s.prepare()
	if len(s.needles)+len(s.needle6) == 0 {
		return
	}
	if s.seen == nil {
		s.seen = map[netip.Addr]bool{}
	}
	seen := s.seen
	clear(seen)
	found := s.find(value, s.needles, s.groups4, isV4Char, 15, seen)
	found = append(found, s.find(value, s.needle6, s.groups6, isV6Char, 45, seen)...)
	if policyLike(k) {
		found = s.coveringCIDRs(value, found)
	}
	var note string
	if bytes.HasPrefix(k, []byte(wellknown.PrefixSecrets)) {
		if n, ok := s.helmLeftovers(value); ok {
			note = n
		}
	}
	if len(found) == 0 && note == "" {
		return
	}
	key := string(k)
	res := s.resource(key)
	intended := s.kept[key] || s.onlyKept(seen)
	gk := res
	if intended {
		gk = res + " (kept on purpose)"
	}
	g := s.groups[gk]
	if g == nil {
		g = &LeftoverGroup{Resource: gk, Intended: intended}
		s.groups[gk] = g
	}
	g.Keys++
	if podLevel[res] {
		if ns := namespaceOf(key, res); ns != "" {
			if g.perNS == nil {
				g.perNS = map[string]int{}
			}
			g.perNS[ns]++
		}
	}
	if s.MaxExamples < 0 || len(g.Examples) < s.MaxExamples {
		l := Leftover{Key: key, Addresses: found}
		switch {
		case note != "":
			l = Leftover{Key: key, Note: note}
		case strings.HasPrefix(key, wellknown.PrefixSecrets):
			l = Leftover{Key: key, Note: "old-range addresses inside Secret data (not shown)"}
		case s.onlyInLastApplied(value):
			l.Note = onlyLastAppliedNote
		}
		g.Examples = append(g.Examples, l)
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Report returns the groups, largest first.
func (s *LeftoverScan) Report() *LeftoverReport {
	s.prepare()
	r := &LeftoverReport{Encrypted: s.encrypted, Groups: []*LeftoverGroup{}}
	for _, p := range s.ranges() {
		r.Ranges = append(r.Ranges, p.String())
	}
	for _, g := range s.groups {
		if len(g.perNS) > 0 {
			g.Namespaces = RecreateOrder(g.perNS)
		}
		r.Groups = append(r.Groups, g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		if r.Groups[i].Keys != r.Groups[j].Keys {
			return r.Groups[i].Keys > r.Groups[j].Keys
		}
		return r.Groups[i].Resource < r.Groups[j].Resource
	})
	return r
}

// onlyKept reports whether every address found is an exempt Service's.
func (s *LeftoverScan) onlyKept(found map[netip.Addr]bool) bool {
	for a := range found {
		if !s.keptAddrs[a] {
			return false
		}
	}
	return len(found) > 0
}

// find returns the addresses (or CIDRs, shown whole) of the old ranges in
// value that start with one of needles: a candidate must not continue a
// longer token (the character before it is no part), runs over part
// characters for at most longest bytes, and must parse as an address inside a
// range. seen collects what was found, so each address is listed once.
//
// value is read once for all the needles: the candidates are the positions
// of the groups' first bytes (leadGroups(needles), made once in prepare:
// "10." for "10.96." to "10.111." and "10.244.", kubeadm's default service
// range alone being 16 needles; the bench's 192.168.0.0/16 and
// 10.244.0.0/16 are two groups that both begin with '1', so one
// IndexByte pass finds every candidate of both), a candidate that continues a
// token is dropped at once, and the rest are matched against each group's
// lead, then its needles. The result is what one pass a needle finds
// (findByNeedle, kept in the tests): which hit of an address is kept is
// decided in the order of one pass a group (the order seen fills in), and
// the hits are listed by needle, then by position (BenchmarkFind: over the
// sample's values, this against one pass a group and one pass a needle).
func (s *LeftoverScan) find(value []byte, needles [][]byte, groups []leadGroup, part func(byte) bool, longest int, seen map[netip.Addr]bool) []string {
	if len(groups) == 0 {
		return nil
	}
	hits := s.hits[:0]
	defer func() { s.hits = hits[:0] }() // reused: find runs for every value
	match := func(at int) {
		if at > 0 && part(value[at-1]) {
			return // the middle of a longer token, for every needle
		}
		for gi, g := range groups {
			if !bytes.HasPrefix(value[at:], g.lead) {
				continue
			}
			n := firstPrefix(value[at:], needles, g.members)
			if n < 0 {
				continue
			}
			j := at
			for j < len(value) && j-at < longest && part(value[j]) {
				j++
			}
			a, ok := parseAddr(trimTokenBytes(value[at:j]))
			if !ok || !s.inRanges(a) {
				continue
			}
			hits = append(hits, hit{gi, n, at, j, a})
		}
	}
	eachCandidate(value, groups, match)
	if len(hits) == 0 {
		return nil
	}
	// Keep the hit of each address one pass a group would: by group, then
	// position.
	slices.SortStableFunc(hits, func(x, y hit) int { return cmp.Or(cmp.Compare(x.group, y.group), cmp.Compare(x.at, y.at)) })
	kept := hits[:0]
	for _, h := range hits {
		if !seen[h.addr] {
			seen[h.addr] = true
			kept = append(kept, h)
		}
	}
	slices.SortFunc(kept, func(x, y hit) int { return cmp.Or(cmp.Compare(x.needle, y.needle), cmp.Compare(x.at, y.at)) })
	found := make([]string, len(kept))
	for i, h := range kept { // the text only of the hits kept: an address is often there twice (podIP, podIPs)
		found[i] = cidrText(value, h.at, h.end, h.addr)
	}
	return found
}

// hit is one address find found: in which group and by which needle, and
// where.
type hit struct {
	group, needle, at, end int
	addr                   netip.Addr
}

// eachCandidate calls match, in increasing order, at every position of
// value where a group's lead may begin: a lead's first byte (one IndexByte
// cursor a distinct first byte, the lowest next) followed by one of the
// leads' second bytes, as bytes.Index checks its needle's first two bytes
// before the rest; with an empty lead, every position.
func eachCandidate(value []byte, groups []leadGroup, match func(at int)) {
	var firstBuf [8]byte
	var second [256]bool
	firsts, everywhere := firstBuf[:0], false
	for _, g := range groups {
		switch {
		case len(g.lead) < 2: // an empty needle (0.0.0.0/0) looks everywhere
			everywhere = true
		default:
			if bytes.IndexByte(firsts, g.lead[0]) < 0 {
				firsts = append(firsts, g.lead[0])
			}
			second[g.lead[1]] = true
		}
	}
	if everywhere {
		for at := range len(value) + 1 {
			match(at)
		}
	} else if len(firsts) == 1 {
		c := firsts[0]
		for at := 0; ; at++ {
			i := bytes.IndexByte(value[at:], c)
			if i < 0 {
				break
			}
			if at += i; at+1 < len(value) && second[value[at+1]] {
				match(at)
			}
		}
	} else {
		var nextBuf [8]int
		next := nextBuf[:0]
		for _, c := range firsts {
			next = append(next, bytes.IndexByte(value, c))
		}
		for {
			k := -1
			for i, n := range next {
				if n >= 0 && (k < 0 || n < next[k]) {
					k = i
				}
			}
			if k < 0 {
				break
			}
			at := next[k]
			if at+1 < len(value) && second[value[at+1]] {
				match(at)
			}
			if i := bytes.IndexByte(value[at+1:], firsts[k]); i >= 0 {
				next[k] = at + 1 + i
			} else {
				next[k] = -1
			}
		}
	}
}

// leadGroup is the needles that begin with the same first group (the text
// up to and including the first '.' or ':', or the whole needle), and what
// they all begin with: the group's search string.
type leadGroup struct {
	lead    []byte
	members []int // indexes into the needles, in order
}

func leadGroups(needles [][]byte) []leadGroup {
	var gs []leadGroup
	for i, n := range needles {
		lead := n
		if k := bytes.IndexAny(n, ".:"); k >= 0 {
			lead = n[:k+1]
		}
		g := slices.IndexFunc(gs, func(g leadGroup) bool { return bytes.Equal(g.lead, lead) })
		if g < 0 {
			gs = append(gs, leadGroup{lead: lead})
			g = len(gs) - 1
		}
		gs[g].members = append(gs[g].members, i)
	}
	for i := range gs { // a lone needle is searched whole, a group by what all share
		lead := needles[gs[i].members[0]]
		for _, m := range gs[i].members[1:] {
			lead = commonPrefix(lead, needles[m])
		}
		gs[i].lead = lead
	}
	return gs
}

func commonPrefix(a, b []byte) []byte {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

// firstPrefix is the lowest of members whose needle begins b, or -1.
func firstPrefix(b []byte, needles [][]byte, members []int) int {
	for _, m := range members {
		if bytes.HasPrefix(b, needles[m]) {
			return m
		}
	}
	return -1
}

// rangesOverlap reports whether an old service range overlaps the new
// range of its family: only then can an address be in both, which is when
// stays consults movedTo.
func rangesOverlap(sp *rules.ServicePlan) bool {
	for i, o := range sp.Old {
		if i < len(sp.New) && o.Overlaps(sp.New[i]) {
			return true
		}
	}
	return false
}

func (s *LeftoverScan) inRanges(a netip.Addr) bool {
	for _, r := range s.rs {
		if r.Contains(a) {
			return !s.stays(a)
		}
	}
	return false
}

// stays reports whether an address of an old range is where the migration
// wants it, when the new range overlaps the old one (a shrink or a grow
// from the same base): a Service address the plan does not move, the new
// address of one it moved, or a pod address whose offset mapping is the
// address itself. Such an address is no leftover.
func (s *LeftoverScan) stays(a netip.Addr) bool {
	if sp := s.plan.Service; sp != nil {
		if o, n, ok := cidr.PairOf(sp.Old, sp.New, a); ok && o.Contains(a) && n.Contains(a) {
			if _, moved := sp.IPs[a]; moved {
				return false
			}
			return s.movedTo[a] || o.Masked().Addr() == n.Masked().Addr()
		}
	}
	if pp := s.plan.Pod; pp != nil {
		if o, n, ok := cidr.PairOf(pp.Old, pp.New, a); ok && o.Contains(a) && n.Contains(a) {
			return o.Masked().Addr() == n.Masked().Addr()
		}
	}
	return false
}

// cidrText shows a CIDR whole when the address at value[at:j] is followed
// by a prefix length.
func cidrText(value []byte, at, j int, a netip.Addr) string {
	if j < len(value) && value[j] == '/' {
		k := j + 1
		for k < len(value) && k-j <= 3 && isDigit(value[k]) {
			k++
		}
		if p, err := netip.ParsePrefix(string(value[at:k])); err == nil {
			return p.String()
		}
	}
	return a.String()
}

func isV4Char(c byte) bool { return isDigit(c) || c == '.' }

func isV6Char(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'
}

// textPrefix6 is what every address of an IPv6 range starts with in its
// canonical (RFC 5952, lower-case) text: the range's leading whole hextets
// up to the first zero one, which the canonical form may fold into "::".
func textPrefix6(r netip.Prefix) string {
	b := r.Masked().Addr().As16()
	var out string
	for i := 0; i < r.Bits()/16; i++ {
		h := uint16(b[2*i])<<8 | uint16(b[2*i+1])
		if h == 0 {
			break
		}
		out += fmt.Sprintf("%x:", h)
	}
	return out
}

// policyLikePrefixes are where CIDRs that select traffic live: a
// NetworkPolicy ipBlock, a Calico or Cilium policy, a ConfigMap's settings.
// There a CIDR wider than an old range (10.0.0.0/8 around 10.244.0.0/16),
// or one across its edge, still means the old range: the text scan, which
// looks for addresses inside the ranges, does not see it.
var policyLikePrefixes = append([]string{wellknown.PrefixNetworkPolicies, wellknown.PrefixConfigMaps, wellknown.PrefixPolicyNetworking}, cniPolicyPrefixes()...)

// cniPolicyPrefixes are where the CNIs' policy groups live (package cni's
// PolicyGroups: Calico's and Cilium's policies).
func cniPolicyPrefixes() []string {
	var out []string
	for _, g := range cni.PolicyGroups() {
		out = append(out, wellknown.DefaultPrefix+g+"/")
	}
	return out
}

func policyLike(k []byte) bool {
	for _, p := range policyLikePrefixes {
		if bytes.HasPrefix(k, []byte(p)) {
			return true
		}
	}
	return false
}

// coveringCIDRs adds to found the CIDRs in value that contain an old range
// or cross its edge (those inside one are the text scan's, and one the text
// scan already showed whole is not listed twice), each once, with the range
// they cover.
func (s *LeftoverScan) coveringCIDRs(value []byte, found []string) []string {
	out := found
	seen := map[netip.Prefix]bool{}
	for _, f := range found {
		if p, err := netip.ParsePrefix(f); err == nil {
			seen[p] = true
		}
	}
	for at := bytes.IndexByte(value, '/'); at >= 0; {
		start := at
		for start > 0 && at-start < 45 && isV6Char(value[start-1]) {
			start--
		}
		end := at + 1
		for end < len(value) && end-at <= 3 && isDigit(value[end]) {
			end++
		}
		if t := trimLeadingColons(value[start:end]); maybePrefix(t) {
			if p, err := netip.ParsePrefix(string(t)); err == nil && !seen[p] {
				seen[p] = true
				for _, r := range s.rs {
					if p.Overlaps(r) && !(p.Bits() >= r.Bits() && r.Contains(p.Addr())) {
						out = append(out, fmt.Sprintf("%s (covers the old range %s)", p, r))
						break
					}
				}
			}
		}
		next := bytes.IndexByte(value[at+1:], '/')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return out
}

// trimLeadingColons drops a ":" the backward scan may take from a
// "key:10.0.0.0/8" text, but keeps an IPv6 "::/0" or "::1/128".
func trimLeadingColons(t []byte) []byte {
	if bytes.HasPrefix(t, []byte(":")) && !bytes.HasPrefix(t, []byte("::")) {
		return t[1:]
	}
	return t
}

// decrypt returns the plaintext of an encrypted value, when the scan has
// the configuration and the provider can be read offline.
func (s *LeftoverScan) decrypt(k, value []byte) ([]byte, error) {
	if s.Encryption == nil {
		return nil, state.ErrEncrypted
	}
	plain, _, err := s.Encryption.Decrypt(state.Stored(state.NormalizePrefix(s.prefix), string(k)), value)
	return plain, err
}

// SetEtcdPrefix implements transform.PrefixAware: values are decrypted
// under their stored keys.
func (s *LeftoverScan) SetEtcdPrefix(prefix string) { s.prefix = prefix }
