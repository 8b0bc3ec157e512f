package clusterops

// Fixtures for the tests on client-go's fake clientset: a cluster whose
// controllers have finished their rollouts, the bundle's input that names
// them, and reactors for what a real kube-apiserver does that the fake's
// object tracker does not (generateName, field selectors) or what a test
// needs on cue (an error, a stuck deletion, a refused create).

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/snapshift/snapshift/restart"
)

// created is when the test bundle was made; now is the test's clock.
var (
	created = time.Date(2025, 9, 15, 10, 0, 0, 0, time.UTC)
	now     = created.Add(time.Hour)
)

// testConfig is a Config on c with a fast poll, the fixed clock and every
// event recorded.
func testConfig(c *fake.Clientset, in *restart.Input, timeout time.Duration, events *[]Event) Config {
	return Config{Client: c, Input: in, Timeout: timeout, Poll: time.Millisecond, Now: func() time.Time { return now },
		Progress: func(e Event) { *events = append(*events, e) }}
}

func meta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + ns + "-" + name), Generation: 1}
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}}}
}

// deployment is a Deployment whose rollout is complete (as kube-controller-manager
// leaves it): the generation observed, every replica updated and available.
func deployment(ns, name string, labels map[string]string, n int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: meta(ns, name, labels),
		Spec:   appsv1.DeploymentSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}}
}

// daemonSet is a DaemonSet whose rolling update is complete on n nodes.
func daemonSet(ns, name string, labels map[string]string, n int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: meta(ns, name, labels),
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: n, CurrentNumberScheduled: n, UpdatedNumberScheduled: n, NumberReady: n, NumberAvailable: n}}
}

// statefulSet is a StatefulSet whose rolling update is complete.
func statefulSet(ns, name string, labels map[string]string, n int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: meta(ns, name, labels),
		Spec: appsv1.StatefulSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(labels),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: n, ReadyReplicas: n, UpdatedReplicas: n, CurrentRevision: "db-1", UpdateRevision: "db-1"}}
}

// pod is a running pod at ip; ready sets its Ready condition.
func pod(ns, name string, labels map[string]string, ip string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-pod-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/c:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func service(ns, name, ip string, labels map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-svc-" + name)},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Selector: labels,
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
}

func validating(name, webhook string, policy *admissionv1.FailurePolicyType) *admissionv1.ValidatingWebhookConfiguration {
	return &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: webhook, FailurePolicy: policy}}}
}

func policyOf(p admissionv1.FailurePolicyType) *admissionv1.FailurePolicyType { return &p }

// Labels of the upstream manifests (package cni's roles, kubeadm's addons).
var (
	ciliumOpLabels = map[string]string{"io.cilium/app": "operator", "name": "cilium-operator"}
	ciliumLabels   = map[string]string{"k8s-app": "cilium"}
	proxyLabels    = map[string]string{"k8s-app": "kube-proxy"}
	dnsLabels      = map[string]string{"k8s-app": "kube-dns"}
	nodeLocal      = map[string]string{"k8s-app": "node-local-dns"}
	policyLabels   = map[string]string{"app": "policy"}
	dbLabels       = map[string]string{"app": "db"}
)

// fullInput is a bundle's input with a workload of every stage: Cilium's
// operator and agents, kube-proxy, CoreDNS with the DNS bridge, NodeLocal
// DNSCache, a webhook's backend, a StatefulSet, three bare pods on old
// addresses and the webhook the rebuild set to Ignore.
func fullInput() *restart.Input {
	return &restart.Input{
		Created: created,
		Service: restart.Ranges{Old: []string{"192.168.0.0/16"}, New: []string{"172.24.0.0/16"}},
		Pod:     restart.Ranges{Old: []string{"10.244.0.0/16"}, New: []string{"10.55.0.0/16"}},
		CNI:     []string{"cilium"},
		Workloads: []restart.Workload{
			{Kind: "Deployment", Namespace: "kube-system", Name: "cilium-operator", Selector: "io.cilium/app=operator,name=cilium-operator", Role: restart.RoleCiliumOp},
			{Kind: "DaemonSet", Namespace: "kube-system", Name: "cilium", Selector: "k8s-app=cilium", Role: "cilium"},
			{Kind: "DaemonSet", Namespace: "kube-system", Name: "kube-proxy", Selector: "k8s-app=kube-proxy", Role: restart.RoleKubeProxy},
			{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Selector: "k8s-app=kube-dns", Role: restart.RoleClusterDNS},
			{Kind: "DaemonSet", Namespace: "kube-system", Name: "node-local-dns", Selector: "k8s-app=node-local-dns", Role: restart.RoleNodeLocalDNS},
			{Kind: "Deployment", Namespace: "policy-system", Name: "policy", Selector: "app=policy", Backs: []string{"policy"}},
			{Kind: "StatefulSet", Namespace: "demo", Name: "db", Selector: "app=db"},
		},
		Pods: []restart.Pod{
			{Namespace: "demo", Name: "bare-old", IPs: []string{"10.244.1.5"}},
			{Namespace: "demo", Name: "bare-gone", IPs: []string{"10.244.1.6"}},
			{Namespace: "demo", Name: "bare-new", IPs: []string{"10.244.1.7"}},
		},
		DNS: &restart.DNS{Service: "kube-system/kube-dns", Address: "192.168.0.10", Kept: true, Bridge: "kube-system/kube-dns-bridge", BridgeAddress: "172.24.0.10"},
		Webhooks: []restart.Webhook{{Kind: "ValidatingWebhookConfiguration", Configuration: "policy", Webhook: "pods.policy.example.com",
			Service: "policy-system/policy", Ignored: true}},
	}
}

