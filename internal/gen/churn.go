package gen

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Profiles: what the history of the generated cluster looks like.
const (
	// ProfileBasic is a young cluster: about 10% of the keys have 2-4
	// revisions and about 1% end in a tombstone.
	ProfileBasic = "basic"
	// ProfileChurn is a long-lived busy cluster, as etcd holds one between
	// two compactions: Events whose leases expired (deleted), Pods deleted
	// and created again under the same name, Deployments and ReplicaSets
	// with several revisions each, node and leader-election Leases renewed
	// again and again, and deletes as the newest revisions of the file.
	ProfileChurn = "churn"
)

// Profiles are the profiles Generate knows, the default first.
var Profiles = []string{ProfileBasic, ProfileChurn, ProfileServices}

// SizedKeys is the number of distinct keys that gives a profile about the
// file size (and `key` entries) the basic profile has at keys: a churned key
// has about three revisions, so the churn profile gets a third of them; the
// services profile's keys have two.
func SizedKeys(profile string, keys int) int {
	switch profile {
	case ProfileChurn:
		return max(MinKeys, keys/3)
	case ProfileServices:
		return max(MinKeys, keys/2)
	}
	return keys
}

var (
	gvDeployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvReplicaSet = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
)

// The churn profile's bulk mix, in ten-thousandths.
var churnMix = []struct {
	upTo int
	kind kind
}{
	{1800, kPod}, {5000, kEvent}, {5800, kConfigMap}, {6400, kSecret}, {7000, kLease}, {7300, kService},
	{7800, kCustom}, {8200, kServiceAccount}, {8800, kDeployment}, {10000, kReplicaSet},
}

func churnKind(h int) kind {
	for _, m := range churnMix {
		if h < m.upTo {
			return m.kind
		}
	}
	return kServiceAccount
}

// churnHistory is what happens to an object of a kind after its creation
// in the churn profile: updates (a number in [minUp, maxUp] with
// probability upPermille/1000), then a delete with probability
// delPermille/1000, after which a Pod comes back under the same name (a new
// generation) up to twice.
type churnHistory struct {
	upPermille, minUp, maxUp, delPermille int
	recreate                              bool
}

var churnHistories = map[kind]churnHistory{
	kPod:            {upPermille: 1000, minUp: 2, maxUp: 5, delPermille: 300, recreate: true},
	kEvent:          {upPermille: 400, minUp: 1, maxUp: 3, delPermille: 600}, // their leases expire
	kConfigMap:      {upPermille: 200, minUp: 1, maxUp: 3, delPermille: 20},
	kSecret:         {upPermille: 150, minUp: 1, maxUp: 3, delPermille: 20},
	kLease:          {upPermille: 1000, minUp: 4, maxUp: 10},
	kNodeLease:      {upPermille: 1000, minUp: 6, maxUp: 12},
	kNode:           {upPermille: 1000, minUp: 2, maxUp: 4},
	kDeployment:     {upPermille: 1000, minUp: 3, maxUp: 8},
	kReplicaSet:     {upPermille: 1000, minUp: 2, maxUp: 4, delPermille: 250}, // old ReplicaSets go
	kCustom:         {upPermille: 300, minUp: 1, maxUp: 3, delPermille: 10},
	kService:        {upPermille: 100, minUp: 1, maxUp: 2},
	kIPAddress:      {},
	kServiceAccount: {},
}

