package rebuild_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/rebuild"
)

// checkRunbook holds a runbook to what issue 22 asked of it: steps
// numbered 1..n without gaps; the provenance in the header; the staged
// restart in order, by the workloads the snapshot runs; with a new CA, the
// workers rejoined before any workload restarts; a rollback section; no
// `kubectl delete node` advice. And what issue 34 asked: every worker
// named (workers, the snapshot's Nodes with a kubelet that are no
// control-plane node of the bundle at out), each step saying where it runs,
// each node's real backup directory, node apply's --timeout, what to do when
// one apply fails, the point of no return, and a worker rollback that puts
// back what the worker step removed.
func checkRunbook(t *testing.T, rb, out string, rep *rebuild.Report, newCA bool, workers []string, order ...string) {
	t.Helper()
	rj, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rj)
	tag := hex.EncodeToString(sum[:])[:12]
	checkRunbookJSON(t, rb, out, hex.EncodeToString(sum[:]), newCA)
	for _, bad := range []string{"<worker>", "<bundle>", "old join command"} {
		if strings.Contains(rb, bad) {
			t.Errorf("RUNBOOK.md says %q", bad)
		}
	}
	for _, want := range []string{"--timeout 5m   # on " + rep.Nodes[0].Name, "**If one of the applies fails**",
		"Roll back **every** control-plane node, `snapshift node rollback` on each", "**The point of no return:**"} {
		if !strings.Contains(rb, want) {
			t.Errorf("RUNBOOK.md does not say %q", want)
		}
	}
	where := "export KUBECONFIG=/etc/kubernetes/admin.conf   # on " + rep.Nodes[0].Name // the old CA: on a node
	if newCA {
		where = "From any machine that reaches the new endpoint" // the bundle's admin.conf
	}
	if !strings.Contains(rb, where) {
		t.Errorf("RUNBOOK.md does not say where kubectl runs: %q", where)
	}
	for _, n := range rep.Nodes {
		if want := "- `/var/lib/snapshift/backup/" + n.Name + "-" + tag + "/` on " + n.Name; !strings.Contains(rb, want) {
			t.Errorf("RUNBOOK.md does not name %s's backup directory: %q", n.Name, want)
		}
	}
	if len(workers) > 0 && !strings.Contains(rb, "On each worker: "+strings.Join(workers, ", ")) {
		t.Errorf("RUNBOOK.md does not name the workers %v", workers)
	}
	rollback := strings.Index(rb, "## Rollback")
	for _, w := range workers {
		b := "B=/var/lib/snapshift/backup/" + w + "-" + tag + "   # on " + w
		if first := strings.Index(rb, b); first < 0 || first > rollback || !strings.Contains(rb[rollback:], b) {
			t.Errorf("RUNBOOK.md: %q not in the worker step and the rollback", b)
		}
		if newCA && !strings.Contains(rb, "kubectl wait node/"+w+" --for=jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'=Unknown --timeout=5m   # STATUS NotReady") {
			t.Errorf("RUNBOOK.md does not wait for %s NotReady by name", w)
		}
	}
	if len(workers) > 0 {
		for _, want := range []string{`cp -a /etc/kubernetes "$B/etc/"`, `find /etc/kubernetes -mindepth 1 -delete && cp -a "$B/etc/kubernetes/." /etc/kubernetes/`, `cp -a "$B/kubelet/." /var/lib/kubelet/`} {
			if !strings.Contains(rb, want) {
				t.Errorf("RUNBOOK.md: the workers' backup and rollback do not say %q", want)
			}
		}
	}

	steps := regexp.MustCompile(`(?m)^## (\d+)\. (.*)$`).FindAllStringSubmatch(rb, -1)
	for i, s := range steps {
		if n, _ := strconv.Atoi(s[1]); n != i+1 {
			t.Errorf("RUNBOOK.md step %q is number %d, want %d (no gaps)", s[2], n, i+1)
		}
	}
	if len(steps) < 6 {
		t.Errorf("RUNBOOK.md has %d steps", len(steps))
	}
	p := rep.Provenance
	if p == nil || p.InputSHA256 == "" || p.Snapshift.Version == "" {
		t.Fatalf("report.json provenance: %+v", p)
	}
	for _, want := range []string{"by snapshift " + p.Snapshift.Version, "sha256 " + p.InputSHA256, "## Rollback",
		"snapshift node rollback", "Everything written to the cluster after that snapshot is lost", "export KUBECONFIG=",
		// The planned stop: manifests.source is a copy taken before
		// kube-apiserver.yaml leaves the kubelet's directory (rebuild
		// reads it there), and the apiserver has exited before the
		// snapshot.
		"[ -e /etc/kubernetes/manifests.before-snapshift ] || cp -a /etc/kubernetes/manifests /etc/kubernetes/manifests.before-snapshift",
		"\nrm -f /etc/kubernetes/manifests/kube-apiserver.yaml",
		"while [ -n \"$(crictl ps --name kube-apiserver -q)\" ]; do sleep 2; done",
		"`manifests.source: /etc/kubernetes/manifests.before-snapshift`"} {
		if !strings.Contains(rb, want) {
			t.Errorf("RUNBOOK.md does not say %q", want)
		}
	}
	stop, snap := strings.Index(rb, "crictl ps --name kube-apiserver -q"), strings.Index(rb, "snapshot save")
	if stop < 0 || snap < stop {
		t.Errorf("RUNBOOK.md: the snapshot (at %d) must come after the apiserver has exited (at %d)", snap, stop)
	}
	if strings.Contains(rb, "ETCDCTL_API") {
		t.Errorf("RUNBOOK.md sets ETCDCTL_API (etcdctl 3.4+ speaks v3; 3.7 warns on it)")
	}
	if p.ConfigFile != "" && !strings.Contains(rb, p.ConfigSHA256) {
		t.Errorf("RUNBOOK.md does not name the configuration's sha256")
	}
	last := -1
	for _, o := range order {
		i := strings.Index(rb, o)
		if i < 0 || i < last {
			t.Errorf("RUNBOOK.md: %q missing or out of order (%v)", o, order)
		}
		last = i
	}
	rejoin, restart := strings.Index(rb, "Rejoin every worker"), strings.Index(rb, "Restart the workloads")
	if newCA && (rejoin < 0 || rejoin > restart) {
		t.Errorf("RUNBOOK.md: with a new CA the workers must rejoin (at %d) before the workloads restart (at %d)", rejoin, restart)
	}
	if strings.Contains(rb, "kubectl delete node <") && !strings.Contains(rb, "**Do not `kubectl delete node") {
		t.Errorf("RUNBOOK.md advises kubectl delete node")
	}
	if rep.Operation == nil || len(rep.Operation.Checksums) == 0 {
		t.Errorf("report.json has no operation block with checksums")
	}
}

