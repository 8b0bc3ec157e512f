package clusterops

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/snapshift/snapshift/restart"
)

// TestRestartEveryStage runs the whole staged restart on a fake cluster
// whose rollouts complete: every stage in order, every action done, each
// controller restarted as `kubectl rollout restart` does (its template's
// restartedAt at the run's time), the bare pod on an old address deleted
// and the others left, kube-dns recreated at the bridge's address with its
// labels and the bridge gone, the webhook back at Fail. A second run skips
// everything and writes nothing; a dry run touches nothing at all.
func TestRestartEveryStage(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset(fullCluster()...)
	var evs []Event
	res, err := Restart(ctx, testConfig(c, fullInput(), 5*time.Second, &evs))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range res.Stages {
		names = append(names, st.Name)
	}
	wantSame(t, "stages", names, []string{"cni", "kube-proxy", "dns", "node-local-dns", "webhook-backends", "workloads", "webhooks"})
	wantSame(t, "results", statuses(evs), []string{
		"done restart deploy/cilium-operator -n kube-system", "done restart ds/cilium -n kube-system", "done restart ds/kube-proxy -n kube-system",
		"done restart deploy/coredns -n kube-system", "done DNS handover: delete Service kube-system/kube-dns (192.168.0.10)",
		"done restart ds/node-local-dns -n kube-system", "done restart deploy/policy -n policy-system",
		"done delete 3 pods -n demo (bare pods): bare-gone, bare-new, bare-old", "done restart sts/db -n demo",
		"done set ValidatingWebhookConfiguration policy webhook pods.policy.example.com (webhooks[0]) back to failurePolicy Fail",
	})
	for i, e := range evs {
		if i%2 == 0 && e.Status != "start" || i%2 == 1 && evs[i-1].Action != e.Action {
			t.Errorf("event %d %+v: each action starts, then ends", i, e)
		}
	}
	for _, e := range evs {
		switch {
		case strings.HasPrefix(e.Action, "restart") && e.Status == "done":
			wantContains(t, "rollout detail", e.Detail, "rollout complete")
		case strings.HasPrefix(e.Action, "delete") && e.Status == "done":
			wantContains(t, "pods detail", e.Detail, "1 deleted, 2 already gone or on a new address")
		case strings.HasPrefix(e.Action, "DNS") && e.Status == "done":
			wantContains(t, "handover detail", e.Detail, "kube-system/kube-dns recreated at 172.24.0.10; DNS gap")
		}
	}
	checkRestarted(ctx, t, c)

	// Again: everything is done already.
	c.ClearActions()
	evs = nil
	if _, err := Restart(ctx, testConfig(c, fullInput(), 5*time.Second, &evs)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Status != "start" && e.Status != "skipped" {
			t.Errorf("second run: %s %s: %s", e.Status, e.Action, e.Detail)
		}
		switch {
		case strings.HasPrefix(e.Action, "restart") && e.Status == "skipped":
			wantContains(t, "second rollout", e.Detail, "restarted since the bundle was made; rollout complete")
		case strings.HasPrefix(e.Action, "delete") && e.Status == "skipped":
			wantContains(t, "second delete", e.Detail, "0 deleted, 3 already gone or on a new address")
		case strings.HasPrefix(e.Action, "DNS") && e.Status == "skipped":
			wantContains(t, "second handover", e.Detail, "kube-system/kube-dns is at 172.24.0.10 already")
		case strings.HasPrefix(e.Action, "set") && e.Status == "skipped":
			wantContains(t, "second webhook", e.Detail, "failurePolicy is Fail already")
		}
	}
	wantSame(t, "second run's writes", writes(c), nil)

	// A dry run says what it would do and does not call the API.
	c.ClearActions()
	evs = nil
	cfg := testConfig(c, fullInput(), 5*time.Second, &evs)
	cfg.DryRun = true
	res, err = Restart(ctx, cfg)
	if err != nil || !res.DryRun || len(res.Stages) != 7 || len(evs) != 10 {
		t.Fatalf("dry run: %v, %+v, %d events", err, res, len(evs))
	}
	for _, e := range evs {
		if e.Status != "would" {
			t.Errorf("dry run: %s %s", e.Status, e.Action)
		}
	}
	if n := len(c.Actions()); n != 0 {
		t.Errorf("the dry run made %d API calls: %v", n, c.Actions())
	}
}

