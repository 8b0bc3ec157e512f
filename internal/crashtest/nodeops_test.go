//go:build crash

package crashtest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/snapshift/snapshift/internal/nodetest"
)

// The node side (docs/DESIGN.md decision 23 for `node apply` and `node
// rollback`): apply killed at every step, then a second apply must finish
// (the bundle in place) and a rollback must finish (the node as it was);
// rollback killed at every step, then a second rollback must finish. The
// node is a directory (--root) with recorders for systemctl, crictl and
// ip first in PATH, as in nodeops's own tests.

// nodeTemplate makes work/bundle (one node n1 at 127.0.0.1, member m1, a
// new CA, flannel), work/root (a kubeadm-shaped node) and work/bin (the
// recorders).
func nodeTemplate(t *testing.T) string {
	dir := t.TempDir()
	nodetest.Bundle(t, filepath.Join(dir, "bundle"))
	nodetest.Node(t, filepath.Join(dir, "root"))
	nodetest.Recorders(t, filepath.Join(dir, "bin"), "")
	return dir
}

// nodeState is every path under the node's etc and var (not snapshift's
// backups), with its mode and content or target, one line each.
func nodeState(t *testing.T, work string) string {
	t.Helper()
	var lines []string
	for rel, v := range nodetest.Tree(t, filepath.Join(work, "root"), "etc", "var") {
		if rel != "var/lib/snapshift" && !strings.HasPrefix(rel, "var/lib/snapshift/") {
			lines = append(lines, rel+" "+v)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// nodeArgs are `snapshift node <verb>`'s arguments on the work dir's node.
// apply arms the rollback deadline (a recorder stands in for systemd-run),
// so that a kill between arming the timer and recording it is one of the
// steps.
func nodeArgs(work, verb string) []string {
	args := []string{"node", verb, "--bundle", filepath.Join(work, "bundle"), "--node", "n1",
		"--root", filepath.Join(work, "root"), "--skip-health", "--timeout", "5s"}
	if verb == "apply" {
		args = append(args, "--rollback-after", "1h")
	}
	return args
}

// nodeOpts puts the work dir's recorders first in PATH.
func nodeOpts(work string, o runOpts) runOpts {
	o.env = append(o.env, "PATH="+filepath.Join(work, "bin")+":"+os.Getenv("PATH"))
	return o
}

// nodeRun runs `snapshift node <verb>` on the work dir's node.
func nodeRun(t *testing.T, bin, work string, o runOpts, verb string) outcome {
	t.Helper()
	return run(t, bin, work, nodeOpts(work, o), nodeArgs(work, verb)...)
}

// nodeStates are the node before apply and after a whole apply.
type nodeStates struct{ before, applied string }

func nodeReference(t *testing.T, template string) nodeStates {
	t.Helper()
	work := t.TempDir()
	copyTree(t, template, work)
	s := nodeStates{before: nodeState(t, work)}
	if r := nodeRun(t, plainBin, work, runOpts{}, "apply"); r.code != 0 {
		t.Fatalf("reference apply: exit %d: %s", r.code, r.stderr)
	}
	s.applied = nodeState(t, work)
	if s.applied == s.before {
		t.Fatal("the reference apply changed nothing")
	}
	return s
}

// nodeSteps counts the failpoints' hits in one `node verb` (after an apply
// when verb is rollback).
func nodeSteps(t *testing.T, template, verb string) []string {
	t.Helper()
	work := t.TempDir()
	copyTree(t, template, work)
	if verb == "rollback" {
		if r := nodeRun(t, plainBin, work, runOpts{}, "apply"); r.code != 0 {
			t.Fatalf("apply: exit %d: %s", r.code, r.stderr)
		}
	}
	return stepLog(t, work, nodeArgs(work, verb), nodeOpts(work, runOpts{}), "nodeopsStepDone")
}

// nodePoints are every hit of nodeopsStepDone (every step) and the first,
// second, middle and last hit of every other failpoint.
func nodePoints(steps []string) []point {
	out := points(steps, false)
	n := 0
	for _, s := range steps {
		if s == "nodeopsStepDone" {
			n++
			out = append(out, point{s, n})
		}
	}
	return out
}

// nodeKilled runs `node verb` with the failpoint binary killed at p and
// says whether the kill was reached.
func nodeKilled(t *testing.T, work, verb string, p point) bool {
	t.Helper()
	r := nodeRun(t, fpBin, work, runOpts{env: []string{"GOFAIL_FAILPOINTS=" + p.term("kill")}}, verb)
	if r.signal != syscall.SIGKILL && r.code != 0 {
		t.Errorf("node %s at %s: exit %d: %s", verb, p, r.code, r.stderr)
	}
	return r.signal == syscall.SIGKILL
}

// nodeFinish runs the plain binary's `node verb` and checks the node is
// then in state want ("" for rollback when apply never recorded a backup:
// a one-line refusal, the node unchanged, is then right too).
func nodeFinish(t *testing.T, work, verb, want, before string) string {
	t.Helper()
	r := nodeRun(t, plainBin, work, runOpts{}, verb)
	verdict := "ok"
	switch {
	case r.code != 0 && verb == "rollback" && strings.Contains(r.stderr, "nothing to roll back") && oneLine(r.stderr):
		verdict, want = "refused", before
	case r.code != 0:
		t.Errorf("then node %s: exit %d: %s", verb, r.code, r.stderr)
		return "failed"
	}
	if got := nodeState(t, work); got != want {
		t.Errorf("after node %s (%s) the node is not as it should be:\n%s\nwant\n%s", verb, verdict, got, want)
	}
	if ls, _ := findLeftoversIn(work); len(ls) > 0 {
		t.Errorf("after node %s, leftovers: %v", verb, ls)
	}
	return verdict
}

// findLeftoversIn lists snapshift temporaries under the work dir.
func findLeftoversIn(work string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".snapshift-") && !strings.HasSuffix(d.Name(), ".snapshift-stopped") {
			out = append(out, p)
		}
		return err
	})
	return out, err
}