// scheduleChurn queues the later revisions of a created object in the
// churn profile.
func (s *sequencer) scheduleChurn(j job, r *rng) {
	h := churnHistories[j.kind]
	window := max(64, min(4096, int64(s.cfg.Keys)/50))
	due := s.step
	if h.maxUp > 0 && r.chance(h.upPermille) {
		for k := 1; k <= r.between(h.minUp, h.maxUp); k++ {
			due += 1 + int64(r.intn(int(window)))
			u := j
			u.variant, u.version = int32(k), int64(k)+1
			s.push(due, u)
		}
	}
	for gen := 0; gen < 3 && h.delPermille > 0 && r.chance(h.delPermille); gen++ {
		due += 1 + int64(r.intn(int(window)))
		t := j
		t.tomb = true
		s.push(due, t)
		if !h.recreate || gen == 2 || !r.chance(600) {
			return
		}
		due += 1 + int64(r.intn(int(window)))
		c := j
		c.recreate, c.variant, c.version = true, int32(10*(gen+1)), 1
		s.push(due, c)
	}
	if j.kind == kEvent {
		s.lastEvents = append(s.lastEvents, j)
		if len(s.lastEvents) > 4096 {
			s.lastEvents = s.lastEvents[len(s.lastEvents)-2048:]
		}
	}
}

// deleteLastEvents ends the file with deletes: the last Events created that
// nothing deleted, as the kube-apiserver's TTL removes them.
func (s *sequencer) deleteLastEvents() {
	n := min(len(s.lastEvents), max(100, s.cfg.Keys/2000))
	for _, j := range s.lastEvents[len(s.lastEvents)-n:] {
		if s.deleted[j.idx] {
			continue
		}
		t := j
		t.tomb = true
		s.emit(t)
	}
}

func (w *world) deployment(j *job) runtime.Object {
	a := w.app(j)
	name := a.name + "-" + uniqueSuffix(j.idx)
	created := w.createdAt(j.idx)
	o := &appsv1.Deployment{TypeMeta: typeMeta(gvDeployment), ObjectMeta: w.meta(kDeployment, j.idx, a.ns, name, created)}
	o.Generation = int64(1 + j.variant)
	o.Labels = a.labels
	o.Annotations = map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(1 + j.variant)}
	replicas := int32(1 + j.idx%4)
	o.Spec = appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: a.labels},
		Template: w.podTemplate(a, j), RevisionHistoryLimit: new(int32(10)), ProgressDeadlineSeconds: new(int32(600)),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}}
	at := sec(created.Add(time.Duration(j.variant) * 41 * time.Minute))
	o.Status = appsv1.DeploymentStatus{ObservedGeneration: o.Generation, Replicas: replicas, UpdatedReplicas: replicas,
		ReadyReplicas: replicas, AvailableReplicas: replicas, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: at, LastTransitionTime: at,
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: at, LastTransitionTime: at,
				Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-"+a.rsHash)}}}
	return o
}

func (w *world) replicaSet(j *job) runtime.Object {
	a := w.app(j)
	name := a.name + "-" + uniqueSuffix(j.idx) + "-" + a.rsHash
	created := w.createdAt(j.idx)
	o := &appsv1.ReplicaSet{TypeMeta: typeMeta(gvReplicaSet), ObjectMeta: w.meta(kReplicaSet, j.idx, a.ns, name, created)}
	o.Generation = int64(1 + j.variant)
	o.Labels = a.labels
	o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: a.name,
		UID: w.uid(kDeployment, j.idx), Controller: new(true), BlockOwnerDeletion: new(true)}}
	replicas := int32(j.idx % 4)
	o.Spec = appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: a.labels}, Template: w.podTemplate(a, j)}
	o.Status = appsv1.ReplicaSetStatus{Replicas: replicas, FullyLabeledReplicas: replicas, ReadyReplicas: replicas,
		AvailableReplicas: replicas, ObservedGeneration: o.Generation}
	return o
}

func (w *world) podTemplate(a *appSpec, j *job) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: a.labels,
		Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": sec(w.createdAt(j.idx).Add(time.Duration(j.variant) * time.Hour)).UTC().Format(time.RFC3339)}}}
	t.Spec.Containers = a.containers
	t.Spec.ServiceAccountName = a.sa
	t.Spec.RestartPolicy = corev1.RestartPolicyAlways
	t.Spec.DNSPolicy = corev1.DNSClusterFirst
	t.Spec.TerminationGracePeriodSeconds = new(int64(30))
	return t
}