// checkRestarted: what TestRestartEveryStage's run left in the cluster.
func checkRestarted(ctx context.Context, t *testing.T, c *fake.Clientset) {
	t.Helper()
	stamp := now.Format(time.RFC3339)
	apps := c.AppsV1()
	for _, d := range []string{"kube-system/cilium-operator", "kube-system/coredns", "policy-system/policy"} {
		ns, name, _ := strings.Cut(d, "/")
		o, err := apps.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || o.Spec.Template.Annotations[RestartedAtAnnotation] != stamp {
			t.Errorf("deployment %s not restarted at %s: %v %v", d, stamp, err, o.Spec.Template.Annotations)
		}
	}
	for _, d := range []string{"cilium", "kube-proxy", "node-local-dns"} {
		o, err := apps.DaemonSets("kube-system").Get(ctx, d, metav1.GetOptions{})
		if err != nil || o.Spec.Template.Annotations[RestartedAtAnnotation] != stamp {
			t.Errorf("daemon set %s not restarted: %v %v", d, err, o.Spec.Template.Annotations)
		}
	}
	if o, err := apps.StatefulSets("demo").Get(ctx, "db", metav1.GetOptions{}); err != nil || o.Spec.Template.Annotations[RestartedAtAnnotation] != stamp {
		t.Errorf("stateful set db not restarted: %v", err)
	}
	if _, err := c.CoreV1().Pods("demo").Get(ctx, "bare-old", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("bare-old (on an old address) not deleted: %v", err)
	}
	if _, err := c.CoreV1().Pods("demo").Get(ctx, "bare-new", metav1.GetOptions{}); err != nil {
		t.Errorf("bare-new (on a new address) deleted: %v", err)
	}
	s, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil || s.Spec.ClusterIP != "172.24.0.10" || s.Spec.ClusterIPs[0] != "172.24.0.10" || s.Labels["k8s-app"] != "kube-dns" ||
		s.Spec.Selector["k8s-app"] != "kube-dns" || len(s.Spec.Ports) != 1 || s.UID == "uid-svc-kube-dns" {
		t.Errorf("kube-dns after the handover: %v %+v", err, s)
	}
	if _, err := c.CoreV1().Services("kube-system").Get(ctx, "kube-dns-bridge", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the bridge is still there: %v", err)
	}
	w, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "policy", metav1.GetOptions{})
	if err != nil || *w.Webhooks[0].FailurePolicy != admissionv1.Fail {
		t.Errorf("webhook not back at Fail: %v %+v", err, w)
	}
}

var errBoom = errors.New("boom")

