//go:build e2e

package e2e

import (
	"context"
	"crypto/rsa"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"

	"github.com/snapshift/snapshift/cmd/snapshift/app"
	"github.com/snapshift/snapshift/internal/etcdtest"
)

// TestClusterRestartCheck: a cluster kept at its old DNS address with the
// DNS bridge (keepServiceIPs + dnsBridge) is rebuilt; on the restored
// cluster under a real kube-apiserver and kube-controller-manager (no
// kubelet, no scheduler), `cluster check` names the Nodes that are not
// Ready and kube-dns not yet at the kubelets' clusterDNS; `cluster restart
// --dry-run` prints the stages; `cluster restart` runs them for real (the
// controllers' rollouts complete under kube-controller-manager, the bare
// pods on old addresses are deleted, the DNS handover leaves kube-dns at
// exactly the bridge's address, the bridge gone, and the webhook the
// rebuild set to Ignore (networking.webhooks: ignore) is set back to Fail by
// the JSON patch that tests its name); a second run skips what is done;
// `cluster check` then passes the DNS Service and events checks. Then what
// a real server produces on cue: a repair-loop event since the bundle fails
// the events check (Events listed by field selector), and a rollout that
// cannot finish (CoreDNS under a one-pod quota, no kubelet) stops a third
// `cluster restart` at its stage when --timeout runs out, saying what it
// waited for, with no later stage run.
func TestClusterRestartCheck(t *testing.T) {
	e := newTestEnv(t, 8*time.Minute)
	ver, bin, ctx, dir, logDir := e.ver, e.bin, e.ctx, e.dir, e.logDir

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, newPKI(t, dir), oldServiceCIDR, logDir)
	populate(ctx, t, api.client, api)
	populateControllers(ctx, t, api.client)
	populateWebhook(ctx, t, api.client)
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	peer, err1 := etcdtest.FreePort()
	client, err2 := etcdtest.FreePort()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	m := member{name: "e2e-1", node: "cp-e2e-1", addr: "127.0.0.1", peerURL: fmt.Sprintf("http://127.0.0.1:%d", peer), clientURL: fmt.Sprintf("http://127.0.0.1:%d", client)}
	bundle := filepath.Join(dir, "bundle")
	cfg := filepath.Join(dir, "rebuild.yaml")
	write(t, cfg, []byte(fmt.Sprintf(`apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: %s
output: %s
networking: {serviceSubnet: %s, podSubnet: %s, keepServiceIPs: [kube-system/kube-dns], dnsBridge: true, webhooks: ignore}
etcd:
  members:
  - {name: %s, nodeName: %s, advertiseAddress: %s, peerURL: %q, clientURL: %q}
manifests: {kubernetesVersion: %s}
`, snap, bundle, newServiceCIDR, newPodCIDR, m.name, m.node, m.addr, m.peerURL, m.clientURL, ver)), 0o600)
	run(t, "rebuild", "--config", cfg, "--quiet")

	// At the bundle's client URL: cluster check's etcd-identity asks it there.
	etcd2 := etcdtest.StartRestoredClusterT(t, []etcdtest.RestoredConfig{{DataDir: filepath.Join(bundle, "etcd", m.name), Name: m.name, PeerURL: m.peerURL,
		ClientPort: client}})[0]
	k := filepath.Join(bundle, "kubernetes", m.node)
	b := &pki{dir: filepath.Join(dir, "bundle-run"), certFile: filepath.Join(k, "pki", "apiserver.crt"), keyFile: filepath.Join(k, "pki", "apiserver.key"),
		saKey: filepath.Join(k, "pki", "sa.key"), saPub: filepath.Join(k, "pki", "sa.pub"), clientCA: filepath.Join(k, "pki", "ca.crt")}
	os.MkdirAll(b.dir, 0o700)
	b.tokens = filepath.Join(b.dir, "tokens.csv")
	write(t, b.tokens, []byte(adminToken+",admin,admin,system:masters\n"), 0o600)
	var err error
	if b.caPEM, err = os.ReadFile(b.clientCA); err != nil {
		t.Fatal(err)
	}
	saKey, err := keyutil.PrivateKeyFromFile(b.saKey)
	if err != nil {
		t.Fatal(err)
	}
	b.saPrivate = saKey.(*rsa.PrivateKey)
	// kube-controller-manager runs with the admin token (this corpus, made
	// through a bare apiserver, has no kubeadm RBAC bindings for its user).
	api2 := startAPIServer(ctx, t, bin, etcd2, b, newServiceCIDR, logDir)
	startKCM(t, bin, api2, b, newServiceCIDR, newPodCIDR, logDir)
	kc := retarget(t, filepath.Join(k, "super-admin.conf"), api2.url, b.dir)
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c := kubernetes.NewForConfigOrDie(rc)
	if p := webhookPolicy(ctx, t, c); p != admissionv1.Ignore {
		t.Fatalf("[cluster] FAIL the rebuild left webhook %s at %s, want Ignore", e2eWebhook, p)
	}

	// Before the restart: the check names what is wrong, one line each.
	out, code := runCode(t, "cluster", "check", "--bundle", bundle, "--kubeconfig", kc, "--timeout", "5s")
	t.Logf("[cluster] check before the restart (exit %d):\n%s", code, out)
	for _, want := range []string{"FAIL nodes", "Nodes not Ready (cp1, fake1, hw1, vm1)", "ok   kubernetes-service", "default/kubernetes at 172.24.0.1",
		"FAIL dns-service", "kube-system/kube-dns at 192.168.0.10, want 172.24.0.10", "FAIL dns-lookup",
		"ok   installer-ranges", "cluster check: ", "checks failed (nodes, pods, dns-service, dns-lookup"} {
		if !strings.Contains(out, want) {
			t.Errorf("[cluster] FAIL check does not say %q", want)
		}
	}
	if code != app.ExitVerify {
		t.Errorf("[cluster] FAIL check exit %d, want %d", code, app.ExitVerify)
	}

	out = run(t, "cluster", "restart", "--bundle", bundle, "--kubeconfig", kc, "--dry-run")
	t.Logf("[cluster] restart --dry-run:\n%s", out)
	order := []string{"[stage 1 cni] would   restart ds/kube-flannel-ds", "[stage 2 kube-proxy] would   restart ds/kube-proxy", "[stage 3 dns] would   restart deploy/coredns",
		"DNS handover: delete Service kube-system/kube-dns (192.168.0.10) and the bridge kube-system/kube-dns-bridge (172.24.0.10)", "would   delete 2 pods -n demo (bare pods): api-1, web-1",
		"restart deploy/web -n demo", "[stage 5 webhooks] would   set ValidatingWebhookConfiguration e2e-policy webhook " + e2eWebhook + " (webhooks[0]) back to failurePolicy Fail"}
	checkOrder(t, out, order)
	if svc, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); err != nil || svc.Spec.ClusterIP != "192.168.0.10" {
		t.Fatalf("[cluster] FAIL the dry run changed kube-dns: %v %v", svc.Spec.ClusterIP, err)
	}

	out = run(t, "cluster", "restart", "--bundle", bundle, "--kubeconfig", kc, "--timeout", "1m")
	t.Logf("[cluster] restart:\n%s", out)
	checkOrder(t, out, []string{"[stage 1 cni] done    restart ds/kube-flannel-ds", "[stage 3 dns] done    restart deploy/coredns",
		"[stage 3 dns] done    DNS handover", "kube-system/kube-dns recreated at 172.24.0.10; DNS gap", "[stage 4 workloads] done    delete 2 pods -n demo", "done    restart deploy/web",
		"[stage 5 webhooks] done    set ValidatingWebhookConfiguration e2e-policy webhook " + e2eWebhook + " (webhooks[0]) back to failurePolicy Fail", ": failurePolicy Fail"})
	if p := webhookPolicy(ctx, t, c); p != admissionv1.Fail {
		t.Errorf("[cluster] FAIL webhook %s is %s after the restart, want Fail", e2eWebhook, p)
	}
	svc, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "172.24.0.10" || svc.Spec.Selector["k8s-app"] != "kube-dns" || len(svc.Spec.Ports) != 3 {
		t.Fatalf("[cluster] FAIL kube-dns after the handover: %+v %v", svc, err)
	}
	cm, err := c.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubelet-config", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["kubelet"], "- 172.24.0.10") {
		t.Errorf("[cluster] FAIL the kubelets' clusterDNS is not kube-dns's address: %v", err)
	}
	if _, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns-bridge", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("[cluster] FAIL the bridge is still there: %v", err)
	}
	t.Logf("[cluster] PASS kube-dns ends at the kubelets' clusterDNS 172.24.0.10 (%s), the bridge deleted", svc.UID)
	d, err := c.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] == "" {
		t.Errorf("[cluster] FAIL coredns was not restarted: %v", err)
	}

	// A second run continues: everything is done, nothing is restarted again.
	out = run(t, "cluster", "restart", "--bundle", bundle, "--kubeconfig", kc, "--timeout", "1m")
	t.Logf("[cluster] restart again:\n%s", out)
	checkOrder(t, out, []string{"skipped restart ds/kube-flannel-ds", "restarted since the bundle was made; rollout complete", "skipped restart deploy/coredns",
		"skipped DNS handover", "kube-system/kube-dns is at 172.24.0.10 already", "skipped delete 2 pods -n demo",
		"skipped set ValidatingWebhookConfiguration e2e-policy", "failurePolicy is Fail already"})
	svc2, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || svc2.UID != svc.UID {
		t.Errorf("[cluster] FAIL the second run recreated kube-dns again: %v", err)
	}

	// CoreDNS wants two pods and a quota lets it have one: the check counts
	// against what the controller wants, not the pods that happen to exist.
	one := resource.MustParse("1")
	if _, err := c.CoreV1().ResourceQuotas("kube-system").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "one-pod"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: one}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments("kube-system").Patch(ctx, "coredns", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		pods, err := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err == nil && len(pods.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("[cluster] FAIL no single coredns pod under the one-pod quota: %d pods, %v", len(pods.Items), err)
		}
	}
	out, code = runCode(t, "cluster", "check", "--bundle", bundle, "--kubeconfig", kc, "--timeout", "5s")
	t.Logf("[cluster] check after the restart (exit %d):\n%s", code, out)
	for _, want := range []string{"ok   dns-service", "kube-system/kube-dns at 172.24.0.10", "FAIL nodes", "ok   service-ip-events",
		"ok   etcd-identity      1 members (cp-e2e-1) in etcd cluster ", "member IDs as report.json records",
		"FAIL dns-pods", "kube-system/deploy/coredns 0/2 Ready (1 pods)"} {
		if !strings.Contains(out, want) {
			t.Errorf("[cluster] FAIL check does not say %q", want)
		}
	}
	if code != app.ExitVerify {
		t.Errorf("[cluster] FAIL check exit %d, want %d (the Nodes run no kubelet)", code, app.ExitVerify)
	}
	checkEventsAndStuckRollout(ctx, t, c, bundle, kc)
	checkOldFlagsComeBack(ctx, t, api2, bundle, kc, func() *apiserver {
		return startAPIServer(ctx, t, bin, etcd2, b, oldServiceCIDR, logDir)
	})
}

