package rules

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// ServiceCIDR moves every Service ClusterIP from the old service range to
// the new one, keeping each address's offset, together with the allocator
// state kube-apiserver keeps beside the Services: the RangeAllocation
// bitmaps, the IPAddress objects (named after their IP: delete + create),
// and the default ServiceCIDR "kubernetes". Services listed in
// KeepServiceIPs keep their address; with DNSBridge a copy of the kept DNS
// Service is created at its mapped address. See DESIGN.md decisions 8 and 9 (docs/ARCHITECTURE.md).
type ServiceCIDR struct {
	opts Options
	plan *Plan

	sp        *ServicePlan
	ranges    map[string]rangeUpdate
	ipaddrGVK schema.GroupVersionKind
	// ipaddrs are the IPs that have an IPAddress object in the input,
	// sorted: a slice is a third of a map's size on 32k Services.
	ipaddrs   []netip.Addr
	bridgeSvc *corev1.Service
	keptCIDR  *keptCIDR // the terminating ServiceCIDR over the kept addresses, if any
	stamp     time.Time // what the objects it creates carry (Plan.creationStamp)
	notes     []string
}

type rangeUpdate struct {
	oldRange, newRange string
	data               []byte
	count              int
}

const (
	keyDefaultKubernetes = wellknown.PrefixServices + "default/kubernetes"
	// DefaultDNSService is kubeadm's cluster DNS Service (CoreDNS keeps
	// kube-dns's name), and k3s's and RKE2's.
	DefaultDNSService = "kube-system/kube-dns"
)

// checkDNSService refuses a --dns-service the snapshot does not hold, with
// the names nearest to it (the default may be absent: nothing then points
// at it, unless a bridge is asked for), and a --dns-bridge whose DNS Service
// is not kept.
func (r *ServiceCIDR) checkDNSService(svcs *services) error {
	dns := r.opts.DNSService
	if _, ok := svcs.ips[wellknown.PrefixServices+dns]; !ok && (dns != DefaultDNSService || r.opts.DNSBridge) {
		return option.Errorf("DNSService", "{} %s: no such Service in the snapshot%s", dns, nearServices([]string{dns}, svcs.ips))
	}
	if r.opts.DNSBridge && !contains(r.opts.KeepServiceIPs, dns) {
		return option.Errorf("DNSBridge", "{} bridges a kept DNS Service: add {KeepServiceIPs} %s", dns)
	}
	return nil
}

// bridgeFor names the bridge of a DNS Service "ns/name": "ns/name-bridge",
// in the DNS Service's own namespace (a selector selects only there).
func bridgeFor(dnsService string) (ns, name string) {
	ns, name, _ = strings.Cut(dnsService, "/")
	return ns, name + "-bridge"
}

func (r *ServiceCIDR) bridgeKey() string {
	ns, name := bridgeFor(r.opts.DNSService)
	return wellknown.PrefixServices + ns + "/" + name
}

func (r *ServiceCIDR) Name() string { return NameServiceCIDR }

func (r *ServiceCIDR) Prefixes() []string {
	return []string{wellknown.PrefixServices, wellknown.KeyServiceIPRange, wellknown.KeySecondaryIPRange,
		wellknown.PrefixIPAddresses, wellknown.PrefixServiceCIDRs}
}

func (r *ServiceCIDR) Notes() []string { return r.notes }

// Lists names what Prepare lists (and what state.Detect reads): Services,
// IPAddresses, Nodes, the distribution's records, and the DNS namespace's
// Deployments (the scale plan).
func (r *ServiceCIDR) Lists() []string {
	return slices.Concat([]string{wellknown.PrefixIPAddresses, wellknown.PrefixServiceCIDRs, wellknown.PrefixNodeLeases}, clashListed, state.DistributionListed,
		scaleListed(r.opts.DNSService))
}

// Counts names what the scale plan counts.
func (r *ServiceCIDR) Counts() []string { return scaleCounted }

