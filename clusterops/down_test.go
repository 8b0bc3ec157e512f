package clusterops

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/snapshift/snapshift/restart"
)

// proxyOnly is a bundle's input whose restart is kube-proxy's DaemonSet
// alone (the service range moved).
func proxyOnly() *restart.Input {
	return &restart.Input{Created: created,
		Service:   restart.Ranges{Old: []string{"192.168.0.0/16"}, New: []string{"172.24.0.0/16"}},
		Workloads: []restart.Workload{{Kind: "DaemonSet", Namespace: "kube-system", Name: "kube-proxy", Selector: "k8s-app=kube-proxy", Role: restart.RoleKubeProxy}}}
}

// dsPod is a pod of DaemonSet kube-system/kube-proxy on node, with the
// template's restartedAt at (old pods: "").
func dsPod(name, node, at string, ready bool) *corev1.Pod {
	p := onHost(pod("kube-system", name, proxyLabels, "10.0.0.1", ready))
	p.Spec.NodeName = node
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kube-proxy", UID: types.UID("uid-kube-system-kube-proxy"), Controller: &yes}}
	if at != "" {
		p.Annotations = map[string]string{RestartedAtAnnotation: at}
	}
	return p
}

// stalledDaemonSet is three nodes, w2 down (NotReady), and kube-proxy's
// DaemonSet as its controller leaves it when w2 is down: a deleted pod is
// recreated from the current template on its node (Ready unless the node
// is w2), and the status never counts more than the pods it has, so its
// own rolling update never gets past w2's unavailable pod.
func stalledDaemonSet(t *testing.T) *fake.Clientset {
	ds := daemonSet("kube-system", "kube-proxy", proxyLabels, 3)
	ds.Spec.Template.Annotations = map[string]string{}
	ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable = 1, 2
	c := fake.NewSimpleClientset(node("cp1", "10.244.0.0/24", true), node("w1", "10.244.1.0/24", true), node("w2", "10.244.2.0/24", false), ds,
		dsPod("kube-proxy-cp1", "cp1", "", true), dsPod("kube-proxy-w1", "w1", "", true), dsPod("kube-proxy-w2", "w2", "", false))
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		o, err := c.Tracker().Get(podsGVR, "kube-system", name)
		if err != nil {
			return true, nil, err
		}
		old := o.(*corev1.Pod)
		if err := c.Tracker().Delete(podsGVR, "kube-system", name); err != nil {
			return true, nil, err
		}
		cur, err := c.Tracker().Get(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "kube-system", "kube-proxy")
		if err != nil {
			return true, nil, err
		}
		tmpl := cur.(*appsv1.DaemonSet).Spec.Template.Annotations[RestartedAtAnnotation]
		repl := dsPod(name+"-new", old.Spec.NodeName, tmpl, old.Spec.NodeName != "w2")
		return true, nil, c.Tracker().Create(podsGVR, repl, "kube-system")
	})
	pageLists(t, c, "pods", "nodes") // as kube-apiserver pages them; every list must ask for pages
	return c
}

