package clusterops

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/restart"
)

// TestRolloutStatus holds the rollout checks to kubectl's: not done until
// the generation is observed, every replica updated, no old one left and
// the updated ones available.
func TestRolloutStatus(t *testing.T) {
	two := int32(2)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.DeploymentSpec{Replicas: &two}}
	for _, c := range []struct {
		st   appsv1.DeploymentStatus
		done bool
	}{
		{appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 2, Replicas: 2, AvailableReplicas: 2}, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 3, UpdatedReplicas: 1, Replicas: 2, AvailableReplicas: 2}, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 3, UpdatedReplicas: 2, Replicas: 3, AvailableReplicas: 2}, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 3, UpdatedReplicas: 2, Replicas: 2, AvailableReplicas: 1}, false},
		{appsv1.DeploymentStatus{ObservedGeneration: 3, UpdatedReplicas: 2, Replicas: 2, AvailableReplicas: 2}, true},
	} {
		d.Status = c.st
		if msg, err := deploymentStatus(d); err != nil || (msg == "") != c.done {
			t.Errorf("deployment %+v: %q %v, want done %v", c.st, msg, err, c.done)
		}
	}
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded"}}
	if _, err := deploymentStatus(d); err == nil {
		t.Error("a deployment past its progress deadline is not an error")
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 2}}
	if msg, _ := daemonSetStatus(ds); msg == "" {
		t.Error("a daemon set with a pod unavailable is done")
	}
	ds.Status.NumberAvailable = 3
	if msg, _ := daemonSetStatus(ds); msg != "" {
		t.Errorf("daemon set: %q", msg)
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.StatefulSetSpec{Replicas: &two, UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}}
	if msg, _ := statefulSetStatus(sts); msg == "" {
		t.Error("a stateful set between revisions is done")
	}
}

// TestRecreated: the DNS Service recreated at the bridge's address keeps
// its labels, selector and ports, drops snapshift's annotations and the
// server's fields.
func TestRecreated(t *testing.T) {
	tmpl := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-bridge", Namespace: "kube-system", UID: "u", ResourceVersion: "7",
		Labels: map[string]string{"k8s-app": "kube-dns"}, Annotations: map[string]string{"snapshift.io/bridge-for": "kube-system/kube-dns", "prometheus.io/port": "9153"}},
		Spec: corev1.ServiceSpec{ClusterIP: "192.168.0.10", ClusterIPs: []string{"192.168.0.10"}, Selector: map[string]string{"k8s-app": "kube-dns"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	s := recreated(tmpl, restart.Action{Namespace: "kube-system", Name: "kube-dns", Address: "172.24.0.10"})
	if s.Name != "kube-dns" || s.UID != "" || s.ResourceVersion != "" || s.Spec.ClusterIP != "172.24.0.10" || s.Spec.ClusterIPs[0] != "172.24.0.10" ||
		s.Spec.Selector["k8s-app"] != "kube-dns" || len(s.Spec.Ports) != 1 || s.Annotations["snapshift.io/bridge-for"] != "" || s.Annotations["prometheus.io/port"] != "9153" {
		t.Errorf("recreated: %+v", s)
	}
	if tmpl.Spec.ClusterIP != "192.168.0.10" {
		t.Error("the template was changed")
	}
}
