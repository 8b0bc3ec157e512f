package rebuild

import (
	"context"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/state"
)

// The restart stages, in order. Each CNI's documented order: Cilium's
// operator before the agents (the agents wait for the CiliumNode the
// operator allocates: docs.cilium.io "Restart unmanaged pods" / upgrade
// guide), calico-node before calico-kube-controllers and every pod (the
// node agent programs the routes new pods need); then kube-proxy, then the
// cluster DNS, then everything else.
const (
	StageCNIOperator = 1
	StageCNIAgent    = 2
	StageCNIControl  = 3
	StageKubeProxy   = 4
	StageDNS         = 5
	StageRest        = 6
)

// role classifies a workload by its pod labels (the upstream manifests'
// labels: flannel app=flannel; calico.yaml k8s-app=calico-node and
// k8s-app=calico-kube-controllers; cilium k8s-app=cilium and
// io.cilium/app=operator; kube-proxy and CoreDNS as kubeadm installs them).
func role(kind string, labels map[string]string) (int, string) {
	for _, r := range roles {
		if (r.kind == "" || r.kind == kind) && labels[r.label] == r.value {
			return r.stage, r.name
		}
	}
	return StageRest, ""
}

// roles are role's workloads, first match wins: the kind ("" for any),
// the pod label and its value, the stage and the name.
var roles = []struct {
	kind, label, value string
	stage              int
	name               string
}{
	{"", "io.cilium/app", "operator", StageCNIOperator, "cilium-operator"},
	{"DaemonSet", "k8s-app", "cilium", StageCNIAgent, "cilium"},
	{"DaemonSet", "k8s-app", "calico-node", StageCNIAgent, "calico-node"},
	{"DaemonSet", "k8s-app", "canal", StageCNIAgent, "canal"},
	{"DaemonSet", "app", "flannel", StageCNIAgent, "flannel"},
	{"DaemonSet", "name", "weave-net", StageCNIAgent, "weave-net"},
	{"", "k8s-app", "calico-kube-controllers", StageCNIControl, "calico-kube-controllers"},
	{"DaemonSet", "k8s-app", "kube-proxy", StageKubeProxy, "kube-proxy"},
	{"Deployment", "k8s-app", "kube-dns", StageDNS, "cluster DNS"},
}

// workloadKeys says whether readRecorded indexes a key: the DaemonSets,
// Deployments and what state.DetectCNI reads.
func workloadKeys(key string) bool {
	for _, s := range []string{"/daemonsets/", "/deployments/", "/pods/", "/configmaps/", "/cilium.io/", "/crd.projectcalico.org/", "/operator.tigera.io/"} {
		if strings.Contains(key, s) {
			return true
		}
	}
	return false
}

// detectWorkloads lists the snapshot's DaemonSets and Deployments in
// restart order, and the CNIs.
func detectWorkloads(ctx context.Context, v *state.View) ([]bundle.Workload, []string, error) {
	var out []bundle.Workload
	for _, p := range []struct{ kind, prefix string }{{"DaemonSet", "/registry/daemonsets/"}, {"Deployment", "/registry/deployments/"}} {
		objs, err := v.List(p.prefix)
		if err != nil {
			return nil, nil, err
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
			default:
				continue
			}
			w := bundle.Workload{Kind: p.kind, Namespace: meta.Namespace, Name: meta.Name}
			if sel != nil {
				w.Selector = selectorString(sel.MatchLabels)
			}
			w.Stage, w.Role = role(p.kind, merged(meta.Labels, tmpl))
			out = append(out, w)
		}
	}
	owned, err := podOwners(v, out)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, owned...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Stage != out[j].Stage {
			return out[i].Stage < out[j].Stage
		}
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Resource() < out[j].Resource()
	})
	cnis, err := state.DetectCNI(ctx, v)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, c := range cnis {
		names = append(names, c.Name)
	}
	return out, names, nil
}

// podOwners are the DaemonSets and Deployments that only their pods show
// (a snapshot holding the pods but not their controllers, as the sample
// does): each named by the pod's controller reference, its selector the
// pod's labels without the controllers' own hash labels.
func podOwners(v *state.View, known []bundle.Workload) ([]bundle.Workload, error) {
	seen := map[string]bool{}
	for _, w := range known {
		seen[w.Kind+"/"+w.Namespace+"/"+w.Name] = true
	}
	pods, err := v.List("/registry/pods/")
	if err != nil {
		return nil, err
	}
	var out []bundle.Workload
	for _, o := range pods {
		pod, ok := o.Value.Obj.(*corev1.Pod)
		if !ok {
			continue
		}
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		w := bundle.Workload{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name}
		if ref.Kind == "ReplicaSet" {
			hash := pod.Labels["pod-template-hash"]
			name, ok := strings.CutSuffix(ref.Name, "-"+hash)
			if hash == "" || !ok {
				continue
			}
			w.Kind, w.Name = "Deployment", name
		}
		if w.Kind != "DaemonSet" && w.Kind != "Deployment" || seen[w.Kind+"/"+w.Namespace+"/"+w.Name] {
			continue
		}
		seen[w.Kind+"/"+w.Namespace+"/"+w.Name] = true
		labels := map[string]string{}
		for k, val := range pod.Labels {
			switch k {
			case "controller-revision-hash", "pod-template-generation", "pod-template-hash":
			default:
				labels[k] = val
			}
		}
		w.Selector = selectorString(labels)
		w.Stage, w.Role = role(w.Kind, labels)
		out = append(out, w)
	}
	return out, nil
}

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