// checkEventsAndStuckRollout: the service IP repair loop's complaint since
// the bundle was made fails the events check, found by the field selector
// the real server applies (an older one of the same reason does not count);
// and a third restart, with CoreDNS unable to reach its two replicas,
// fails at the DNS stage when --timeout runs out, naming the rollout and
// what it waited for, and runs no later stage.
func checkEventsAndStuckRollout(ctx context.Context, t *testing.T, c kubernetes.Interface, bundle, kc string) {
	t.Helper()
	for _, e := range []struct {
		name string
		at   time.Time
	}{{"web.repair-old", time.Now().Add(-48 * time.Hour)}, {"web.repair", time.Now()}} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: e.name}, Reason: "ClusterIPOutOfRange", Type: corev1.EventTypeWarning,
			Message:        "Cluster IP [IPv4]: 192.168.3.7 is not within any configured Service CIDR; please recreate service",
			InvolvedObject: corev1.ObjectReference{Kind: "Service", Namespace: "demo", Name: "web", APIVersion: "v1"}, Source: corev1.EventSource{Component: "ipallocator-repair-controller"},
			FirstTimestamp: metav1.Time{Time: e.at}, LastTimestamp: metav1.Time{Time: e.at}, Count: 1}
		if _, err := c.CoreV1().Events("demo").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, code := runCode(t, "cluster", "check", "--bundle", bundle, "--kubeconfig", kc, "--timeout", "5s")
	t.Logf("[cluster] check with a repair-loop event (exit %d):\n%s", code, out)
	for _, want := range []string{"FAIL service-ip-events", "1 events: ClusterIPOutOfRange demo/web: Cluster IP [IPv4]: 192.168.3.7 is not within any configured Service CIDR",
		"read: kubectl get events -A --field-selector reason=ClusterIPOutOfRange", "ok   dns-service"} {
		if !strings.Contains(out, want) {
			t.Errorf("[cluster] FAIL check does not say %q", want)
		}
	}
	if code != app.ExitVerify {
		t.Errorf("[cluster] FAIL check exit %d, want %d", code, app.ExitVerify)
	}

	out, code = runCode(t, "cluster", "restart", "--bundle", bundle, "--kubeconfig", kc, "--timeout", "5s")
	t.Logf("[cluster] restart with CoreDNS stuck (exit %d):\n%s", code, out)
	checkOrder(t, out, []string{"skipped restart ds/kube-flannel-ds", "[stage 3 dns] start   restart deploy/coredns",
		"[stage 3 dns] failed  restart deploy/coredns", "not done within --timeout 5s (1 out of 2 new replicas have been updated)",
		"snapshift: stage 3 dns: restart deploy/coredns -n kube-system and wait for its rollout (cluster DNS): not done within --timeout 5s"})
	if strings.Contains(out, "DNS handover") || strings.Contains(out, "[stage 4") {
		t.Errorf("[cluster] FAIL the restart went on after the stuck rollout")
	}
	if code != app.ExitError {
		t.Errorf("[cluster] FAIL restart exit %d, want %d", code, app.ExitError)
	}
}

