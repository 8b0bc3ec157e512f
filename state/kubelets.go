package state

import (
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/wellknown"
)

// StaleHeartbeat is how much older than the snapshot's newest node Lease
// renewal a Node's own renewal must be for its kubelet to count as gone.
const StaleHeartbeat = time.Hour

// NodesWithoutKubelet names the Nodes that run no kubelet: their Ready
// condition is not True and their heartbeat Lease is missing or was last
// renewed StaleHeartbeat or more before the newest renewal in the
// snapshot (a snapshot with no node Leases names none). Such "nodes" (hh.ru's fake nodes: flannel and kube-proxy run
// there as plain services with their own kubeconfigs) are not restarted
// by recreating pods: whatever runs on them needs its configuration and a
// restart by hand. The names are sorted.
func NodesWithoutKubelet(v *View) ([]string, error) {
	renewed := map[string]time.Time{}
	var newest time.Time
	err := v.Each(wellknown.PrefixNodeLeases, func(o *Object) error {
		l, ok := o.Value.Obj.(*coordinationv1.Lease)
		if !ok {
			return fmt.Errorf("%s: stored object is %s, not a Lease", o.Key, o.Value.GVK)
		}
		if l.Spec.RenewTime != nil {
			t := l.Spec.RenewTime.Time
			renewed[l.Name] = t
			if t.After(newest) {
				newest = t
			}
		}
		return nil
	})
	if err != nil || len(renewed) == 0 {
		// No heartbeat Leases at all (a cluster older than 1.14, a test
		// corpus): nothing tells a gone kubelet from a stopped one.
		return nil, err
	}
	var out []string
	err = v.Each(wellknown.PrefixNodes, func(o *Object) error {
		n, ok := o.Value.Obj.(*corev1.Node)
		if !ok {
			return fmt.Errorf("%s: stored object is %s, not a Node", o.Key, o.Value.GVK)
		}
		if ready(n) {
			return nil
		}
		if t, ok := renewed[n.Name]; ok && newest.Sub(t) < StaleHeartbeat {
			return nil
		}
		out = append(out, n.Name)
		return nil
	})
	sort.Strings(out)
	return out, err
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
