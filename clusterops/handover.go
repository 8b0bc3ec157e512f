package clusterops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/restart"
)

// handover moves the cluster DNS Service to the bridge's address, the
// kubelets' clusterDNS: the Service cannot change its clusterIP and cannot
// take an address the bridge holds, so it is deleted, the bridge is
// deleted, and it is created again at that address at once. The DNS gap is
// the time from the bridge's deletion to the creation (then kube-proxy's
// next sync). Already at the address: skipped. Deleted by an interrupted
// run: created from the bridge's copy (the bridge was made from it, with its
// selector and ports).
func handover(ctx context.Context, cfg *Config, a restart.Action) (bool, string, error) {
	svcs := cfg.Client.CoreV1().Services(a.Namespace)
	bns, bname, _ := strings.Cut(a.Bridge, "/")
	bridges := cfg.Client.CoreV1().Services(bns)
	cur, err := svcs.Get(ctx, a.Name, metav1.GetOptions{})
	switch {
	case err == nil && cur.Spec.ClusterIP == a.Address:
		return true, fmt.Sprintf("%s/%s is at %s already", a.Namespace, a.Name, a.Address), nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, "", fmt.Errorf("reading Service %s/%s: %w", a.Namespace, a.Name, err)
	}
	tmpl := cur
	if err != nil { // gone: an earlier run deleted it
		b, berr := bridges.Get(ctx, bname, metav1.GetOptions{})
		if berr != nil {
			return false, "", fmt.Errorf("Service %s/%s and its bridge %s are both gone (%v): create %s/%s at %s by hand", a.Namespace, a.Name, a.Bridge, berr, a.Namespace, a.Name, a.Address)
		}
		tmpl = b
	}
	next := recreated(tmpl, a)
	if cur != nil {
		if err := deleteService(ctx, cfg, a.Namespace, a.Name); err != nil {
			return false, "", err
		}
	}
	t0 := cfg.Now()
	if err := deleteService(ctx, cfg, bns, bname); err != nil {
		return false, "", err
	}
	for {
		_, err := svcs.Create(ctx, next, metav1.CreateOptions{})
		if err == nil {
			break
		}
		// The address is released with the bridge's deletion; until the
		// allocator sees it free the create is refused: try again at once.
		if !apierrors.IsInvalid(err) && !apierrors.IsAlreadyExists(err) || ctx.Err() != nil {
			old, _ := json.Marshal(next)
			return false, "", fmt.Errorf("creating %s/%s at %s (create it by hand from %s): %w", a.Namespace, a.Name, a.Address, old, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	gap := cfg.Now().Sub(t0)
	return false, fmt.Sprintf("%s/%s recreated at %s; DNS gap %s from the bridge's deletion to the create (kube-proxy's next sync follows)",
		a.Namespace, a.Name, a.Address, gap.Round(time.Millisecond)), nil
}

// recreated is the DNS Service to create: the template's labels,
// annotations (but snapshift's own) and spec, at the final address.
func recreated(tmpl *corev1.Service, a restart.Action) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace, Labels: tmpl.Labels}}
	for k, v := range tmpl.Annotations {
		if !strings.HasPrefix(k, "snapshift.io/") && k != corev1.LastAppliedConfigAnnotation {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[k] = v
		}
	}
	s.Spec = *tmpl.Spec.DeepCopy()
	s.Spec.ClusterIP, s.Spec.ClusterIPs = a.Address, []string{a.Address}
	if addr, err := netip.ParseAddr(a.Address); err == nil {
		fam := corev1.IPv4Protocol
		if addr.Is6() {
			fam = corev1.IPv6Protocol
		}
		s.Spec.IPFamilies = []corev1.IPFamily{fam}
		if p := s.Spec.IPFamilyPolicy; p != nil && *p == corev1.IPFamilyPolicySingleStack || p == nil {
			single := corev1.IPFamilyPolicySingleStack
			s.Spec.IPFamilyPolicy = &single
		}
	}
	return s
}

// deleteService deletes a Service and waits until it is gone (a finalizer
// would hold it); already gone is fine.
func deleteService(ctx context.Context, cfg *Config, ns, name string) error {
	svcs := cfg.Client.CoreV1().Services(ns)
	cur, err := svcs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Service %s/%s: %w", ns, name, err)
	}
	uid := cur.UID
	if err := svcs.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Service %s/%s: %w", ns, name, err)
	}
	finalizers := cur.Finalizers
	for {
		s, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && s.UID != uid {
			return nil
		}
		if err == nil {
			finalizers = s.Finalizers
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Service %s/%s is not gone (finalizers %v): %w", ns, name, finalizers, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// webhookFail sets a webhook back to failurePolicy Fail, testing its name
// at its index first (a configuration changed since is left alone).
func webhookFail(ctx context.Context, cfg *Config, a restart.Action) (bool, string, error) {
	w := a.Webhook
	adm := cfg.Client.AdmissionregistrationV1()
	var name string
	var policy *string
	switch w.Kind {
	case "MutatingWebhookConfiguration":
		c, err := adm.MutatingWebhookConfigurations().Get(ctx, w.Configuration, metav1.GetOptions{})
		if err != nil {
			return false, "", fmt.Errorf("reading %s %s: %w", w.Kind, w.Configuration, err)
		}
		if w.Index < len(c.Webhooks) {
			name, policy = c.Webhooks[w.Index].Name, (*string)(c.Webhooks[w.Index].FailurePolicy)
		}
	default:
		c, err := adm.ValidatingWebhookConfigurations().Get(ctx, w.Configuration, metav1.GetOptions{})
		if err != nil {
			return false, "", fmt.Errorf("reading %s %s: %w", w.Kind, w.Configuration, err)
		}
		if w.Index < len(c.Webhooks) {
			name, policy = c.Webhooks[w.Index].Name, (*string)(c.Webhooks[w.Index].FailurePolicy)
		}
	}
	if name != w.Webhook {
		return false, "", fmt.Errorf("%s %s has no webhook %s at webhooks[%d] (changed since the bundle was made): set its failurePolicy by hand", w.Kind, w.Configuration, w.Webhook, w.Index)
	}
	if policy == nil || *policy == "Fail" {
		return true, "failurePolicy is Fail already", nil
	}
	patch := fmt.Sprintf(`[{"op":"test","path":"/webhooks/%d/name","value":%q},{"op":"replace","path":"/webhooks/%d/failurePolicy","value":"Fail"}]`, w.Index, w.Webhook, w.Index)
	var err error
	if w.Kind == "MutatingWebhookConfiguration" {
		_, err = adm.MutatingWebhookConfigurations().Patch(ctx, w.Configuration, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	} else {
		_, err = adm.ValidatingWebhookConfigurations().Patch(ctx, w.Configuration, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		return false, "", fmt.Errorf("setting %s %s webhook %s back to Fail: %w", w.Kind, w.Configuration, w.Webhook, err)
	}
	return false, "failurePolicy Fail", nil
}

func parsePrefixes(ss []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func inAny(s string, ps []netip.Prefix) bool {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return false
	}
	for _, p := range ps {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}