// fullCluster is the restored cluster fullInput describes, every rollout
// complete, before the restart: kube-dns at its kept address beside the
// bridge, the webhook at Ignore, bare-old on its old address, bare-new
// recreated on a new one, bare-gone gone.
func fullCluster() []runtime.Object {
	return []runtime.Object{
		deployment("kube-system", "cilium-operator", ciliumOpLabels, 2),
		daemonSet("kube-system", "cilium", ciliumLabels, 3),
		daemonSet("kube-system", "kube-proxy", proxyLabels, 3),
		deployment("kube-system", "coredns", dnsLabels, 2),
		daemonSet("kube-system", "node-local-dns", nodeLocal, 3),
		deployment("policy-system", "policy", policyLabels, 1),
		statefulSet("demo", "db", dbLabels, 2),
		pod("demo", "bare-old", nil, "10.244.1.5", true),
		pod("demo", "bare-new", nil, "10.55.1.7", true),
		service("kube-system", "kube-dns", "192.168.0.10", dnsLabels),
		service("kube-system", "kube-dns-bridge", "172.24.0.10", dnsLabels),
		validating("policy", "pods.policy.example.com", policyOf(admissionv1.Ignore)),
	}
}

// generateNames gives a created object with generateName a name, as the
// apiserver does (the tracker stores what it is given).
func generateNames(c *fake.Clientset) {
	n := 0
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetName() == "" && o.GetGenerateName() != "" {
			n++
			o.SetName(fmt.Sprintf("%sx%04d", o.GetGenerateName(), n))
		}
		return false, nil, nil
	})
}

// fieldSelectedEvents lists Events by their field selector (reason=...), as
// the apiserver does; the tracker ignores field selectors.
func fieldSelectedEvents(c *fake.Clientset) {
	c.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		o, err := c.Tracker().List(schema.GroupVersionResource{Version: "v1", Resource: "events"}, schema.GroupVersionKind{Version: "v1", Kind: "Event"}, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := o.(*corev1.EventList)
		out := &corev1.EventList{}
		for _, e := range list.Items {
			if sel == nil || sel.Matches(fields.Set{"reason": e.Reason}) {
				out.Items = append(out.Items, e)
			}
		}
		return true, out, nil
	})
}

// failOn makes every verb on resource (of a name, "" for any) fail with err.
func failOn(c *fake.Clientset, verb, resource, name string, err error) {
	c.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name != "" && actionName(a) != name {
			return false, nil, nil
		}
		return true, nil, err
	})
}

func actionName(a k8stesting.Action) string {
	switch a := a.(type) {
	case k8stesting.GetAction:
		return a.GetName()
	case k8stesting.DeleteAction:
		return a.GetName()
	case k8stesting.PatchAction:
		return a.GetName()
	case k8stesting.CreateAction:
		if o, ok := a.GetObject().(metav1.Object); ok {
			return o.GetName()
		}
	}
	return ""
}

// writes are the verbs of c's actions that change something, as
// "verb resource/name".
func writes(c *fake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource+"/"+actionName(a))
		}
	}
	return out
}

// statuses are the final statuses of the events (start left out), as
// "status action-prefix".
func statuses(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if e.Status != "start" {
			out = append(out, e.Status+" "+strings.SplitN(e.Action, " and ", 2)[0])
		}
	}
	return out
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q does not say %q", what, got, w)
		}
	}
}

func wantSame(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
