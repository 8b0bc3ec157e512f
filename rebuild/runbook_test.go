package rebuild_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/rebuild"
)

// checkRunbook holds a runbook to what issue 22 asked of it: steps
// numbered 1..n without gaps; the provenance in the header; the staged
// restart in order, by the workloads the snapshot runs; with a new CA, the
// workers rejoined before any workload restarts; a rollback section; no
// `kubectl delete node` advice.
func checkRunbook(t *testing.T, rb string, rep *rebuild.Report, newCA bool, order ...string) {
	t.Helper()
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
		"cp -a /etc/kubernetes/manifests /etc/kubernetes/manifests.before-snapshift\nrm /etc/kubernetes/manifests/kube-apiserver.yaml",
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