func (r *ServiceCIDR) notef(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// Prepare computes the whole mapping and refuses before anything is written.
func (r *ServiceCIDR) Prepare(ctx context.Context, v *state.View) error {
	if len(v.Keys(wellknown.PrefixServices)) == 0 {
		if err := v.WrongPrefix(); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s", transform.ErrRefused, v.Missing("Services", wellknown.PrefixServices))
	}
	oldP, newP, oldSrc, err := r.resolveRanges(ctx, v)
	if err != nil {
		return err
	}
	dnsKey := wellknown.PrefixServices + r.opts.DNSService
	// One decode of the Services: their cluster IPs, the addresses the clash
	// check needs, and the DNS Service itself.
	svcs, err := readServices(v, dnsKey)
	if err != nil {
		return err
	}
	if err := r.checkDNSService(svcs); err != nil {
		return err
	}
	// A copy of the slice: a pointer into svcs would keep its map of every
	// Service's addresses alive through the stream (6 MB for 32k Services).
	inUse := svcs.inUse
	r.plan.serviceInUse = &inUse
	r.plan.setStamp(svcs.newest)
	if r.stamp, err = r.plan.creationStamp(v); err != nil {
		return err
	}
	if err := r.plan.checkClashes(v, "ServiceCIDR", "service", oldP, newP); err != nil {
		return err
	}
	extra, err := r.extraRanges(ctx, v, newP)
	if err != nil {
		return err
	}
	w := serviceWish{IPs: svcs.ips, Old: oldP, New: newP, Extra: extra, Repack: r.opts.Repack, DNS: dnsKey}
	for _, k := range r.opts.KeepServiceIPs {
		w.Keep = append(w.Keep, wellknown.PrefixServices+k)
	}
	if r.opts.DNSBridge {
		w.Bridge = r.bridgeKey()
	}
	lay, err := planServices(w)
	if err != nil {
		return err
	}
	lay.Plan.OldSource = oldSrc
	r.sp, r.plan.Service = lay.Plan, lay.Plan
	r.notes = append(r.notes, lay.Notes...)
	noKubelet, err := r.plan.noteNoKubelet(v)
	if err != nil {
		return err
	}
	r.notes = append(r.notes, noKubelet...)
	if err := r.plan.readScale(v, r.opts.DNSService); err != nil {
		return err
	}
	if lay.Plan.Bridge.IsValid() {
		r.bridgeSvc = r.newBridge(svcs.dns, lay.Plan.Bridge)
	}
	if err := r.planRanges(v, lay.Used); err != nil {
		return err
	}
	if err := r.planKeptRange(v); err != nil {
		return err
	}
	return r.scanIPAddresses(v)
}

// resolveRanges returns the old and new service CIDRs, paired by family,
// and where the old ones were found.
func (r *ServiceCIDR) resolveRanges(ctx context.Context, v *state.View) (oldP, newP []netip.Prefix, oldSrc string, err error) {
	oldP, newP, oldSrc, nets, err := r.plan.resolveRange(ctx, v, movingRange{kind: "service CIDR",
		field: "ServiceCIDR", value: r.opts.ServiceCIDR, oldField: "OldServiceCIDR", oldValue: r.opts.OldServiceCIDR,
		sources: func(n *state.Networks) []state.Source { return n.ServiceCIDR }})
	if err != nil {
		return nil, nil, "", err
	}
	note, err := serviceRangeLimit(nets.KubernetesVersion, newP)
	if err != nil {
		return nil, nil, "", err
	}
	if note != "" {
		r.notef("%s", note)
	}
	// The pod network: the new one if it moves too (validated with the
	// options), else the one the snapshot records, which stays.
	if r.opts.PodNetworkCIDR == "" {
		if err := disjoint("service", newP, "pod", nets.PodCIDR); err != nil {
			return nil, nil, "", err
		}
	}
	return oldP, newP, oldSrc, nil
}

// listServices reads every Service, by key, and its cluster IPs (none for
// a headless or ExternalName Service).
// services is what the service-cidr rule needs of every Service, read in
// one pass without keeping the objects.
type services struct {
	ips   map[string][]netip.Addr // cluster IPs by key
	inUse []inUse                 // external and load-balancer IPs
	dns   *corev1.Service         // the DNS Service, if there is one
	// newest is the newest creationTimestamp (Plan.creationStamp).
	newest time.Time
}

func readServices(v *state.View, dnsKey string) (*services, error) {
	out := &services{ips: map[string][]netip.Addr{}}
	err := v.Each(wellknown.PrefixServices, func(o *state.Object) error {
		svc, err := state.As[*corev1.Service](o, "a Service")
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		var as []netip.Addr
		for _, ip := range serviceIPs(svc) {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return fmt.Errorf("%s: clusterIP %q is not an IP address", o.Key, ip)
			}
			as = append(as, a)
		}
		out.ips[o.Key] = as
		out.newest = newerStamp(out.newest, o)
		out.inUse = append(out.inUse, externalIPs(svc)...)
		if o.Key == dnsKey {
			out.dns = svc
		}
		return nil
	})
	return out, err
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

// newBridge builds the DNS bridge: a copy of the DNS Service src at
// address a, in its namespace, selecting the same Pods.
func (r *ServiceCIDR) newBridge(src *corev1.Service, a netip.Addr) *corev1.Service {
	bridgeKey := r.bridgeKey()
	bridgeNS, bridgeName := bridgeFor(r.opts.DNSService)
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
			CreationTimestamp: metav1.NewTime(r.stamp),
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
	return b
}

// planRanges recomputes the RangeAllocation bitmaps for the new ranges.
func (r *ServiceCIDR) planRanges(v *state.View, owner map[netip.Addr]string) error {
	r.ranges = map[string]rangeUpdate{}
	ars, err := state.ServiceAllocatorRanges(v)
	if err != nil {
		return err
	}
	for _, ar := range ars {
		key := ar.Key
		ra, err := state.As[*corev1.RangeAllocation](ar.Object, "a RangeAllocation")
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
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
	keys := v.Keys(wellknown.PrefixIPAddresses)
	r.ipaddrs = make([]netip.Addr, 0, len(keys))
	for _, kr := range keys {
		a, err := netip.ParseAddr(strings.TrimPrefix(kr.Key, wellknown.PrefixIPAddresses))
		if err != nil {
			continue
		}
		r.ipaddrs = append(r.ipaddrs, a)
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
	slices.SortFunc(r.ipaddrs, netip.Addr.Compare) // keys sort as text, not as addresses
	return nil
}

// Apply rewrites one claimed object.
func (r *ServiceCIDR) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	switch {
	case strings.HasPrefix(obj.Key, wellknown.PrefixServices):
		return r.applyService(obj)
	case obj.Key == wellknown.KeyServiceIPRange || obj.Key == wellknown.KeySecondaryIPRange:
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
	case strings.HasPrefix(obj.Key, wellknown.PrefixIPAddresses):
		return r.applyIPAddress(obj)
	case strings.HasPrefix(obj.Key, wellknown.PrefixServiceCIDRs):
		return r.applyServiceCIDR(obj)
	}
	return transform.Result{}, nil
}

func mustPrefix(s string) netip.Prefix {
	p, _ := netip.ParsePrefix(s)
	return p
}

// hasIPAddress reports whether the input holds an IPAddress object for a.
func (r *ServiceCIDR) hasIPAddress(a netip.Addr) bool {
	_, ok := slices.BinarySearchFunc(r.ipaddrs, a, netip.Addr.Compare)
	return ok
}

// newIPsOf returns the new cluster IPs of the Service at key, or false when
// they do not change. The plan's Services are sorted by key: a binary
// search there costs a few microseconds a run more than a map of the
// changed ones, which would hold 2.6 MB through the stream on 32k Services.
func (r *ServiceCIDR) newIPsOf(key string) ([]string, bool) {
	if r.sp == nil {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(r.sp.Services, key, func(mv ServiceMove, k string) int { return strings.Compare(mv.Key, k) })
	if !ok || slices.Equal(r.sp.Services[i].Old, r.sp.Services[i].New) {
		return nil, false
	}
	return r.sp.Services[i].New, true
}

func (r *ServiceCIDR) applyService(obj *state.Object) (transform.Result, error) {
	newIPs, ok := r.newIPsOf(obj.Key)
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
	a, err := netip.ParseAddr(strings.TrimPrefix(obj.Key, wellknown.PrefixIPAddresses))
	if err != nil {
		return transform.Result{}, nil
	}
	na, moved := r.sp.IPs[a]
	if !moved {
		return transform.Result{}, nil
	}
	newKey := wellknown.PrefixIPAddresses + na.String()
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
		if obj.Key == wellknown.KeyDefaultServiceCIDR {
			for j, o := range r.sp.Old {
				if o == p.Masked() {
					out[i] = r.sp.New[j].String()
				}
			}
		}
		for _, m := range r.sp.Extra {
			if m.Old == p.Masked() {
				out[i] = m.New.String()
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
		r.notef("created %s at %s for %s: point kubelet clusterDNS there (the cluster-config rule does, in kubelet-config)", strings.TrimPrefix(key, wellknown.PrefixServices), r.sp.Bridge, r.opts.DNSService)
	}
	if r.keptCIDR != nil {
		obj, err := r.newKeptServiceCIDR()
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
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
			if na == oa || r.hasIPAddress(oa) {
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
	ns, name, _ := strings.Cut(strings.TrimPrefix(svcKey, wellknown.PrefixServices), "/")
	key := wellknown.PrefixIPAddresses + a.String()
	meta := metav1.ObjectMeta{Name: a.String(), UID: newUID(key, svcKey), CreationTimestamp: metav1.NewTime(r.stamp),
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

// NameServiceCIDR is the service-cidr rule.
const NameServiceCIDR = "service-cidr"

// ServiceCIDROptions are the service-cidr rule's options.
type ServiceCIDROptions struct {
	// ServiceCIDR is the new service CIDR ("172.24.0.0/16", or two
	// comma-separated for dual stack). Empty: service-cidr is off.
	ServiceCIDR string `json:"serviceSubnet,omitempty"`
	// OldServiceCIDR overrides detection of the old one from the snapshot.
	OldServiceCIDR string `json:"oldServiceSubnet,omitempty"`
	// Repack allows a smaller new service range: Services whose offset does
	// not fit get free addresses.
	Repack bool `json:"repack,omitempty"`
	// KeepServiceIPs lists Services ("namespace/name") that keep their old
	// address (with their IPAddress objects).
	KeepServiceIPs []string `json:"keepServiceIPs,omitempty"`
	// DNSBridge creates "<name>-bridge" beside the kept DNS Service (in its
	// namespace: kube-system/kube-dns-bridge by default) at the address the
	// DNS Service would have been mapped to.
	DNSBridge bool `json:"dnsBridge,omitempty"`
	// DNSService names the cluster DNS Service. Default DefaultDNSService;
	// any other name must be a Service the snapshot holds.
	DNSService string `json:"dnsService,omitempty"`
	// ServiceCIDRMap moves the ServiceCIDRs a user added beside the default
	// one ("OLD=NEW", one per range; 1.33+): their Services and IPAddress
	// objects at their offsets, the ServiceCIDR's spec.cidrs. Requires
	// ServiceCIDR. Default: none, and a snapshot with such a ServiceCIDR is
	// refused, naming it.
	ServiceCIDRMap []string `json:"serviceCIDRMap,omitempty"`
}

var serviceCIDREntry = Entry{
	Name:    NameServiceCIDR,
	Summary: "move every Service cluster IP to the new service range, offsets kept, with the allocator state",
	Touches: []string{"services (spec.clusterIP, spec.clusterIPs, last-applied copies)", "ranges/serviceips, ranges/secondaryserviceips",
		"ipaddresses.networking.k8s.io (renamed)", "servicecidrs.networking.k8s.io (kubernetes; added ones with --service-cidr-map)"},
	Enabled: func(o *Options) bool { return o.ServiceCIDR != "" },
	New:     func(o Options, p *Plan) transform.Rule { return &ServiceCIDR{opts: o, plan: p} },
	Example: func() Options {
		return Options{ServiceCIDROptions: ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}}
	},
	Validate: validateServiceOptions,
	Options: func(o *Options) []Option {
		return []Option{
			{Field: "ServiceCIDR", Name: "service-cidr", CLI: true, Verify: true, Config: "networking.serviceSubnet", Value: &o.ServiceCIDR,
				Usage: "new service CIDR, e.g. 172.24.0.0/16; on a dual-stack cluster name the families that move (one moves one, its other range kept; two, comma-separated, move both)"},
			{Field: "OldServiceCIDR", Name: "old-service-cidr", CLI: true, Config: "networking.oldServiceSubnet", Value: &o.OldServiceCIDR,
				Usage: "the old service CIDR (default: detected from kubeadm-config, the ServiceCIDR object and the RangeAllocation)"},
			{Field: "Repack", Name: "repack", CLI: true, Config: "networking.repack", Value: &o.Repack,
				Usage: "allow a smaller new range: Services whose offset does not fit get free addresses"},
			{Field: "KeepServiceIPs", Name: "keep-service-ip", CLI: true, Verify: true, Config: "networking.keepServiceIPs", Value: &o.KeepServiceIPs,
				Usage: "NAMESPACE/NAME of a Service that keeps its old address (repeatable), e.g. kube-system/kube-dns"},
			{Field: "DNSBridge", Name: "dns-bridge", CLI: true, Config: "networking.dnsBridge", Value: &o.DNSBridge,
				Usage: "with --keep-service-ip for the DNS Service: create kube-system/kube-dns-bridge at its mapped address and point clusterDNS there"},
			{Field: "DNSService", Name: "dns-service", CLI: true, Verify: true, Config: "networking.dnsService", Value: &o.DNSService,
				Default: DefaultDNSService, Usage: "the cluster DNS Service"},
			{Field: "ServiceCIDRMap", Name: "service-cidr-map", CLI: true, Verify: true, Config: "networking.serviceCIDRMap", Value: &o.ServiceCIDRMap,
				Usage: "OLD=NEW: move a ServiceCIDR added beside the default one, with its Services at their offsets (repeatable, one per range), e.g. 10.100.0.0/16=172.25.0.0/16"},
		}
	},
}

// validateServiceOptions checks the service-cidr options themselves (the
// snapshot is checked in Prepare).
func validateServiceOptions(o *Options) error {
	if o.ServiceCIDR == "" {
		for _, f := range []struct {
			field string
			set   bool
		}{{"OldServiceCIDR", o.OldServiceCIDR != ""}, {"KeepServiceIPs", len(o.KeepServiceIPs) > 0}, {"DNSBridge", o.DNSBridge}, {"Repack", o.Repack},
			{"ServiceCIDRMap", len(o.ServiceCIDRMap) > 0}} {
			if f.set {
				return option.Errorf(f.field, "{} needs {ServiceCIDR}")
			}
		}
		return nil
	}
	ps, err := parsePrefixes("ServiceCIDR", o.ServiceCIDR)
	if err != nil {
		return err
	}
	if err := checkUsable("ServiceCIDR", "service", ps); err != nil {
		return err
	}
	for _, k := range o.KeepServiceIPs {
		if ns, name, ok := strings.Cut(k, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return option.Errorf("KeepServiceIPs", "{} %q: want NAMESPACE/NAME", k)
		}
	}
	if ns, name, ok := strings.Cut(o.DNSService, "/"); o.DNSService != "" && (!ok || ns == "" || name == "" || strings.Contains(name, "/")) {
		return option.Errorf("DNSService", "{} %q: want NAMESPACE/NAME, e.g. %s", o.DNSService, DefaultDNSService)
	}
	// --dns-bridge without the DNS Service kept is refused in Prepare, once
	// the snapshot says whether --dns-service names a Service at all: the
	// advice to keep it must not repeat a misspelt name.
	_, err = ParseServiceCIDRMap(o.ServiceCIDRMap)
	return err
}
