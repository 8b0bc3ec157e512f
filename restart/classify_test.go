package restart

import (
	"testing"

	"github.com/snapshift/snapshift/cni"
)

// TestCNIRolesClassified: every restart role of package cni's table is
// recognised by its pod label, on its controller and on a bare pod, in the
// stage of its phase; StageOf agrees, and the role names this package
// exports are the table's.
func TestCNIRolesClassified(t *testing.T) {
	for _, c := range cni.All() {
		for _, r := range c.Roles {
			want := map[cni.Phase]int{cni.PhaseOperator: StageCNIOperator, cni.PhaseAgent: StageCNIAgent, cni.PhaseControl: StageCNIControl}[r.Phase]
			kind := r.Kind
			if kind == "" {
				kind = "Deployment"
			}
			for _, k := range []string{kind, "Pod"} {
				if st, role := Classify(k, map[string]string{r.Label: r.Value}); st != want || role != r.Name {
					t.Errorf("%s: %s labelled %s=%s: stage %d role %q, want stage %d role %q", c.Name, k, r.Label, r.Value, st, role, want, r.Name)
				}
			}
			if st := StageOf(r.Name); st != want {
				t.Errorf("%s: StageOf(%s) = %d, want %d", c.Name, r.Name, st, want)
			}
		}
	}
	if st, role := Classify("Deployment", map[string]string{"io.cilium/app": "operator", "name": "cilium-operator"}); st != StageCNIOperator || role != RoleCiliumOp {
		t.Errorf("cilium-operator: stage %d role %q", st, role)
	}
	if st, role := Classify("Deployment", map[string]string{"k8s-app": "calico-kube-controllers"}); st != StageCNIControl || role != RoleCalicoControl {
		t.Errorf("calico-kube-controllers: stage %d role %q", st, role)
	}
	if st, role := Classify("DaemonSet", map[string]string{"k8s-app": "kube-proxy"}); st != StageKubeProxy || role != RoleKubeProxy {
		t.Errorf("kube-proxy: stage %d role %q", st, role)
	}
}