// TestRestartFailures: each failure an action can meet stops the restart
// at that action, names it and says why (the later stages not run).
func TestRestartFailures(t *testing.T) {
	dnsOnly := func() *restart.Input {
		in := fullInput()
		in.Workloads, in.Pods, in.Webhooks = in.Workloads[3:4], nil, nil
		return in // stage 1 is cni's note: no agent in the input
	}
	for _, c := range []struct {
		name    string
		in      func() *restart.Input
		objs    []runtime.Object
		setup   func(*fake.Clientset)
		timeout time.Duration
		action  string   // the failed action's prefix
		want    []string // in the error
		stages  int      // stages in the result
	}{
		{name: "daemon set rollout stuck", in: fullInput, timeout: 100 * time.Millisecond,
			objs: []runtime.Object{stuckDaemonSet()}, action: "restart ds/cilium", stages: 1,
			want: []string{"stage 1 cni: restart ds/cilium -n kube-system", "not done within --timeout 100ms (1 out of 3 new pods have been updated)"}},
		{name: "deployment not available", in: fullInput, timeout: 100 * time.Millisecond,
			objs: []runtime.Object{unavailableDeployment()}, action: "restart deploy/coredns", stages: 3,
			want: []string{"stage 3 dns: restart deploy/coredns", "(1 of 2 updated replicas are available)"}},
		{name: "progress deadline exceeded", in: fullInput, timeout: time.Minute,
			objs: []runtime.Object{pastDeadline()}, action: "restart deploy/cilium-operator", stages: 1,
			want: []string{`deployment "cilium-operator" exceeded its progress deadline`}},
		{name: "stateful set between revisions", in: fullInput, timeout: 100 * time.Millisecond,
			objs: []runtime.Object{betweenRevisions()}, action: "restart sts/db", stages: 6,
			want: []string{"stage 6 workloads: restart sts/db -n demo", "(2 pods at revision db-2)"}},
		{name: "controller missing", in: fullInput, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				_ = c.Tracker().Delete(gvr("apps", "daemonsets"), "kube-system", "kube-proxy")
			},
			action: "restart ds/kube-proxy", stages: 2, want: []string{"reading kube-system/ds/kube-proxy", "not found"}},
		{name: "read refused", in: dnsOnly, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				failOn(c, "get", "deployments", "coredns", apierrors.NewForbidden(gr("apps", "deployments"), "coredns", errBoom))
			},
			action: "restart deploy/coredns", stages: 2, want: []string{"stage 2 dns: restart deploy/coredns", "reading kube-system/deploy/coredns", "forbidden", "boom"}},
		{name: "patch refused", in: fullInput, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				failOn(c, "patch", "daemonsets", "kube-proxy", apierrors.NewConflict(gr("apps", "daemonsets"), "kube-proxy", errBoom))
			},
			action: "restart ds/kube-proxy", stages: 2, want: []string{"restarting kube-system/ds/kube-proxy", "Operation cannot be fulfilled", "boom"}},
		{name: "a kind no rollout restarts", timeout: time.Second, stages: 1, action: "restart deploy/nightly",
			in: func() *restart.Input {
				return &restart.Input{Created: created, Workloads: []restart.Workload{{Kind: "CronJob", Namespace: "demo", Name: "nightly", Selector: "app=nightly"}}}
			},
			want: []string{"cannot roll a CronJob"}},
		{name: "pod unreadable", in: fullInput, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				failOn(c, "get", "pods", "bare-new", apierrors.NewServiceUnavailable("etcd is down"))
			},
			action: "delete 3 pods", stages: 6, want: []string{"stage 6 workloads: delete 3 pods -n demo", "reading pod demo/bare-new", "etcd is down"}},
		{name: "pod not deletable", in: fullInput, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				failOn(c, "delete", "pods", "bare-old", apierrors.NewForbidden(gr("", "pods"), "bare-old", errBoom))
			},
			action: "delete 3 pods", stages: 6, want: []string{"deleting pod demo/bare-old", "forbidden"}},
		{name: "webhook changed since the bundle", in: fullInput, timeout: time.Second,
			objs:   []runtime.Object{validating("policy", "other.example.com", policyOf(admissionv1.Ignore))},
			action: "set ValidatingWebhookConfiguration", stages: 7,
			want: []string{"ValidatingWebhookConfiguration policy has no webhook pods.policy.example.com at webhooks[0] (changed since the bundle was made): set its failurePolicy by hand"}},
		{name: "webhook configuration gone", in: fullInput, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				_ = c.Tracker().Delete(gvr("admissionregistration.k8s.io", "validatingwebhookconfigurations"), "", "policy")
			},
			action: "set ValidatingWebhookConfiguration", stages: 7, want: []string{"reading ValidatingWebhookConfiguration policy", "not found"}},
		{name: "webhook patch refused", in: fullInput, timeout: time.Second,
			setup: func(c *fake.Clientset) {
				failOn(c, "patch", "validatingwebhookconfigurations", "policy", apierrors.NewInvalid(schema.GroupKind{Kind: "ValidatingWebhookConfiguration"}, "policy", field.ErrorList{field.Invalid(field.NewPath("webhooks"), "x", "test failed")}))
			},
			action: "set ValidatingWebhookConfiguration", stages: 7, want: []string{"setting ValidatingWebhookConfiguration policy webhook pods.policy.example.com back to Fail", "test failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := fake.NewClientset(replace(fullCluster(), c.objs)...)
			if c.setup != nil {
				c.setup(cl)
			}
			var evs []Event
			res, err := Restart(context.Background(), testConfig(cl, c.in(), c.timeout, &evs))
			if err == nil {
				t.Fatalf("no error; events %v", statuses(evs))
			}
			wantContains(t, "error", err.Error(), c.want...)
			if strings.Contains(err.Error(), "context deadline exceeded") {
				t.Errorf("the error says Go's %q: %v", "context deadline exceeded", err)
			}
			last := evs[len(evs)-1]
			if last.Status != "failed" || !strings.HasPrefix(last.Action, c.action) || last.Detail == "" || !strings.HasSuffix(err.Error(), ": "+last.Detail) {
				t.Errorf("last event %+v, want %s failed with the error's cause", last, c.action)
			}
			if len(res.Stages) != c.stages {
				t.Errorf("%d stages in the result, want %d (none after the failure)", len(res.Stages), c.stages)
			}
		})
	}
}

func gvr(group, resource string) schema.GroupVersionResource {
	v := "v1"
	return schema.GroupVersionResource{Group: group, Version: v, Resource: resource}
}

