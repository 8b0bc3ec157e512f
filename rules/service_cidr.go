package rules

import (
	"context"
	"fmt"
	"math/big"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

// ServiceCIDR moves every Service ClusterIP from the old service range to
// the new one, keeping each address's offset, together with the allocator
// state kube-apiserver keeps beside the Services: the RangeAllocation
// bitmaps, the IPAddress objects (named after their IP: delete + create),
// and the default ServiceCIDR "kubernetes". Services listed in
// KeepServiceIPs keep their address; with DNSBridge a copy of the kept DNS
// Service is created at its mapped address. See DESIGN decisions 8 and 9.
type ServiceCIDR struct {
	opts Options
	plan *Plan

	sp        *ServicePlan
	newIPs    map[string][]string // service key -> new clusterIPs (only changed ones)
	ranges    map[string]rangeUpdate
	ipaddrGVK schema.GroupVersionKind
	// ipaddrs are the IPs that have an IPAddress object in the input.
	ipaddrs   map[netip.Addr]bool
	bridgeSvc *corev1.Service
	notes     []string
}

type rangeUpdate struct {
	oldRange, newRange string
	data               []byte
	count              int
}

const (
	keyDefaultKubernetes = state.PrefixServices + "default/kubernetes"
)

// bridgeFor names the bridge of a DNS Service "ns/name": "ns/name-bridge",
// in the DNS Service's own namespace (a selector selects only there).
func bridgeFor(dnsService string) (ns, name string) {
	ns, name, _ = strings.Cut(dnsService, "/")
	return ns, name + "-bridge"
}

func (r *ServiceCIDR) bridgeKey() string {
	ns, name := bridgeFor(r.opts.DNSService)
	return state.PrefixServices + ns + "/" + name
}

func (r *ServiceCIDR) Name() string { return NameServiceCIDR }

func (r *ServiceCIDR) Prefixes() []string {
	return []string{state.PrefixServices, state.KeyServiceIPRange, state.KeySecondaryIPRange,
		state.PrefixIPAddresses, state.KeyDefaultServiceCIDR}
}

func (r *ServiceCIDR) Notes() []string { return r.notes }

// Lists names what Prepare lists (and what clusterinfo reads): Services,
// IPAddresses, Nodes.
func (r *ServiceCIDR) Lists() []string {
	return []string{state.PrefixServices, state.PrefixIPAddresses, state.PrefixNodes}
}

func (r *ServiceCIDR) notef(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// svcIPs is one Service's current cluster IPs.
type svcIPs struct {
	key string
	svc *corev1.Service
	ips []netip.Addr
}

// Prepare computes the whole mapping and refuses before anything is written.
func (r *ServiceCIDR) Prepare(ctx context.Context, v *state.View) error {
	newP, err := parsePrefixes("--service-cidr", r.opts.ServiceCIDR)
	if err != nil {
		return err
	}
	nets, err := r.plan.networks(ctx, v)
	if err != nil {
		return err
	}
	srcs, err := toDetected(nets.ServiceCIDR)
	if err != nil {
		return err
	}
	oldP, oldSrc, err := resolveOld("service CIDR", "--old-service-cidr", r.opts.OldServiceCIDR, srcs, newP)
	if err != nil {
		return err
	}
	oldP, newP, err = pairByFamily("service CIDR", oldP, newP)
	if err != nil {
		return err
	}
	// The pod network: the new one if it moves too (validated with the
	// flags), else the one the snapshot records, which stays.
	if r.opts.PodNetworkCIDR == "" {
		if pod, err := recordedPrefixes(nets.PodCIDR); err == nil {
			if err := disjoint("service", newP, "pod", pod); err != nil {
				return err
			}
		}
	}
	sp := &ServicePlan{Old: oldP, New: newP, OldSource: oldSrc, IPs: map[netip.Addr]netip.Addr{}}
	r.sp, r.plan.Service = sp, sp
	r.newIPs = map[string][]string{}

	objs, err := v.List(state.PrefixServices)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, k := range r.opts.KeepServiceIPs {
		keep[state.PrefixServices+k] = true
	}
	var all []svcIPs
	for _, o := range objs {
		svc, ok := o.Value.Obj.(*corev1.Service)
		if !ok {
			return fmt.Errorf("%s: stored object is %s, not a Service", o.Key, o.Value.GVK)
		}
		s := svcIPs{key: o.Key, svc: svc}
		for _, ip := range serviceIPs(svc) {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return fmt.Errorf("%s: clusterIP %q is not an IP address", o.Key, ip)
			}
			s.ips = append(s.ips, a)
		}
		if len(s.ips) > 0 {
			all = append(all, s)
		} else if keep[o.Key] {
			return fmt.Errorf("--keep-service-ip %s: the Service has no cluster IP to keep (headless or ExternalName)", strings.TrimPrefix(o.Key, state.PrefixServices))
		}
		delete(keep, o.Key)
	}
	for k := range keep {
		return fmt.Errorf("--keep-service-ip %s: no such Service with a cluster IP in the snapshot", strings.TrimPrefix(k, state.PrefixServices))
	}
	for _, k := range r.opts.KeepServiceIPs {
		keep[state.PrefixServices+k] = true
	}

	// First pass: addresses that keep their offset (or stay).
	final := map[string][]netip.Addr{}
	owner := map[netip.Addr]string{}
	var misfits, repack []string
	var clashes []string
	needs := map[string][]int{} // key -> indexes needing a repacked address
	for _, s := range all {
		out := make([]netip.Addr, len(s.ips))
		for i, a := range s.ips {
			out[i] = a
			o, n, ok := pairOf(oldP, newP, a)
			switch {
			case !ok:
				continue // family not remapped
			case !o.Contains(a):
				if !n.Contains(a) {
					r.notef("%s: %s is outside the old range %s and is left unchanged", s.key, a, o)
				}
				continue
			case keep[s.key]:
				continue
			}
			off, _ := cidr.Offset(o, a)
			if s.key == keyDefaultKubernetes {
				off = big.NewInt(1) // the apiserver's own Service: first address of the range
			}
			if !cidr.Usable(n, off) {
				if r.opts.Repack {
					needs[s.key] = append(needs[s.key], i)
					repack = append(repack, s.key)
					continue
				}
				misfits = append(misfits, fmt.Sprintf("%s (%s, offset %s)", strings.TrimPrefix(s.key, state.PrefixServices), a, off))
				continue
			}
			out[i], _ = cidr.AddrAt(n, off)
		}
		final[s.key] = out
	}
	if len(misfits) > 0 {
		sort.Strings(misfits)
		return fmt.Errorf("%w: the new service range %s is too small to keep these Services at their offsets: %s; choose a larger range or pass --repack",
			transform.ErrRefused, prefixesString(newP), strings.Join(misfits, ", "))
	}
	// Ownership and collisions (kept addresses first, so they win).
	order := make([]svcIPs, len(all))
	copy(order, all)
	sort.SliceStable(order, func(i, j int) bool { return keep[order[i].key] && !keep[order[j].key] })
	for _, s := range order {
		for i, a := range final[s.key] {
			if contains(intsToKeys(needs[s.key]), fmt.Sprint(i)) {
				continue
			}
			if prev, dup := owner[a]; dup && prev != s.key {
				if r.opts.Repack && !keep[s.key] && s.key != keyDefaultKubernetes {
					needs[s.key] = append(needs[s.key], i)
					repack = append(repack, s.key)
					continue
				}
				clashes = append(clashes, fmt.Sprintf("%s and %s at %s", strings.TrimPrefix(prev, state.PrefixServices), strings.TrimPrefix(s.key, state.PrefixServices), a))
				continue
			}
			owner[a] = s.key
		}
	}
	if len(clashes) > 0 {
		sort.Strings(clashes)
		return fmt.Errorf("%w: after the mapping two Services would share an address: %s", transform.ErrRefused, strings.Join(clashes, "; "))
	}
	// DNS bridge: the address the kept DNS Service would have had.
	dnsKey := state.PrefixServices + r.opts.DNSService
	if r.opts.DNSBridge {
		if err := r.planBridge(v, dnsKey, all, owner); err != nil {
			return err
		}
	}
	// Repack, deterministic: keys in order, lowest free usable offsets.
	sort.Strings(repack)
	for _, key := range dedupe(repack) {
		for _, i := range needs[key] {
			a := final[key][i]
			_, n, _ := pairOf(oldP, newP, a)
			na, err := lowestFree(n, owner)
			if err != nil {
				return fmt.Errorf("%w: --repack: %v", transform.ErrRefused, err)
			}
			owner[na] = key
			final[key][i] = na
		}
	}
	// Record the moves.
	for _, s := range all {
		mv := ServiceMove{Key: s.key, Old: addrStrings(s.ips), New: addrStrings(final[s.key]), Kept: keep[s.key]}
		changed := false
		for i, a := range s.ips {
			if final[s.key][i] != a {
				sp.IPs[a] = final[s.key][i]
				changed = true
			}
		}
		if contains(repack, s.key) {
			mv.Packed = true
		}
		if changed {
			r.newIPs[s.key] = mv.New
		}
		if changed || mv.Kept {
			sp.Services = append(sp.Services, mv)
		}
		if s.key == dnsKey && len(final[s.key]) > 0 {
			sp.DNS = final[s.key][0]
		}
		if mv.Kept {
			for _, a := range s.ips {
				if _, n, ok := pairOf(oldP, newP, a); ok && !n.Contains(a) {
					r.notef("%s keeps %s, outside the new range %s: move it later (delete and recreate the Service with a new-range clusterIP) once nothing depends on the old address",
						strings.TrimPrefix(s.key, state.PrefixServices), a, n)
				}
			}
		}
	}
	// Capacity: the bitmap must hold every address of its family in range.
	for _, n := range newP {
		used := 0
		for a := range owner {
			if n.Contains(a) {
				used++
			}
		}
		if big.NewInt(int64(used)).Cmp(cidr.NewServiceRange(n).Count) > 0 {
			return fmt.Errorf("%w: the new service range %s holds %s addresses, but %d Services need one", transform.ErrRefused, n, cidr.NewServiceRange(n).Count, used)
		}
	}
	if err := r.planRanges(v, owner); err != nil {
		return err
	}
	return r.scanIPAddresses(v)
}

// serviceIPs returns a Service's allocated cluster IPs (none for headless
// and ExternalName Services).
func serviceIPs(svc *corev1.Service) []string {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range ips {
		if ip != "" && ip != corev1.ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}

func (r *ServiceCIDR) planBridge(v *state.View, dnsKey string, all []svcIPs, owner map[netip.Addr]string) error {
	bridgeKey := r.bridgeKey()
	bridgeNS, bridgeName := bridgeFor(r.opts.DNSService)
	if _, exists := v.Index().Lookup([]byte(bridgeKey)); exists {
		r.notef("%s already exists; no new bridge created", bridgeKey)
		return nil
	}
	var dns *svcIPs
	for i := range all {
		if all[i].key == dnsKey {
			dns = &all[i]
		}
	}
	if dns == nil {
		return fmt.Errorf("--dns-bridge: the DNS Service %s has no cluster IP in the snapshot", r.opts.DNSService)
	}
	o, n, ok := pairOf(r.sp.Old, r.sp.New, dns.ips[0])
	if !ok || !o.Contains(dns.ips[0]) {
		return fmt.Errorf("--dns-bridge: %s (%s) is not in the old service range", r.opts.DNSService, dns.ips[0])
	}
	off, _ := cidr.Offset(o, dns.ips[0])
	if !cidr.Usable(n, off) {
		return fmt.Errorf("%w: --dns-bridge: offset %s of %s does not fit the new range %s", transform.ErrRefused, off, dns.ips[0], n)
	}
	a, _ := cidr.AddrAt(n, off)
	if prev, taken := owner[a]; taken {
		return fmt.Errorf("%w: --dns-bridge: %s is taken by %s", transform.ErrRefused, a, prev)
	}
	owner[a] = bridgeKey
	r.sp.Bridge = a
	src := dns.svc
	fam := corev1.IPv4Protocol
	if a.Is6() {
		fam = corev1.IPv6Protocol
	}
	single := corev1.IPFamilyPolicySingleStack
	itp := corev1.ServiceInternalTrafficPolicyCluster
	if src.Spec.InternalTrafficPolicy != nil {
		itp = *src.Spec.InternalTrafficPolicy
	}
	b := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: bridgeName, Namespace: bridgeNS,
			UID:               newUID(bridgeKey, string(src.UID)),
			CreationTimestamp: metav1.NewTime(r.opts.Now().UTC().Truncate(1e9)),
			Labels:            map[string]string{"app.kubernetes.io/managed-by": "snapshift"},
			Annotations: map[string]string{state.AnnotationBridgeFor: r.opts.DNSService,
				"snapshift.io/note": fmt.Sprintf("serves cluster DNS at %s in the new range while %s keeps its old address; delete once %s has moved", a, r.opts.DNSService, r.opts.DNSService)},
		},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, Selector: src.Spec.Selector, ClusterIP: a.String(), ClusterIPs: []string{a.String()},
			SessionAffinity: src.Spec.SessionAffinity, IPFamilies: []corev1.IPFamily{fam}, IPFamilyPolicy: &single,
			InternalTrafficPolicy: &itp,
		},
	}
	if b.Spec.SessionAffinity == "" {
		b.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	for _, p := range src.Spec.Ports {
		p.NodePort = 0
		b.Spec.Ports = append(b.Spec.Ports, p)
	}
	r.bridgeSvc = b
	return nil
}

