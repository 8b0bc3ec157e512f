package clusterops

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
)

// The rollout checks of `kubectl rollout status` (k8s.io/kubectl
// pkg/polymorphichelpers/rollout_status.go), returning "" when done and
// what is awaited otherwise; an error when the rollout cannot finish.

func deploymentStatus(d *appsv1.Deployment) (string, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "waiting for the deployment spec update to be observed", nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return "", fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	if d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas {
		return fmt.Sprintf("%d out of %d new replicas have been updated", d.Status.UpdatedReplicas, *d.Spec.Replicas), nil
	}
	if d.Status.Replicas > d.Status.UpdatedReplicas {
		return fmt.Sprintf("%d old replicas are pending termination", d.Status.Replicas-d.Status.UpdatedReplicas), nil
	}
	if d.Status.AvailableReplicas < d.Status.UpdatedReplicas {
		return fmt.Sprintf("%d of %d updated replicas are available", d.Status.AvailableReplicas, d.Status.UpdatedReplicas), nil
	}
	return "", nil
}

func daemonSetStatus(ds *appsv1.DaemonSet) (string, error) {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return "", nil // OnDelete: kubectl cannot tell either; the restart deletes nothing
	}
	if ds.Generation > ds.Status.ObservedGeneration {
		return "waiting for the daemon set spec update to be observed", nil
	}
	if ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled {
		return fmt.Sprintf("%d out of %d new pods have been updated", ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled), nil
	}
	if ds.Status.NumberAvailable < ds.Status.DesiredNumberScheduled {
		return fmt.Sprintf("%d of %d updated pods are available", ds.Status.NumberAvailable, ds.Status.DesiredNumberScheduled), nil
	}
	return "", nil
}

func statefulSetStatus(s *appsv1.StatefulSet) (string, error) {
	if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return "", nil
	}
	if s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration {
		return "waiting for the statefulset spec update to be observed", nil
	}
	if s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas {
		return fmt.Sprintf("%d of %d pods are ready", s.Status.ReadyReplicas, *s.Spec.Replicas), nil
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 && s.Spec.Replicas != nil {
		if s.Status.UpdatedReplicas < *s.Spec.Replicas-*ru.Partition {
			return fmt.Sprintf("%d of %d pods above the partition are updated", s.Status.UpdatedReplicas, *s.Spec.Replicas-*ru.Partition), nil
		}
		return "", nil
	}
	if s.Status.UpdateRevision != s.Status.CurrentRevision {
		return fmt.Sprintf("%d pods at revision %s", s.Status.UpdatedReplicas, s.Status.UpdateRevision), nil
	}
	return "", nil
}