// TestNodeCrash kills `node apply` at every step and proves that a second
// apply, or a rollback, finishes from there; and kills `node rollback` at
// every step and proves that a second rollback finishes.
func TestNodeCrash(t *testing.T) {
	needBinaries(t)
	template := nodeTemplate(t)
	ref := nodeReference(t, template)
	for _, verb := range []string{"apply", "rollback"} {
		for _, p := range nodePoints(nodeSteps(t, template, verb)) {
			nexts := []string{"apply", "rollback"}
			if verb == "rollback" {
				nexts = []string{"rollback"}
			}
			for _, next := range nexts {
				t.Run(fmt.Sprintf("%s/%s/then-%s", verb, p, next), func(t *testing.T) {
					work := t.TempDir()
					copyTree(t, template, work)
					if verb == "rollback" {
						if r := nodeRun(t, plainBin, work, runOpts{}, "apply"); r.code != 0 {
							t.Fatalf("apply: exit %d: %s", r.code, r.stderr)
						}
					}
					reached := nodeKilled(t, work, verb, p)
					want := ref.applied
					if next == "rollback" {
						want = ref.before
					}
					verdict := nodeFinish(t, work, next, want, ref.before)
					if next == "apply" { // and the applied node still rolls back
						nodeFinish(t, work, "rollback", ref.before, ref.before)
					}
					record(row{scenario: "node " + verb + " then " + next, fault: "kill", reached: reached, states: stComplete,
						clean: true, rerun: verdict, failed: t.Failed()})
				})
			}
		}
	}
}

// TestNodeFsyncAudit runs `node apply` and then `node rollback` under
// strace and replays each trace as TestFsyncAudit does: what they publish
// (backup.json, the kubelet's config.yaml) is durable at its rename and at
// the end.
func TestNodeFsyncAudit(t *testing.T) {
	needBinaries(t)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatal("strace is not installed (apt-get install strace)")
	}
	work := t.TempDir()
	copyTree(t, nodeTemplate(t), work)
	for _, verb := range []string{"apply", "rollback"} {
		trace := filepath.Join(t.TempDir(), "trace")
		args := append([]string{"-f", "-y", "-qq", "-o", trace, "-e", "trace=" + auditedCalls, plainBin}, nodeArgs(work, verb)...)
		if r := run(t, "strace", work, nodeOpts(work, runOpts{}), args...); r.code != 0 {
			t.Fatalf("node %s: exit %d: %s", verb, r.code, r.stderr)
		}
		a := replay(t, trace, filepath.Join(work, "root"))
		if len(a.published) == 0 {
			t.Fatalf("node %s published nothing", verb)
		}
		for _, p := range a.problems {
			t.Errorf("node %s: %s", verb, p)
		}
		t.Logf("node %s: %d published paths, %d fsyncs, %d problems", verb, len(a.published), a.fsyncs, len(a.problems))
		record(row{scenario: "audit node " + verb, fault: "power loss (fsync audit)", reached: true,
			states: fmt.Sprintf("%d published", len(a.published)), clean: len(a.problems) == 0, rerun: "-", failed: t.Failed()})
	}
}