// checkRunbookJSON holds runbook.json to issue 46: it is RUNBOOK.md's one
// source (every heading, prose line and command of RUNBOOK.md is the
// JSON's, in order, and nothing else), its steps and blocks carry unique
// IDs, every block says where it runs, it names the report.json it was
// made with, and the steps the window runs by ID are there.
func checkRunbookJSON(t *testing.T, md, out, reportSum string, newCA bool) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, bundle.RunbookJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc bundle.Runbook
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Markdown() != md {
		t.Errorf("RUNBOOK.md is not runbook.json's Markdown")
	}
	// Section "When something goes wrong" (issue 51): every fault ends in
	// one of the two states and names only blocks the runbook has; the
	// apply step points at the faults a failed apply is.
	faults := doc.Step("faults")
	if faults == nil || len(faults.Faults) < 5 {
		t.Fatalf("runbook.json has no section faults with the window's faults: %+v", faults)
	}
	seen := map[string]bool{}
	for _, f := range faults.Faults {
		if seen[f.ID] || (f.EndsIn != bundle.EndsNew && f.EndsIn != bundle.EndsOld) || f.When == "" || f.Do == "" || f.Why == "" || len(f.Run) == 0 {
			t.Errorf("fault %+v: a repeated ID, no end state, no words or no blocks", f)
		}
		seen[f.ID] = true
		for _, id := range f.Run {
			if doc.Block(id) == nil {
				t.Errorf("fault %s runs block %s, which runbook.json does not have", f.ID, id)
			}
		}
		if !strings.Contains(md, "- `"+f.ID+"`: **") {
			t.Errorf("RUNBOOK.md does not show fault %s", f.ID)
		}
	}
	for _, id := range []string{"apply-killed", "disk-full", "gate-failed", "apply-failed", "deadline"} {
		if doc.Fault(id) == nil {
			t.Errorf("runbook.json has no fault %s", id)
		}
	}
	if f := doc.Fault("apply-failed"); f != nil && (f.EndsIn != bundle.EndsOld || f.Run[0] != "rollback.control-plane") {
		t.Errorf("a failed apply must roll back every control-plane node first: %+v", f)
	}
	var headings, commands int
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "# Rebuild") {
			headings++
		}
	}
	if doc.APIVersion != bundle.APIVersion || doc.Kind != bundle.RunbookKind || doc.ReportSHA256 != reportSum {
		t.Errorf("runbook.json: %s %s for report.json %s, want %s", doc.APIVersion, doc.Kind, doc.ReportSHA256, reportSum)
	}
	ids := map[string]bool{}
	for _, s := range doc.Steps {
		if s.ID == "" || ids[s.ID] {
			t.Errorf("step %q: no ID or a repeated one", s.Title)
		}
		ids[s.ID] = true
		for _, it := range s.Items {
			if b := it.Block; b != nil {
				if ids[b.ID] || !strings.HasPrefix(b.ID, s.ID+".") || b.Where == "" || b.Where == bundle.WhereNone {
					t.Errorf("block %q of step %s: a repeated ID, not the step's, or nowhere to run (%q)", b.ID, s.ID, b.Where)
				}
				ids[b.ID] = true
				commands += len(b.Lines)
			}
		}
	}
	if headings != len(doc.Steps) {
		t.Errorf("RUNBOOK.md has %d headings, runbook.json %d steps", headings, len(doc.Steps))
	}
	want := []string{"header.before-snapshot", "copy.bundle", "copy.preflight", "apply.stop", "apply.start", "apply.confirm", "kubectl.export",
		"restart.run", "check.run", "rollback.control-plane"}
	if newCA {
		want = append(want, "workers-rejoin.join")
	}
	for _, id := range want {
		if doc.Block(id) == nil {
			t.Errorf("runbook.json has no block %s", id)
		}
	}
	// The copy removes what an earlier bundle left on the node before it
	// copies (the lab found an old-CA window after a new-CA rehearsal
	// refused at preflight: the rehearsal's kubeconfigs were still there).
	if b := doc.Block("copy.bundle"); b != nil {
		removed := map[string]bool{}
		for _, l := range b.Lines {
			host, ok := strings.CutPrefix(l.Text, "ssh ")
			if host, rest, _ := strings.Cut(host, " "); ok && rest == "rm -rf "+bundle.NodeBundleDir+"/"+bundle.KubeDir+" "+bundle.NodeBundleDir+"/"+bundle.EtcdDir {
				removed[host] = true
			}
			if h, _, _ := strings.Cut(strings.TrimPrefix(l.Text, "scp -rp "), " root@"); strings.HasPrefix(l.Text, "scp -rp ") && h != "" {
				dest := l.Text[strings.LastIndex(l.Text, " root@")+1:]
				if host, _, _ := strings.Cut(dest, ":"); !removed[host] {
					t.Errorf("copy.bundle copies to %s before removing its previous bundle: %q", host, l.Text)
				}
			}
		}
		if len(removed) == 0 {
			t.Error("copy.bundle removes no node's previous bundle")
		}
	}
	if s := doc.Step("apply"); s == nil || s.Undo != "rollback" || doc.Step("restart") == nil || !doc.Step("restart").PointOfNoReturn {
		t.Errorf("runbook.json: apply's undo or the restart's point of no return missing")
	}
	if commands == 0 {
		t.Error("runbook.json has no command")
	}
}
