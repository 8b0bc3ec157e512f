package rebuild

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/restart"
)

// TestDetectedCNIsCleanedAndRestarted is the cross-check of package cni's
// table against what a rebuild does with it: on a corpus of each CNI
// (objects as its upstream manifests create them, through a real etcd),
// every CNI the detection names (what report.json's CNI list and the
// runbook carry) has host state that node apply and the runbook remove,
// and its agent DaemonSet in the snapshot gets a restart role in a CNI
// stage of the staged restart. A CNI detected here but missing from the
// host-state cleanup or the restart roles (silently skipped on the node
// before the table was one) fails, and so does a CNI of the table that no
// corpus shows.
func TestDetectedCNIsCleanedAndRestarted(t *testing.T) {
	corpora := []struct {
		cni   string
		files []string // under testdata/; none: the sample
	}{
		{cni.Flannel, nil},
		{cni.Canal, []string{"golden/cluster-config/canal/input.yaml", "restart/canal-extra.yaml"}},
		{cni.Calico, []string{"golden/calico/manifest/input.yaml"}},
		{cni.Cilium, []string{"golden/cilium/cluster-pool/input.yaml", "restart/cilium-extra.yaml"}},
		{cni.Weave, []string{"golden/cni/weave/input.yaml"}},
	}
	detected := map[string]bool{}
	for _, c := range corpora {
		t.Run(c.cni, func(t *testing.T) {
			snap := "../testdata/sample.db"
			if len(c.files) > 0 {
				snap = corpusSnapshot(t, c.files...)
			}
			rec, err := readRecorded(context.Background(), snap, false, nil, nil, "etcd-cluster")
			if err != nil {
				t.Fatal(err)
			}
			d := rec.workloads
			if !slices.Contains(d.cnis, c.cni) {
				t.Fatalf("detection names %v, not %s", d.cnis, c.cni)
			}
			for _, name := range d.cnis {
				detected[name] = true
				checkCleaned(t, name)
				checkRestarted(t, name, d, name == c.cni)
			}
		})
	}
	for _, name := range cni.Names() {
		if !detected[name] {
			t.Errorf("no corpus shows %s: the cross-check does not cover it", name)
		}
	}
}

// checkCleaned: the CNI's host state is cleaned on the control-plane
// nodes (bundle's actions) and the workers (the runbook's commands).
func checkCleaned(t *testing.T, name string) {
	t.Helper()
	st, ok := bundle.CNIHostStateOf(name)
	if !ok || len(st.Actions()) == 0 {
		t.Errorf("%s is detected but has no host state: node apply and the runbook would skip it", name)
		return
	}
	cmds := strings.Join(st.Commands(), "\n")
	for _, a := range st.Agents {
		if !strings.Contains(cmds, "--name '^"+a+"$'") {
			t.Errorf("%s: the runbook's commands do not stop agent %s:\n%s", name, a, cmds)
		}
	}
}

// checkRestarted: the CNI has an agent role the staged restart puts in a
// CNI stage; with its agent in the snapshot (the corpus's own CNI), its
// DaemonSet, or the pods of one the snapshot lacks, get that role.
func checkRestarted(t *testing.T, name string, d *detected, own bool) {
	t.Helper()
	var roles []string
	for _, r := range cni.MustLookup(name).Roles {
		kind := r.Kind
		if kind == "" {
			kind = "Deployment"
		}
		if st, role := restart.Classify(kind, map[string]string{r.Label: r.Value}); role != r.Name || st < restart.StageCNIOperator || st > restart.StageCNIControl {
			t.Errorf("%s: restart classifies its %s %s=%s as stage %d role %q", name, kind, r.Label, r.Value, st, role)
		}
		if r.Phase == cni.PhaseAgent {
			roles = append(roles, r.Name)
		}
	}
	if len(roles) == 0 {
		t.Errorf("%s is detected but has no agent role: the staged restart would not restart its agents", name)
	}
	if !own {
		return // shown by objects of another CNI's corpus (the sample's IPPools)
	}
	var got []string
	for _, w := range d.workloads {
		if slices.Contains(roles, w.Role) && w.Kind == "DaemonSet" {
			if w.Stage != restart.StageCNIAgent {
				t.Errorf("%s: DaemonSet %s/%s in stage %d of report.json, not %d", name, w.Namespace, w.Name, w.Stage, restart.StageCNIAgent)
			}
			got = append(got, "DaemonSet "+w.Namespace+"/"+w.Name)
		}
	}
	for _, p := range d.pods {
		if slices.Contains(roles, p.Role) {
			got = append(got, "pod "+p.Namespace+"/"+p.Name)
		}
	}
	if len(got) == 0 {
		t.Errorf("%s's agent is in the snapshot but gets none of its restart roles %v (workloads %+v, pods %+v)", name, roles, d.workloads, d.pods)
	}
	t.Logf("%s: restarted as %s", name, strings.Join(got, ", "))
}
