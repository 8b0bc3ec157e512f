//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestWebhooksIgnore: a ValidatingWebhookConfiguration with failurePolicy
// Fail whose backend Service has no pods (as every in-cluster backend is
// right after the migration, until its pods are recreated on the new
// network) blocks pod creation on the restored cluster, on a real
// kube-apiserver; migrated with --webhooks ignore, the same cluster creates
// the pod, and the webhook says Ignore.
func TestWebhooksIgnore(t *testing.T) {
	e := newTestEnv(t, 8*time.Minute)
	bin, ctx, dir, logDir := e.bin, e.ctx, e.dir, e.logDir
	p := newPKI(t, dir)

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, p, oldServiceCIDR, logDir)
	c := api.client
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}))
	must(c.CoreV1().ServiceAccounts("apps").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}))
	must(c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policy-system"}}, metav1.CreateOptions{}))
	must(c.CoreV1().Services("policy-system").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "policy"}, Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{}))
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	path := "/validate"
	must(c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "pods.policy.example.com", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: "policy-system", Name: "policy", Path: &path}},
			// Only the apps namespace: the apiserver's own writes elsewhere pass.
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "apps"}},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		}},
	}, metav1.CreateOptions{}))
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	try := func(name string, flags ...string) (kubernetes.Interface, error) {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o755)
		_, restored := fusedRestore(t, snap, d, []string{"--service-cidr", newServiceCIDR}, append([]string{"--service-cidr", newServiceCIDR}, flags...)...)
		a := startAPIServer(ctx, t, bin, restored, p, newServiceCIDR, logDir)
		t.Cleanup(a.stop)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}}}
		_, err := a.client.CoreV1().Pods("apps").Create(ctx, pod, metav1.CreateOptions{})
		return a.client, err
	}

	_, err := try("without")
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("[webhooks] FAIL without the rule, creating a pod: %v (want the webhook's failure)", err)
	}
	t.Logf("[webhooks] PASS without --webhooks ignore, the restored cluster refuses to create a pod: %v", err)

	c2, err := try("with", "--webhooks", "ignore")
	if err != nil {
		t.Fatalf("[webhooks] FAIL with --webhooks ignore, creating a pod: %v", err)
	}
	w, err := c2.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "policy", metav1.GetOptions{})
	if err != nil || w.Webhooks[0].FailurePolicy == nil || *w.Webhooks[0].FailurePolicy != admissionv1.Ignore {
		t.Fatalf("[webhooks] FAIL the webhook after the migration: %v %+v", err, w)
	}
	t.Logf("[webhooks] PASS with --webhooks ignore, the restored cluster creates the pod; the webhook's failurePolicy is Ignore")
}