// checkOldFlagsComeBack (issue 50): kube-apiserver restarted with its old
// --service-cluster-ip-range, as an installer's next run that does not
// know of the move would restart it: its default-ServiceCIDR controller
// leaves the kubernetes ServiceCIDR as the rebuild wrote it and reports
// the mismatch, and cluster check's installer-ranges check fails on it,
// naming the ServiceCIDR and the flag.
func checkOldFlagsComeBack(ctx context.Context, t *testing.T, api2 *apiserver, bundle, kc string, restart func() *apiserver) {
	t.Helper()
	api2.stop()
	old := restart()
	kcOld := retarget(t, kc, old.url, filepath.Dir(kc))
	var out string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		var code int
		out, code = runCode(t, "cluster", "check", "--bundle", bundle, "--kubeconfig", kcOld, "--timeout", "5s")
		if strings.Contains(out, "FAIL installer-ranges") || time.Now().After(deadline) {
			t.Logf("[cluster] check with kube-apiserver on its old flags (exit %d):\n%s", code, out)
			break
		}
	}
	for _, want := range []string{"FAIL installer-ranges", "ServiceCIDR kubernetes (a kube-apiserver restarted with its old --service-cluster-ip-range): KubernetesDefaultServiceCIDRInconsistent",
		"before the installer runs again"} {
		if !strings.Contains(out, want) {
			t.Errorf("[cluster] FAIL check with the old flags does not say %q", want)
		}
	}
}