func gr(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// replace is objs with each of repl in place of the object of its kind and
// name.
func replace(objs, repl []runtime.Object) []runtime.Object {
	for _, r := range repl {
		rm := r.(metav1.Object)
		for i, o := range objs {
			om := o.(metav1.Object)
			if om.GetName() == rm.GetName() && om.GetNamespace() == rm.GetNamespace() && sameKind(o, r) {
				objs[i] = r
			}
		}
	}
	return objs
}

func sameKind(a, b runtime.Object) bool {
	switch a.(type) {
	case *appsv1.Deployment:
		_, ok := b.(*appsv1.Deployment)
		return ok
	case *appsv1.DaemonSet:
		_, ok := b.(*appsv1.DaemonSet)
		return ok
	case *appsv1.StatefulSet:
		_, ok := b.(*appsv1.StatefulSet)
		return ok
	case *admissionv1.ValidatingWebhookConfiguration:
		_, ok := b.(*admissionv1.ValidatingWebhookConfiguration)
		return ok
	}
	return false
}

func stuckDaemonSet() *appsv1.DaemonSet {
	ds := daemonSet("kube-system", "cilium", ciliumLabels, 3)
	ds.Status.UpdatedNumberScheduled = 1
	return ds
}

func unavailableDeployment() *appsv1.Deployment {
	d := deployment("kube-system", "coredns", dnsLabels, 2)
	d.Status.AvailableReplicas = 1
	return d
}

func pastDeadline() *appsv1.Deployment {
	d := deployment("kube-system", "cilium-operator", ciliumOpLabels, 2)
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
	return d
}

func betweenRevisions() *appsv1.StatefulSet {
	s := statefulSet("demo", "db", dbLabels, 2)
	s.Status.UpdateRevision = "db-2"
	return s
}

// TestHandoverCases: the DNS handover after an interrupted run (kube-dns
// deleted, recreated from the bridge's copy), with the allocator slow to
// release the bridge's address (the create refused as Invalid, tried
// again), and its failures: both Services gone, a create refused for
// another reason (the Service to create by hand is printed), a bridge that
// a finalizer keeps, kube-dns unreadable.
func TestHandoverCases(t *testing.T) {
	act := restart.Action{Type: restart.ActDNSHandover, Namespace: "kube-system", Name: "kube-dns", Bridge: "kube-system/kube-dns-bridge", OldAddress: "192.168.0.10", Address: "172.24.0.10"}
	run := func(t *testing.T, c *fake.Clientset, timeout time.Duration) (bool, string, error) {
		t.Helper()
		var evs []Event
		cfg := testConfig(c, fullInput(), timeout, &evs)
		cfg.defaults()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return handover(ctx, &cfg, act)
	}
	bridgeOnly := func() *fake.Clientset {
		return fake.NewClientset(service("kube-system", "kube-dns-bridge", "172.24.0.10", dnsLabels))
	}

	t.Run("resumed from the bridge", func(t *testing.T) {
		c := bridgeOnly()
		skipped, detail, err := run(t, c, time.Second)
		if err != nil || skipped {
			t.Fatalf("%v %v %s", skipped, err, detail)
		}
		wantContains(t, "detail", detail, "recreated at 172.24.0.10")
		s, err := c.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
		if err != nil || s.Spec.ClusterIP != "172.24.0.10" || s.Spec.Selector["k8s-app"] != "kube-dns" {
			t.Errorf("kube-dns: %v %+v", err, s)
		}
	})
	t.Run("address not yet released", func(t *testing.T) {
		c := fake.NewClientset(service("kube-system", "kube-dns", "192.168.0.10", dnsLabels), service("kube-system", "kube-dns-bridge", "172.24.0.10", dnsLabels))
		refused := 0
		c.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
			if refused < 3 {
				refused++
				return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "kube-dns",
					field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), "172.24.0.10", "provided IP is already allocated")})
			}
			return false, nil, nil
		})
		if _, detail, err := run(t, c, 5*time.Second); err != nil || refused != 3 {
			t.Fatalf("after %d refusals: %v %s", refused, err, detail)
		}
	})
	t.Run("both gone", func(t *testing.T) {
		_, _, err := run(t, fake.NewClientset(), time.Second)
		if err == nil {
			t.Fatal("no error")
		}
		wantContains(t, "error", err.Error(), "Service kube-system/kube-dns and its bridge kube-system/kube-dns-bridge are both gone", "create kube-system/kube-dns at 172.24.0.10 by hand")
	})
	t.Run("create refused", func(t *testing.T) {
		c := bridgeOnly()
		failOn(c, "create", "services", "", apierrors.NewForbidden(gr("", "services"), "kube-dns", errBoom))
		_, _, err := run(t, c, time.Second)
		if err == nil {
			t.Fatal("no error")
		}
		wantContains(t, "error", err.Error(), "creating kube-system/kube-dns at 172.24.0.10 (create it by hand from {", `"clusterIP":"172.24.0.10"`, "forbidden")
	})
	t.Run("bridge held by a finalizer", func(t *testing.T) {
		c := bridgeOnly()
		c.PrependReactor("delete", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
			o, err := c.Tracker().Get(gvr("", "services"), a.GetNamespace(), actionName(a))
			if err != nil {
				return true, nil, err
			}
			s := o.(*corev1.Service)
			s.Finalizers, s.DeletionTimestamp = []string{"example.com/hold"}, &metav1.Time{Time: now}
			return true, nil, c.Tracker().Update(gvr("", "services"), s, s.Namespace)
		})
		_, _, err := run(t, c, 200*time.Millisecond)
		if err == nil {
			t.Fatal("no error")
		}
		wantContains(t, "error", err.Error(), "Service kube-system/kube-dns-bridge is not gone (finalizers [example.com/hold])")
	})
	t.Run("kube-dns unreadable", func(t *testing.T) {
		c := bridgeOnly()
		failOn(c, "get", "services", "kube-dns", apierrors.NewServiceUnavailable("etcd is down"))
		_, _, err := run(t, c, time.Second)
		if err == nil || !strings.Contains(err.Error(), "reading Service kube-system/kube-dns: etcd is down") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestWebhookFailKinds: a MutatingWebhookConfiguration is set back too,
// by a JSON patch that tests the webhook's name first; a webhook with no
// failurePolicy (the API's default, Fail) is left alone.
func TestWebhookFailKinds(t *testing.T) {
	ctx := context.Background()
	ignore := admissionv1.Ignore
	c := fake.NewClientset(
		&admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "engine"},
			Webhooks: []admissionv1.MutatingWebhook{{Name: "first.example.com"}, {Name: "pods.engine.example.com", FailurePolicy: &ignore}}},
		validating("defaulted", "pods.default.example.com", nil))
	var evs []Event
	cfg := testConfig(c, fullInput(), time.Second, &evs)
	w := restart.Webhook{Kind: "MutatingWebhookConfiguration", Configuration: "engine", Webhook: "pods.engine.example.com", Index: 1, Ignored: true}
	skipped, detail, err := webhookFail(ctx, &cfg, restart.Action{Type: restart.ActWebhookFail, Webhook: &w})
	if err != nil || skipped || detail != "failurePolicy Fail" {
		t.Fatalf("%v %v %q", skipped, err, detail)
	}
	var patch string
	for _, a := range c.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patch = string(p.GetPatch())
		}
	}
	if patch != `[{"op":"test","path":"/webhooks/1/name","value":"pods.engine.example.com"},{"op":"replace","path":"/webhooks/1/failurePolicy","value":"Fail"}]` {
		t.Errorf("patch %s", patch)
	}
	m, _ := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "engine", metav1.GetOptions{})
	if m.Webhooks[0].FailurePolicy != nil || *m.Webhooks[1].FailurePolicy != admissionv1.Fail {
		t.Errorf("webhooks after: %+v", m.Webhooks)
	}
	d := restart.Webhook{Kind: "ValidatingWebhookConfiguration", Configuration: "defaulted", Webhook: "pods.default.example.com", Ignored: true}
	if skipped, detail, err := webhookFail(ctx, &cfg, restart.Action{Type: restart.ActWebhookFail, Webhook: &d}); err != nil || !skipped || detail != "failurePolicy is Fail already" {
		t.Errorf("defaulted policy: %v %v %q", skipped, err, detail)
	}
	out := restart.Webhook{Kind: "ValidatingWebhookConfiguration", Configuration: "defaulted", Webhook: "pods.default.example.com", Index: 4}
	if _, _, err := webhookFail(ctx, &cfg, restart.Action{Type: restart.ActWebhookFail, Webhook: &out}); err == nil || !strings.Contains(err.Error(), "at webhooks[4]") {
		t.Errorf("index past the list: %v", err)
	}
	if _, _, err := runAction(ctx, &cfg, restart.Action{Type: "reboot"}); err == nil || err.Error() != `unknown action type "reboot"` {
		t.Errorf("unknown action: %v", err)
	}
}
