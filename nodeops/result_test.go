package nodeops_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/nodeops"
)

// steps is r's steps as "step:status" (phase order checked apart).
func steps(r *nodeops.Result) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, string(s.Step)+":"+s.Status)
	}
	return out
}

// checkTimes: every step and phase took >= 0 s, each phase is the sum of
// its steps, the phases are the steps' in order of first appearance, and
// they fit in the total.
func checkTimes(t *testing.T, what string, r *nodeops.Result, phases ...string) {
	t.Helper()
	sum := map[string]float64{}
	var order []string
	for _, s := range r.Steps {
		if s.Seconds < 0 {
			t.Errorf("%s: step %s took %v s", what, s.Step, s.Seconds)
		}
		if !slices.Contains(order, s.Phase) {
			order = append(order, s.Phase)
		}
		sum[s.Phase] += s.Seconds
	}
	var names []string
	total := 0.0
	for _, p := range r.Phases {
		names = append(names, p.Name)
		if p.Seconds < 0 || p.Seconds-sum[p.Name] > 0.002 || sum[p.Name]-p.Seconds > 0.002 {
			t.Errorf("%s: phase %s took %v s, its steps %v s", what, p.Name, p.Seconds, sum[p.Name])
		}
		total += p.Seconds
	}
	if !slices.Equal(names, order) || !slices.Equal(names, phases) {
		t.Errorf("%s: phases %v (the steps' %v), want %v", what, names, order, phases)
	}
	if r.Seconds < 0 || total > r.Seconds+0.002*float64(len(r.Phases)) {
		t.Errorf("%s: total %v s, the phases' sum %v s", what, r.Seconds, total)
	}
}

// TestResult: apply, apply again, confirm, rollback and a refused apply
// each return what they did on a real node root: the outcome, the steps
// done and skipped, and each phase's time.
func TestResult(t *testing.T) {
	b, root := makeBundle(t), node(t)
	ctx := context.Background()
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}

	pre := cfg
	pre.PreflightOnly = true
	r, err := nodeops.Apply(ctx, pre)
	if err != nil || r.Outcome != nodeops.OutcomePreflightPassed || !slices.Equal(steps(r), []string{"preflight:done"}) {
		t.Fatalf("Apply --preflight-only: %v, %+v", err, r)
	}
	checkTimes(t, "preflight-only", r, "preflight")

	r, err = nodeops.Apply(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"preflight:done", "backup:done", "static-pods-stopped:done", "etcd-moved:done", "etcd-installed:done",
		"installed:done", "cni-cleaned:done", "peers-checked:done", "kubelet-started:done"}
	if r.Operation != "apply" || r.Node != "n1" || r.Outcome != nodeops.OutcomeDone || !slices.Equal(steps(r), want) ||
		!strings.HasPrefix(r.Backup, "/var/lib/snapshift/backup/n1-") || r.FailedPhase != "" {
		t.Errorf("Apply: %+v, steps %v", r, steps(r))
	}
	checkTimes(t, "apply", r, "preflight", "backup", "stop", "install", "cni", "peers", "start")

	// Again: what ran once is skipped, the rest runs again.
	r, err = nodeops.Apply(ctx, cfg)
	want = []string{"preflight:done", "backup:skipped", "static-pods-stopped:skipped", "etcd-moved:skipped", "etcd-installed:skipped",
		"installed:done", "cni-cleaned:done", "peers-checked:done", "kubelet-started:done"}
	if err != nil || !slices.Equal(steps(r), want) {
		t.Errorf("a second Apply: %v, steps %v", err, steps(r))
	}
	for _, s := range r.Steps {
		if s.Status == nodeops.StatusSkipped && s.Seconds != 0 {
			t.Errorf("a second Apply: skipped step %s took %v s", s.Step, s.Seconds)
		}
	}
	checkTimes(t, "apply again", r, "preflight", "backup", "stop", "install", "cni", "peers", "start")

	r, err = nodeops.Confirm(ctx, cfg)
	if err != nil || r.Operation != "confirm" || r.Outcome != nodeops.OutcomeDone || !slices.Equal(steps(r), []string{"confirmed:done"}) {
		t.Errorf("Confirm: %v, %+v", err, r)
	}
	checkTimes(t, "confirm", r, "confirm")

	r, err = nodeops.Rollback(ctx, cfg)
	want = []string{"static-pods-stopped:done", "restored:done", "apiserver-manifest-back:done", "cni-cleaned:done", "peers-checked:done", "kubelet-started:done"}
	if err != nil || r.Operation != "rollback" || r.Outcome != nodeops.OutcomeDone || !slices.Equal(steps(r), want) {
		t.Errorf("Rollback: %v, %+v, steps %v", err, r, steps(r))
	}
	checkTimes(t, "rollback", r, "stop", "restore", "cni", "peers", "start")

	// Rolled back: a second rollback skips what it did, confirm is refused.
	r, err = nodeops.Rollback(ctx, cfg)
	if err != nil || !slices.Equal(steps(r)[:2], []string{"static-pods-stopped:skipped", "restored:skipped"}) {
		t.Errorf("a second Rollback: %v, steps %v", err, steps(r))
	}
	r, err = nodeops.Confirm(ctx, cfg)
	if !errors.Is(err, nodeops.ErrRefused) || r.Outcome != nodeops.OutcomeRefused || len(r.Steps) != 0 {
		t.Errorf("Confirm after a rollback: %v, %+v", err, r)
	}

	// A refused preflight names its phase.
	write(t, filepath.Join(b, "kubernetes/n1/pki/ca.key"), "another key\n", 0o600)
	r, err = nodeops.Apply(ctx, cfg)
	if !errors.Is(err, nodeops.ErrRefused) || r.Outcome != nodeops.OutcomeRefused || r.FailedPhase != "preflight" ||
		!slices.Equal(steps(r), []string{"preflight:failed"}) {
		t.Errorf("Apply of a tampered bundle: %v, %+v", err, r)
	}
	checkTimes(t, "refused apply", r, "preflight")
}