// e2eWebhook fails closed at a URL in the old service range (the rules
// list it; with webhooks: ignore the rebuild sets it to Ignore), for
// ConfigMaps of a namespace nothing has: it never blocks the test.
const e2eWebhook = "config.e2e.example.com"

func populateWebhook(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	fail, none, url := admissionv1.Fail, admissionv1.SideEffectClassNone, "https://192.168.40.40:8443/validate"
	_, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: e2eWebhook, AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig:      admissionv1.WebhookClientConfig{URL: &url},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "e2e-none"}},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func webhookPolicy(ctx context.Context, t *testing.T, c kubernetes.Interface) admissionv1.FailurePolicyType {
	t.Helper()
	w, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "e2e-policy", metav1.GetOptions{})
	if err != nil || len(w.Webhooks) != 1 || w.Webhooks[0].FailurePolicy == nil {
		t.Fatalf("[cluster] FAIL reading webhook configuration e2e-policy: %v %+v", err, w)
	}
	return *w.Webhooks[0].FailurePolicy
}

func checkOrder(t *testing.T, out string, order []string) {
	t.Helper()
	last := -1
	for _, o := range order {
		i := strings.Index(out, o)
		if i <= last {
			t.Errorf("[cluster] FAIL %q missing or out of order", o)
			continue
		}
		last = i
	}
}

// populateControllers adds the controllers the restart rolls: flannel and
// kube-proxy DaemonSets (on no node: their rollouts complete with no
// kubelet), CoreDNS and a workload as Deployments with no replicas.
func populateControllers(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	zero := int32(0)
	tmpl := func(labels map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"snapshift.io/e2e-none": "true"}, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	}
	for _, ds := range []struct {
		ns, name string
		labels   map[string]string
	}{
		{"kube-flannel", "kube-flannel-ds", map[string]string{"app": "flannel", "k8s-app": "flannel"}},
		{"kube-system", "kube-proxy", map[string]string{"k8s-app": "kube-proxy"}},
	} {
		_, err := c.AppsV1().DaemonSets(ds.ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ds.ns, Name: ds.name, Labels: ds.labels},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: ds.labels}, Template: tmpl(ds.labels)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []struct {
		ns, name string
		labels   map[string]string
	}{
		{"kube-system", "coredns", map[string]string{"k8s-app": "kube-dns"}},
		{"demo", "web", map[string]string{"app": "web-server"}},
	} {
		_, err := c.AppsV1().Deployments(d.ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: d.name, Labels: d.labels},
			Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: d.labels}, Template: tmpl(d.labels)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}
