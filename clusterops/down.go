package clusterops

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/snapshift/snapshift/restart"
)

// downNodes checks Config.Down against the cluster: each must be a Node
// that is not Ready (a node that is off has stopped posting status);
// returns them as a set.
func downNodes(ctx context.Context, cfg *Config) (map[string]bool, error) {
	down := map[string]bool{}
	for _, name := range cfg.Down {
		n, err := cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--down %s: the cluster has no Node %s", name, name)
		}
		if err != nil {
			return nil, fmt.Errorf("--down %s: reading the Node: %w", name, err)
		}
		if nodeReady(n) {
			return nil, fmt.Errorf("--down %s: the Node is Ready, its kubelet posts status: --down is for a node that is off through the window (its kubelet and containers stopped)", name)
		}
		down[name] = true
	}
	return down, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// notReadyNodes are the cluster's Nodes that are not Ready, sorted (for a
// rollout's message when it waits on them).
func notReadyNodes(ctx context.Context, cfg *Config) []string {
	var out []string
	err := eachNode(ctx, cfg.Client, func(n *corev1.Node) {
		if !nodeReady(n) && !slices.Contains(cfg.Down, n.Name) {
			out = append(out, n.Name)
		}
	})
	if err != nil {
		return nil
	}
	sort.Strings(out)
	return out
}

// downHint is what a rollout's timeout adds when Nodes are not Ready and
// --down does not name them: a down node stops a DaemonSet's rollout.
func downHint(ctx context.Context, cfg *Config) string {
	nr := notReadyNodes(context.WithoutCancel(ctx), cfg)
	if len(nr) == 0 {
		return ""
	}
	verb := "is"
	if len(nr) > 1 {
		verb = "are"
	}
	list := strings.Join(nr, ",")
	return fmt.Sprintf("; %s %s not Ready: if down through the window, run again with --down %s and bring it in later (the runbook's late-node step)", capNames(nr), verb, list)
}

// taintDown puts the out-of-service taint on each down Node (skipped when
// it is there).
func taintDown(ctx context.Context, cfg *Config, name string) (bool, string, error) {
	nodes := cfg.Client.CoreV1().Nodes()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, "", fmt.Errorf("reading node %s: %w", name, err)
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			return true, "tainted already", nil
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: restart.OutOfServiceValue, Effect: corev1.TaintEffectNoExecute})
	if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return false, "", fmt.Errorf("tainting node %s: %w", name, err)
	}
	return false, "its terminating pods are force-deleted by the pod garbage collector; untaint it when it is back (the runbook's late-node step)", nil
}

// daemonSetPast is a DaemonSet's rolling update with nodes down: the
// DaemonSet controller counts the pod it keeps on a down node (it
// tolerates the Node's taints) as unavailable, which can use up
// maxUnavailable for good and stop the update on every other node. So the
// restart replaces the old pods on the nodes that are up itself, as the
// controller would (delete one; the controller creates the new one from
// the current template), within maxUnavailable of those nodes, and is done
// when every such node runs an updated, available pod. A pod is updated
// when it carries the template's restartedAt.
func daemonSetPast(ctx context.Context, cfg *Config, ds *appsv1.DaemonSet) (string, error) {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return "", nil
	}
	if ds.Generation > ds.Status.ObservedGeneration {
		return "waiting for the daemon set spec update to be observed", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("daemon set %s: its selector: %w", ds.Name, err)
	}
	want := ds.Spec.Template.Annotations[RestartedAtAnnotation]
	type nodePods struct {
		updated, updatedReady, deleting bool
		old                             []string
	}
	byNode := map[string]*nodePods{}
	downWith := map[string]bool{}
	err = eachPod(ctx, cfg.Client, ds.Namespace, metav1.ListOptions{LabelSelector: sel.String()}, func(p *corev1.Pod) {
		if !ownedBy(p, ds) || p.Spec.NodeName == "" {
			return
		}
		if cfg.down[p.Spec.NodeName] {
			downWith[p.Spec.NodeName] = true
			return
		}
		np := byNode[p.Spec.NodeName]
		if np == nil {
			np = &nodePods{}
			byNode[p.Spec.NodeName] = np
		}
		switch {
		case p.DeletionTimestamp != nil:
			np.deleting = true
		case p.Annotations[RestartedAtAnnotation] == want:
			np.updated = true
			np.updatedReady = np.updatedReady || podAvailable(p, ds.Spec.MinReadySeconds, cfg.Now())
		default:
			np.old = append(np.old, p.Name)
		}
	})
	if err != nil {
		return "", err
	}
	desired := max(int(ds.Status.DesiredNumberScheduled)-len(downWith), len(byNode))
	done, unavailable := 0, 0
	var candidates []string
	for _, name := range slices.Sorted(maps.Keys(byNode)) {
		np := byNode[name]
		switch {
		case np.updatedReady && len(np.old) == 0:
			done++
		case np.updated || np.deleting:
			unavailable++
		default:
			candidates = append(candidates, np.old...)
		}
	}
	unavailable += max(0, desired-len(byNode)) // nodes the controller has yet to give a pod
	budget := maxUnavailable(ds, desired) - unavailable
	for _, name := range candidates {
		if budget <= 0 {
			break
		}
		if err := cfg.Client.CoreV1().Pods(ds.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("replacing pod %s/%s: %w", ds.Namespace, name, err)
		}
		budget--
	}
	if done >= desired && len(candidates) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d of %d nodes up run the new pod, available (%s down: not waited for)", done, desired, strings.Join(cfg.Down, ", ")), nil
}

// maxUnavailable is the DaemonSet's maxUnavailable over n nodes (at least
// one, as the controller rounds it when maxSurge is 0).
func maxUnavailable(ds *appsv1.DaemonSet, n int) int {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable == nil {
		return 1
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, n, true)
	if err != nil || v < 1 {
		return 1
	}
	return v
}

func ownedBy(p *corev1.Pod, ds *appsv1.DaemonSet) bool {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.UID == ds.UID {
			return true
		}
	}
	return false
}

// podAvailable: Ready for at least minReady seconds (podutil's test).
func podAvailable(p *corev1.Pod, minReady int32, now time.Time) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return minReady == 0 || !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReady)*time.Second).Before(now)
		}
	}
	return false
}
