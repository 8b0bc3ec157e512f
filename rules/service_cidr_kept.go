package rules

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// KeptServiceCIDRName names the ServiceCIDR that keeps the addresses of
// exempt Services legal after the move (DESIGN.md decision 9, docs/ARCHITECTURE.md).
const KeptServiceCIDRName = "snapshift-kept"

// serviceCIDRFinalizer is kube-controller-manager's finalizer on every
// ServiceCIDR (pkg/controller/servicecidrs).
const serviceCIDRFinalizer = "networking.k8s.io/service-cidr-finalizer"

// keptRanges returns the old prefixes that still hold the address of a kept
// Service outside every new range, in the order of the old ranges.
func keptRanges(sp *ServicePlan) []netip.Prefix {
	var out []netip.Prefix
	for _, mv := range sp.Services {
		if !mv.Kept {
			continue
		}
		for _, s := range mv.Old {
			a, err := netip.ParseAddr(s)
			if err != nil || slices.ContainsFunc(sp.New, func(p netip.Prefix) bool { return p.Contains(a) }) {
				continue
			}
			for _, o := range sp.Old {
				if o.Contains(a) && !slices.Contains(out, o) {
					out = append(out, o)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		return slices.Index(sp.Old, a) - slices.Index(sp.Old, b)
	})
	return out
}

// planKeptRange decides how the kept addresses stay legal. With ServiceCIDR
// objects (the allocator of 1.33+; the snapshot holds the default one), a
// ServiceCIDR over the old range is created already terminating, as
// `kubectl delete servicecidr` on a range still in use leaves it:
// kube-apiserver's repair loop counts its addresses as in range (no
// ClusterIPOutOfRange events), its allocator is not ready so it hands out
// nothing and takes no explicit address in it, and kube-controller-manager
// removes it once no IPAddress in it is left (the kept Services recreated).
// Without them (the bitmap allocator) nothing can: the note says so.
func (r *ServiceCIDR) planKeptRange(v *state.View) error {
	kept := keptRanges(r.sp)
	if len(kept) == 0 {
		return nil
	}
	r.sp.KeptRanges = kept
	def, ok, err := v.Get(wellknown.KeyDefaultServiceCIDR)
	if err != nil {
		return err
	}
	if !ok {
		r.notef("the kept Services stay in %s, which no ServiceCIDR can cover on this cluster (no ServiceCIDR objects: the bitmap allocator): kube-apiserver's repair loop records a ClusterIPOutOfRange warning for each every few minutes until it is recreated in the new range",
			cidr.Join(kept))
		return nil
	}
	key := wellknown.PrefixServiceCIDRs + KeptServiceCIDRName
	if earlier, ok, err := v.Get(key); err != nil {
		return err
	} else if ok {
		// An earlier migration's (a second run on its output, or a migration
		// before the kept Services were recreated): kept if it covers them.
		have, _ := state.ServiceCIDRSpec(earlier.Value.Obj)
		if !isKeptServiceCIDR(earlier) || strings.Join(have, ",") != cidr.Join(kept) {
			return fmt.Errorf("%w: the kept Services need ServiceCIDR %s over %s, but the snapshot already holds one by that name over %s; recreate the Services it keeps (kube-controller-manager then deletes it) and take a new snapshot",
				transform.ErrRefused, KeptServiceCIDRName, cidr.Join(kept), strings.Join(have, ","))
		}
		r.sp.KeptServiceCIDR = KeptServiceCIDRName
		return nil
	}
	r.keptCIDR = &keptCIDR{gvk: def.Value.GVK, cidrs: kept}
	r.sp.KeptServiceCIDR = KeptServiceCIDRName
	r.notef("created ServiceCIDR %s (%s), already terminating: it keeps the kept Services' addresses legal, hands out none, and kube-controller-manager deletes it once they are recreated in the new range",
		KeptServiceCIDRName, cidr.Join(kept))
	return nil
}

// isKeptServiceCIDR reports whether o is the ServiceCIDR a migration
// created for kept Services (and it is still terminating).
func isKeptServiceCIDR(o *state.Object) bool {
	m, ok := o.Value.Obj.(metav1.Object)
	return ok && m.GetName() == KeptServiceCIDRName && m.GetLabels()["app.kubernetes.io/managed-by"] == "snapshift" && m.GetDeletionTimestamp() != nil
}

type keptCIDR struct {
	gvk   schema.GroupVersionKind
	cidrs []netip.Prefix
}

// newKeptServiceCIDR is the terminating ServiceCIDR, stored in the default
// one's version.
func (r *ServiceCIDR) newKeptServiceCIDR() (transform.NewObject, error) {
	key := wellknown.PrefixServiceCIDRs + KeptServiceCIDRName
	now := metav1.NewTime(r.stamp) // from the input: the same bytes on every run
	zero := int64(0)
	meta := metav1.ObjectMeta{Name: KeptServiceCIDRName, UID: newUID(key, cidr.Join(r.keptCIDR.cidrs)), Generation: 1,
		CreationTimestamp: now, DeletionTimestamp: &now, DeletionGracePeriodSeconds: &zero,
		Finalizers:  []string{serviceCIDRFinalizer},
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "snapshift"},
		Annotations: map[string]string{"snapshift.io/reason": "the old service range, kept for Services exempt from the move until they are recreated in the new range"}}
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Terminating", LastTransitionTime: now,
		Message: "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"}
	cidrs := strings.Split(cidr.Join(r.keptCIDR.cidrs), ",")
	var obj runtime.Object
	switch r.keptCIDR.gvk.Version {
	case "v1":
		obj = &networkingv1.ServiceCIDR{ObjectMeta: meta, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
			Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{cond}}}
	case "v1beta1":
		obj = &networkingv1beta1.ServiceCIDR{ObjectMeta: meta, Spec: networkingv1beta1.ServiceCIDRSpec{CIDRs: cidrs},
			Status: networkingv1beta1.ServiceCIDRStatus{Conditions: []metav1.Condition{cond}}}
	default:
		return transform.NewObject{}, fmt.Errorf("ServiceCIDR objects are stored as %s, which this build cannot write", r.keptCIDR.gvk)
	}
	return transform.NewObject{Key: key, Value: &codec.Object{Encoding: codec.Protobuf, GVK: r.keptCIDR.gvk, Obj: obj},
		Changes: []transform.Change{{Field: "spec.cidrs", New: cidr.Join(r.keptCIDR.cidrs)}, {Field: "status", New: "terminating (kept Services only)"}}}, nil
}