// lowestFree returns the lowest usable address of n not in used.
func lowestFree(n netip.Prefix, used map[netip.Addr]string) (netip.Addr, error) {
	count := cidr.NewServiceRange(n).Count
	for off := big.NewInt(1); off.Cmp(count) <= 0; off.Add(off, big.NewInt(1)) {
		a, err := cidr.AddrAt(n, off)
		if err != nil {
			break
		}
		if _, taken := used[a]; !taken && cidr.Usable(n, off) {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address left in %s", n)
}

// planRanges recomputes the RangeAllocation bitmaps for the new ranges.
func (r *ServiceCIDR) planRanges(v *state.View, owner map[netip.Addr]string) error {
	r.ranges = map[string]rangeUpdate{}
	for _, key := range []string{state.KeyServiceIPRange, state.KeySecondaryIPRange} {
		o, ok, err := v.Get(key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		ra, ok := o.Value.Obj.(*corev1.RangeAllocation)
		if !ok {
			return fmt.Errorf("%s: stored object is %s, not a RangeAllocation", key, o.Value.GVK)
		}
		old, err := netip.ParsePrefix(ra.Range)
		if err != nil {
			return fmt.Errorf("%s: range %q is not a CIDR", key, ra.Range)
		}
		n := netip.Prefix{}
		for i, p := range r.sp.Old {
			if cidr.SameFamily(p, old) {
				n = r.sp.New[i]
			}
		}
		if !n.IsValid() {
			continue // family not remapped
		}
		var addrs []netip.Addr
		sr := cidr.NewServiceRange(n)
		for a := range owner {
			if !n.Contains(a) {
				continue
			}
			off, _ := cidr.Offset(n, a)
			if off.Cmp(sr.Count) > 0 {
				continue // IPv6 beyond the bitmap: the IPAddress allocator covers it
			}
			addrs = append(addrs, a)
		}
		data, err := cidr.Bitmap(n, addrs)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		r.ranges[key] = rangeUpdate{oldRange: ra.Range, newRange: n.String(), data: data, count: len(addrs)}
	}
	return nil
}

// scanIPAddresses records which IPs have IPAddress objects (and their
// stored apiVersion, to create new ones alike).
func (r *ServiceCIDR) scanIPAddresses(v *state.View) error {
	r.ipaddrs = map[netip.Addr]bool{}
	for _, kr := range v.Index().LiveKeysWithPrefix(state.PrefixIPAddresses) {
		a, err := netip.ParseAddr(strings.TrimPrefix(kr.Key, state.PrefixIPAddresses))
		if err != nil {
			continue
		}
		r.ipaddrs[a] = true
		if r.ipaddrGVK.Empty() {
			o, ok, err := v.Get(kr.Key) // decrypts a value encrypted at rest
			if err != nil {
				return err
			}
			if ok {
				r.ipaddrGVK = o.Value.GVK
			}
		}
	}
	return nil
}

// Apply rewrites one claimed object.
func (r *ServiceCIDR) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	switch {
	case strings.HasPrefix(obj.Key, state.PrefixServices):
		return r.applyService(obj)
	case obj.Key == state.KeyServiceIPRange || obj.Key == state.KeySecondaryIPRange:
		u, ok := r.ranges[obj.Key]
		ra, isRA := obj.Value.Obj.(*corev1.RangeAllocation)
		if !ok || !isRA || (ra.Range == u.newRange && string(ra.Data) == string(u.data)) {
			return transform.Result{}, nil
		}
		before, _ := cidr.BitmapAddrs(mustPrefix(ra.Range), ra.Data)
		ra.Range, ra.Data = u.newRange, u.data
		return transform.Result{Action: transform.Replace, Changes: []transform.Change{
			{Field: "range", Old: u.oldRange, New: u.newRange},
			{Field: "data", Old: fmt.Sprintf("bitmap of %d addresses", len(before)), New: fmt.Sprintf("bitmap of %d addresses", u.count)},
		}}, nil
	case strings.HasPrefix(obj.Key, state.PrefixIPAddresses):
		return r.applyIPAddress(obj)
	case obj.Key == state.KeyDefaultServiceCIDR:
		return r.applyServiceCIDR(obj)
	}
	return transform.Result{}, nil
}

func mustPrefix(s string) netip.Prefix {
	p, _ := netip.ParsePrefix(s)
	return p
}

func (r *ServiceCIDR) applyService(obj *state.Object) (transform.Result, error) {
	newIPs, ok := r.newIPs[obj.Key]
	if !ok {
		return transform.Result{}, nil
	}
	svc := obj.Value.Obj.(*corev1.Service)
	old := serviceIPs(svc)
	svc.Spec.ClusterIP = newIPs[0]
	if len(svc.Spec.ClusterIPs) > 0 || len(newIPs) > 1 {
		svc.Spec.ClusterIPs = append([]string(nil), newIPs...)
	}
	changes := []transform.Change{{Field: "spec.clusterIPs", Old: strings.Join(old, ","), New: strings.Join(newIPs, ",")}}
	mapping := map[string]string{}
	for i := range old {
		mapping[old[i]] = newIPs[i]
	}
	more, err := editSpecCopies(&svc.ObjectMeta, []string{"clusterIP", "clusterIPs"}, mapping, "clusterIPs")
	if err != nil {
		return transform.Result{}, err
	}
	changes = append(changes, more...)
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

func (r *ServiceCIDR) applyIPAddress(obj *state.Object) (transform.Result, error) {
	a, err := netip.ParseAddr(strings.TrimPrefix(obj.Key, state.PrefixIPAddresses))
	if err != nil {
		return transform.Result{}, nil
	}
	na, moved := r.sp.IPs[a]
	if !moved {
		return transform.Result{}, nil
	}
	newKey := state.PrefixIPAddresses + na.String()
	copyObj, err := renameIPAddress(obj.Value.Obj, na.String(), newUID(newKey, obj.Key))
	if err != nil {
		return transform.Result{}, fmt.Errorf("%s: %w", obj.Key, err)
	}
	return transform.Result{
		Action:  transform.Delete,
		Changes: []transform.Change{{Field: "renamed", Old: obj.Key, New: newKey}},
		Create: []transform.NewObject{{Key: newKey, Value: &codec.Object{Encoding: obj.Value.Encoding, GVK: obj.Value.GVK, Obj: copyObj},
			Changes: []transform.Change{{Field: "renamed from", New: obj.Key}}, Encryption: &obj.Encryption}},
	}, nil
}

// renameIPAddress copies an IPAddress under a new name (a new object: new
// UID, no resourceVersion; labels, parentRef and creation time kept).
func renameIPAddress(o runtime.Object, name string, uid types.UID) (runtime.Object, error) {
	switch ip := o.(type) {
	case *networkingv1.IPAddress:
		c := ip.DeepCopy()
		c.Name, c.UID, c.ResourceVersion, c.Generation = name, uid, "", 0
		return c, nil
	case *networkingv1beta1.IPAddress:
		c := ip.DeepCopy()
		c.Name, c.UID, c.ResourceVersion, c.Generation = name, uid, "", 0
		return c, nil
	}
	return nil, fmt.Errorf("stored object is %T, not an IPAddress", o)
}

func (r *ServiceCIDR) applyServiceCIDR(obj *state.Object) (transform.Result, error) {
	var cidrs *[]string
	switch sc := obj.Value.Obj.(type) {
	case *networkingv1.ServiceCIDR:
		cidrs = &sc.Spec.CIDRs
	case *networkingv1beta1.ServiceCIDR:
		cidrs = &sc.Spec.CIDRs
	default:
		return transform.Result{}, fmt.Errorf("stored object is %s, not a ServiceCIDR", obj.Value.GVK)
	}
	old := strings.Join(*cidrs, ",")
	out := make([]string, len(*cidrs))
	for i, c := range *cidrs {
		out[i] = c
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue
		}
		for j, o := range r.sp.Old {
			if o == p.Masked() {
				out[i] = r.sp.New[j].String()
			}
		}
	}
	if strings.Join(out, ",") == old {
		return transform.Result{}, nil
	}
	*cidrs = out
	return transform.Result{Action: transform.Replace, Changes: []transform.Change{{Field: "spec.cidrs", Old: old, New: strings.Join(out, ",")}}}, nil
}

// Finish creates the DNS bridge and any IPAddress a Service lacks (only
// when the cluster uses IPAddress objects at all).
func (r *ServiceCIDR) Finish(context.Context) ([]transform.NewObject, error) {
	var out []transform.NewObject
	if r.bridgeSvc != nil {
		key := r.bridgeKey()
		out = append(out, transform.NewObject{Key: key,
			Value:   &codec.Object{Encoding: codec.Protobuf, GVK: corev1.SchemeGroupVersion.WithKind("Service"), Obj: r.bridgeSvc},
			Changes: []transform.Change{{Field: "spec.clusterIP", New: r.sp.Bridge.String()}, {Field: "bridge for", New: r.opts.DNSService}}})
		r.notef("created %s at %s for %s: point kubelet clusterDNS there (the cluster-config rule does, in kubelet-config)", strings.TrimPrefix(key, state.PrefixServices), r.sp.Bridge, r.opts.DNSService)
	}
	if len(r.ipaddrs) == 0 || r.ipaddrGVK.Empty() {
		return out, nil
	}
	// Every Service IP in a new range needs an IPAddress.
	for _, mv := range r.sp.Services {
		if mv.Kept {
			continue
		}
		for i, s := range mv.New {
			na := netip.MustParseAddr(s)
			oa := netip.MustParseAddr(mv.Old[i])
			if na == oa || r.ipaddrs[oa] {
				continue // unchanged, or renamed from its old object in Apply
			}
			obj, err := r.newIPAddress(na, mv.Key)
			if err != nil {
				return nil, err
			}
			out = append(out, obj)
		}
	}
	if r.sp.Bridge.IsValid() {
		obj, err := r.newIPAddress(r.sp.Bridge, r.bridgeKey())
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

func (r *ServiceCIDR) newIPAddress(a netip.Addr, svcKey string) (transform.NewObject, error) {
	ns, name, _ := strings.Cut(strings.TrimPrefix(svcKey, state.PrefixServices), "/")
	key := state.PrefixIPAddresses + a.String()
	meta := metav1.ObjectMeta{Name: a.String(), UID: newUID(key, svcKey), CreationTimestamp: metav1.NewTime(r.opts.Now().UTC().Truncate(1e9)),
		Labels: map[string]string{"ipaddress.kubernetes.io/ip-family": familyLabel(a), "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}}
	var obj runtime.Object
	switch r.ipaddrGVK.Version {
	case "v1":
		obj = &networkingv1.IPAddress{ObjectMeta: meta, Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: ns, Name: name}}}
	case "v1beta1":
		obj = &networkingv1beta1.IPAddress{ObjectMeta: meta, Spec: networkingv1beta1.IPAddressSpec{ParentRef: &networkingv1beta1.ParentReference{Resource: "services", Namespace: ns, Name: name}}}
	default:
		return transform.NewObject{}, fmt.Errorf("IPAddress objects are stored as %s, which this build cannot write", r.ipaddrGVK)
	}
	return transform.NewObject{Key: key, Value: &codec.Object{Encoding: codec.Protobuf, GVK: r.ipaddrGVK, Obj: obj},
		Changes: []transform.Change{{Field: "spec.parentRef", New: "services " + ns + "/" + name}}}, nil
}

func familyLabel(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func dedupe(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || s[i-1] != x {
			out = append(out, x)
		}
	}
	return out
}

func intsToKeys(is []int) []string {
	out := make([]string, len(is))
	for i, x := range is {
		out[i] = fmt.Sprint(x)
	}
	return out
}
