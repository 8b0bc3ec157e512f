package rebuild

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/corpus"
)

// upstreamLabels are the pod labels of the CNI controllers in the upstream
// manifests: flannel-io/flannel Documentation/kube-flannel.yml (DaemonSet
// kube-flannel-ds, selector app=flannel, k8s-app=flannel); projectcalico
// manifests/calico.yaml (DaemonSet calico-node k8s-app=calico-node,
// Deployment calico-kube-controllers k8s-app=calico-kube-controllers);
// cilium install/kubernetes/cilium templates (DaemonSet cilium
// k8s-app=cilium; Deployment cilium-operator io.cilium/app=operator,
// name=cilium-operator); kubeadm's kube-proxy and CoreDNS addons.
var upstreamLabels = []struct {
	kind, name string
	labels     map[string]string
	stage      int
}{
	{"Deployment", "cilium-operator", map[string]string{"io.cilium/app": "operator", "name": "cilium-operator"}, StageCNIOperator},
	{"DaemonSet", "cilium", map[string]string{"k8s-app": "cilium"}, StageCNIAgent},
	{"DaemonSet", "calico-node", map[string]string{"k8s-app": "calico-node"}, StageCNIAgent},
	{"DaemonSet", "kube-flannel-ds", map[string]string{"app": "flannel", "k8s-app": "flannel", "tier": "node"}, StageCNIAgent},
	{"Deployment", "calico-kube-controllers", map[string]string{"k8s-app": "calico-kube-controllers"}, StageCNIControl},
	{"DaemonSet", "kube-proxy", map[string]string{"k8s-app": "kube-proxy"}, StageKubeProxy},
	{"Deployment", "coredns", map[string]string{"k8s-app": "kube-dns"}, StageDNS},
}

func TestRestartRolesUpstream(t *testing.T) {
	for _, u := range upstreamLabels {
		if st, r := role(u.kind, u.labels); st != u.stage || r == "" {
			t.Errorf("%s %s with upstream labels %v: stage %d role %q, want stage %d", u.kind, u.name, u.labels, st, r, u.stage)
		}
	}
}

// TestRestartSelectorsMatchCorpora runs the restart classification over
// every DaemonSet and Deployment in the golden corpora (objects as the
// apiserver stores them): each CNI agent found there gets its role, its
// labels agree with the upstream ones above, and the runbook's selector
// (spec.selector.matchLabels) selects the pods of its template.
func TestRestartSelectorsMatchCorpora(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(corpus.Testdata(t), "golden", "*", "*", "input.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no corpora: %v", err)
	}
	found := map[string]bool{}
	for _, in := range inputs {
		for _, e := range corpus.Read(t, in) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(e.Object, &tm); err != nil {
				t.Fatalf("%s %s: %v", in, e.Key, err)
			}
			kind, j := tm.Kind, []byte(e.Object)
			if kind != "DaemonSet" && kind != "Deployment" {
				continue
			}
			var meta metav1.ObjectMeta
			var sel *metav1.LabelSelector
			var tmpl map[string]string
			if kind == "DaemonSet" {
				var ds appsv1.DaemonSet
				if err := yaml.Unmarshal(j, &ds); err != nil {
					t.Fatalf("%s %s: %v", in, e.Key, err)
				}
				meta, sel, tmpl = ds.ObjectMeta, ds.Spec.Selector, ds.Spec.Template.Labels
			} else {
				var d appsv1.Deployment
				if err := yaml.Unmarshal(j, &d); err != nil {
					t.Fatalf("%s %s: %v", in, e.Key, err)
				}
				meta, sel, tmpl = d.ObjectMeta, d.Spec.Selector, d.Spec.Template.Labels
			}
			_, r := role(kind, merged(meta.Labels, tmpl))
			for _, u := range upstreamLabels {
				if u.kind == kind && u.name == meta.Name {
					if r == "" {
						t.Errorf("%s: %s %s (labels %v) not recognised", in, kind, meta.Name, tmpl)
					}
					for k, v := range sel.MatchLabels {
						if u.labels[k] != v {
							t.Errorf("%s: %s %s selector %s=%s is not upstream's %v", in, kind, meta.Name, k, v, u.labels)
						}
					}
					found[meta.Name] = true
				}
			}
			s, err := labels.Parse(selectorString(sel.MatchLabels))
			if err != nil || !s.Matches(labels.Set(tmpl)) {
				t.Errorf("%s: %s %s: selector %q does not select its pods %v", in, kind, meta.Name, selectorString(sel.MatchLabels), tmpl)
			}
		}
	}
	for _, want := range []string{"calico-node", "cilium"} {
		if !found[want] {
			t.Errorf("the corpora hold no %s (found %v)", want, found)
		}
	}
	t.Logf("corpora checked: %s", strings.Join(sortedKeys(found), ", "))
}