func TestRestartPastADownNode(t *testing.T) {
	ctx := context.Background()
	t.Run("without --down it says which node and what to do", func(t *testing.T) {
		c := stalledDaemonSet(t)
		var evs []Event
		_, err := Restart(ctx, testConfig(c, proxyOnly(), 50*time.Millisecond, &evs))
		wantContains(t, "the error", errString(err), "not done within --timeout 50ms (1 out of 3 new pods have been updated)",
			"w2 is not Ready: if down through the window, run again with --down w2 and bring it in later (the runbook's late-node step)")
	})
	t.Run("--down w2", func(t *testing.T) {
		c := stalledDaemonSet(t)
		var evs []Event
		cfg := testConfig(c, proxyOnly(), 5*time.Second, &evs)
		cfg.Down = []string{"w2"}
		res, err := Restart(ctx, cfg)
		if err != nil {
			t.Fatalf("Restart --down w2: %v", err)
		}
		if len(res.Stages) != 2 || res.Stages[0].Name != "down" || !slices.Equal(res.Down, []string{"w2"}) {
			t.Fatalf("stages %+v, down %v: want the down stage first", res.Stages, res.Down)
		}
		n, _ := c.CoreV1().Nodes().Get(ctx, "w2", metav1.GetOptions{})
		if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != corev1.TaintNodeOutOfService || n.Spec.Taints[0].Value != restart.OutOfServiceValue || n.Spec.Taints[0].Effect != corev1.TaintEffectNoExecute {
			t.Errorf("w2's taints: %+v", n.Spec.Taints)
		}
		var deleted []string
		for _, w := range writes(c) {
			if strings.HasPrefix(w, "delete ") {
				deleted = append(deleted, w)
			}
		}
		wantSame(t, "pods deleted", deleted, []string{"delete pods/kube-proxy-cp1", "delete pods/kube-proxy-w1"})
		last := evs[len(evs)-1]
		wantContains(t, "the rollout's detail", last.Detail, "rollout complete")
		pods, _ := c.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{Limit: 100}) // one page holds them
		for _, p := range pods.Items {
			if p.Spec.NodeName != "w2" && p.Annotations[RestartedAtAnnotation] == "" {
				t.Errorf("pod %s on %s is still the old one", p.Name, p.Spec.NodeName)
			}
		}
		// Run again: the taint is there, the rollout done.
		evs = nil
		if _, err := Restart(ctx, cfg); err != nil {
			t.Fatalf("Restart --down w2 again: %v", err)
		}
		wantSame(t, "the second run", statuses(evs), []string{"skipped taint node/w2 out-of-service (down: no rollout waits for it)", "skipped restart ds/kube-proxy -n kube-system"})
	})
	t.Run("--down refuses a Ready node and an unknown one", func(t *testing.T) {
		for name, want := range map[string]string{
			"w1": "--down w1: the Node is Ready, its kubelet posts status: --down is for a node that is off",
			"w9": "--down w9: the cluster has no Node w9",
		} {
			c := stalledDaemonSet(t)
			var evs []Event
			cfg := testConfig(c, proxyOnly(), time.Second, &evs)
			cfg.Down = []string{name}
			_, err := Restart(ctx, cfg)
			wantContains(t, "the error", errString(err), want)
			if w := writes(c); len(w) != 0 {
				t.Errorf("--down %s refused, and it wrote %v", name, w)
			}
		}
	})
}

// TestCheckLeavesDownNodesOut: w2 is down, its Node NotReady and its pods
// on old addresses; with --down w2 the checks pass on the nodes that are
// up and say that w2 was left out; without, they fail on it.
func TestCheckLeavesDownNodesOut(t *testing.T) {
	ctx := context.Background()
	objs := append(healthyCluster(), node("w2", "10.55.16.0/21", false))
	old := pod("demo", "web-on-w2", nil, "10.244.2.9", true)
	old.Spec.NodeName = "w2"
	objs = append(objs, old)
	for _, down := range []bool{false, true} {
		c := fake.NewSimpleClientset(objs...)
		pageLists(t, c, "pods", "nodes")
		probe(c, corev1.PodSucceeded, goodLookup)
		var evs []Event
		cfg := testConfig(c, checkInput(), time.Second, &evs)
		if down {
			cfg.Down = []string{"w2"}
		}
		res, err := Check(ctx, cfg, CheckConfig{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]CheckResult{}
		for _, r := range res {
			got[r.Name] = r
		}
		if down {
			if !got["nodes"].OK || !got["pods"].OK {
				t.Errorf("--down w2: nodes %+v, pods %+v", got["nodes"], got["pods"])
			}
			wantContains(t, "nodes", got["nodes"].Detail, "2 Nodes Ready", "(down, not checked: w2)")
		} else {
			wantContains(t, "nodes", got["nodes"].Detail, "1 of 3 Nodes not Ready (w2)")
			wantContains(t, "pods", got["pods"].Detail, "demo/web-on-w2 10.244.2.9")
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
