package rebuild

import (
	"context"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/restart"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// The restart stages (package restart holds the order and its reasons).
const (
	StageCNIOperator = restart.StageCNIOperator
	StageCNIAgent    = restart.StageCNIAgent
	StageCNIControl  = restart.StageCNIControl
	StageKubeProxy   = restart.StageKubeProxy
	StageDNS         = restart.StageDNS
	StageNodeLocal   = restart.StageNodeLocal
	StageRest        = restart.StageRest
)

// role classifies a workload by its pod labels (restart.Classify).
func role(kind string, labels map[string]string) (int, string) { return restart.Classify(kind, labels) }

// workloadKeys says whether readRecorded indexes a key: the DaemonSets,
// Deployments and what state.DetectCNI reads (the ConfigMaps and the API
// groups of the CNIs' custom resources, package cni's table).
func workloadKeys(key string) bool {
	for _, s := range workloadSegments {
		if strings.Contains(key, s) {
			return true
		}
	}
	return false
}

var workloadSegments = append([]string{"/daemonsets/", "/deployments/", "/statefulsets/", "/pods/", "/services/specs/", "/configmaps/"}, cniSegments()...)

func cniSegments() []string {
	var out []string
	for _, g := range cni.Groups(true) {
		out = append(out, "/"+g+"/")
	}
	return out
}

// detected is what the snapshot runs, for the restart: its controllers
// in restart order, the pods none of them restarts, the CNIs, and the
// Services' selectors (to find the webhooks' backends).
type detected struct {
	workloads []bundle.Workload
	// labels are the workloads' pods' labels by kind/namespace/name (the
	// webhooks' backends are found by them; not part of the bundle).
	labels    map[string]map[string]string
	pods      []restart.Pod
	podLabels []map[string]string // pods[i]'s labels
	cnis      []string
	selectors map[string]map[string]string
}

// detectWorkloads lists the snapshot's DaemonSets, Deployments and
// StatefulSets in restart order, the pods they do not restart, the
// Services' selectors and the CNIs.
func detectWorkloads(ctx context.Context, v *state.View) (*detected, error) {
	d := &detected{labels: map[string]map[string]string{}, selectors: map[string]map[string]string{}}
	for _, p := range []struct{ kind, prefix string }{{"DaemonSet", wellknown.PrefixDaemonSets}, {"Deployment", wellknown.PrefixDeployments}, {"StatefulSet", wellknown.PrefixStatefulSets}} {
		objs, err := v.List(p.prefix)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			var meta metav1.ObjectMeta
			var sel *metav1.LabelSelector
			var tmpl map[string]string
			switch x := o.Value.Obj.(type) {
			case *appsv1.DaemonSet:
				meta, sel, tmpl = x.ObjectMeta, x.Spec.Selector, x.Spec.Template.Labels
			case *appsv1.Deployment:
				meta, sel, tmpl = x.ObjectMeta, x.Spec.Selector, x.Spec.Template.Labels
			case *appsv1.StatefulSet:
				meta, sel, tmpl = x.ObjectMeta, x.Spec.Selector, x.Spec.Template.Labels
			default:
				continue
			}
			w := bundle.Workload{Kind: p.kind, Namespace: meta.Namespace, Name: meta.Name}
			d.labels[workloadKey(w)] = tmpl
			if sel != nil {
				w.Selector = selectorString(sel.MatchLabels)
			}
			w.Stage, w.Role = role(p.kind, merged(meta.Labels, tmpl))
			d.workloads = append(d.workloads, w)
		}
	}
	var err error
	if d.pods, d.podLabels, err = unrestartedPods(v, d.workloads); err != nil {
		return nil, err
	}
	sort.SliceStable(d.workloads, func(i, j int) bool {
		a, b := d.workloads[i], d.workloads[j]
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Resource() < b.Resource()
	})
	svcs, err := v.List(wellknown.PrefixServices)
	if err != nil {
		return nil, err
	}
	for _, o := range svcs {
		if s, ok := o.Value.Obj.(*corev1.Service); ok && len(s.Spec.Selector) > 0 {
			d.selectors[s.Namespace+"/"+s.Name] = s.Spec.Selector
		}
	}
	cnis, err := state.DetectCNI(ctx, v)
	if err != nil {
		return nil, err
	}
	for _, c := range cnis {
		d.cnis = append(d.cnis, c.Name)
	}
	return d, nil
}

// unrestartedPods are the pods no controller of the snapshot restarts:
// bare pods, Jobs' pods and the pods whose DaemonSet, Deployment or
// StatefulSet the snapshot lacks (a snapshot holding the pods but not their
// controllers, as the sample does), each with its role by its labels.
// Mirror pods (the kubelet's), finished pods and host-network pods
// without a role (on their node's address) are left out.
func unrestartedPods(v *state.View, known []bundle.Workload) ([]restart.Pod, []map[string]string, error) {
	seen := map[string]bool{}
	for _, w := range known {
		seen[w.Kind+"/"+w.Namespace+"/"+w.Name] = true
	}
	pods, err := v.List(wellknown.PrefixPods)
	if err != nil {
		return nil, nil, err
	}
	var out []restart.Pod
	var labels []map[string]string
	for _, o := range pods {
		pod, ok := o.Value.Obj.(*corev1.Pod)
		if !ok || pod.Annotations[corev1.MirrorPodAnnotationKey] != "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		_, role := restart.Classify("Pod", pod.Labels)
		if pod.Spec.HostNetwork && role == "" {
			continue // on its node's address; a CNI agent or kube-proxy still restarts
		}
		owner := ""
		if ref := metav1.GetControllerOf(pod); ref != nil {
			kind, name := ref.Kind, ref.Name
			if hash := pod.Labels["pod-template-hash"]; kind == "ReplicaSet" && hash != "" {
				if n, ok := strings.CutSuffix(name, "-"+hash); ok {
					kind, name = "Deployment", n
				}
			}
			if seen[kind+"/"+pod.Namespace+"/"+name] {
				continue
			}
			owner = kind + "/" + name
		}
		p := restart.Pod{Namespace: pod.Namespace, Name: pod.Name, Owner: owner, Role: role}
		for _, ip := range pod.Status.PodIPs {
			p.IPs = append(p.IPs, ip.IP)
		}
		out, labels = append(out, p), append(labels, pod.Labels)
	}
	return out, labels, nil
}

// workloadKey is detected.labels' key of w.
func workloadKey(w bundle.Workload) string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func selectorString(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
