package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/clusterops"
	"github.com/snapshift/snapshift/internal/testfile"
)

// TestPlanNamesFailWebhooksByDefault: plan names the webhook
// configurations that fail closed without --webhooks (issue 34, item 6);
// before, only --webhooks list did.
func TestPlanNamesFailWebhooksByDefault(t *testing.T) {
	snap := goldenSnapshot(t, "webhooks/list")
	r := run(t, "plan", snap, "--service-cidr", "172.24.0.0/16", "--quiet")
	if r.code != ExitOK {
		t.Fatalf("plan: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"MutatingWebhookConfiguration policy-engine", "ValidatingWebhookConfiguration ingress-nginx-admission", "ValidatingWebhookConfiguration by-url"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan without --webhooks does not name %q:\n%s", want, r.stdout)
		}
	}
}

// TestClusterRestartDryRun: on the demo bundle (the sample, with the DNS
// bridge), --dry-run needs no cluster, prints every action in stage order
// (the flannel pods named, not "none recognised"; the DNS handover before
// NodeLocal DNS) and the kubectl lines; -o json holds the same stages.
func TestClusterRestartDryRun(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "bundle")
	cfg := filepath.Join(t.TempDir(), "rebuild.yaml")
	yml, err := os.ReadFile("../../../testdata/rebuild.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("../../../testdata/sample.db")
	text := strings.Replace(strings.Replace(string(yml), "snapshot: sample.db", "snapshot: "+abs, 1), "output: ../out/demo/bundle", "output: "+bundle, 1)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "rebuild", "--config", cfg, "--quiet"); r.code != ExitOK {
		t.Fatalf("rebuild: exit %d: %s", r.code, r.stderr)
	}
	// A --kubeconfig given is checked under --dry-run too (the fresh-mistakes
	// audit: a mistyped path passed the dry run and failed only the real one).
	none := filepath.Join(t.TempDir(), "none")
	if r := run(t, "cluster", "restart", "--bundle", bundle, "--dry-run", "--kubeconfig", none); r.code != ExitUsage ||
		!strings.Contains(r.stderr, "--kubeconfig "+none+" does not exist: give the new cluster's kubeconfig") {
		t.Errorf("cluster restart --dry-run --kubeconfig (missing): exit %d, %q", r.code, r.stderr)
	}
	empty, notes := filepath.Join(t.TempDir(), "empty"), filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("remember the milk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	binary, badShape := filepath.Join(t.TempDir(), "s.db"), filepath.Join(t.TempDir(), "kubeconfig")
	testfile.CopyTo(t, samplePath, binary)
	if err := os.WriteFile(badShape, []byte("apiVersion: v1\nkind: Config\nclusters: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for kc, want := range map[string]string{empty: "holds no cluster", notes: "is not a kubeconfig (the YAML file kubectl reads",
		// client-go's "error loading config file" and Go's types left out
		binary:   "kubeconfig " + binary + " is not a kubeconfig: not valid YAML: control characters are not allowed: give the new cluster's kubeconfig",
		badShape: "kubeconfig " + badShape + " is not a kubeconfig: clusters: takes a list, not a number: give the new cluster's kubeconfig"} {
		r := run(t, "cluster", "check", "--bundle", bundle, "--kubeconfig", kc)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "kubeconfig") || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "KUBERNETES_MASTER") || strings.Contains(r.stderr, "json parse error") || strings.Contains(r.stderr, "error loading") {
			t.Errorf("cluster check --kubeconfig %s: exit %d, %q; want exit 2 saying %q", filepath.Base(kc), r.code, r.stderr, want)
		}
	}
	// node's --root that does not exist: exit 2 naming it, not "no apply
	// of this bundle on this node" (exit 4) as before.
	for _, verb := range []string{"apply", "rollback", "confirm"} {
		r := run(t, "node", verb, "--bundle", bundle, "--node", "cp1", "--root", none)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "--root "+none+" does not exist") {
			t.Errorf("node %s --root (missing): exit %d, %q", verb, r.code, r.stderr)
		}
	}
	r := run(t, "cluster", "restart", "--bundle", bundle, "--dry-run")
	if r.code != ExitOK {
		t.Fatalf("cluster restart --dry-run: exit %d: %s", r.code, r.stderr)
	}
	last := -1
	for _, want := range []string{"[stage 1 cni] would   delete 1 pod -n kube-flannel", "[stage 3 dns] would   restart deploy/coredns",
		"DNS handover: delete Service kube-system/kube-dns (192.168.0.10) and the bridge kube-system/kube-dns-bridge (172.24.0.10)",
		"[stage 4 node-local-dns]", "kubectl -n kube-system delete svc kube-dns kube-dns-bridge && kubectl create -f kube-dns-new.json"} {
		i := strings.Index(r.stdout, want)
		if i <= last {
			t.Errorf("dry run: %q missing or out of order:\n%s", want, r.stdout)
		}
		last = i
	}
	if strings.Contains(r.stdout, "none recognised") {
		t.Errorf("dry run says none recognised:\n%s", r.stdout)
	}
	r = run(t, "cluster", "restart", "--bundle", bundle, "--dry-run", "-o", "json")
	var res struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		clusterops.Result
		Phases []phase `json:"phases"`
	}
	decodeStrict(t, "cluster restart -o json", r.stdout, &res)
	if !res.DryRun || len(res.Stages) != 5 || res.Stages[2].Actions[1].Type != "dns-handover" ||
		res.APIVersion != "snapshift.io/v1alpha1" || res.Kind != "ClusterRestartResult" || len(res.Phases) != 5 || res.Phases[2] != (phase{"dns", 0}) {
		t.Fatalf("-o json: %+v\n%s", res, r.stdout)
	}
	// -o yaml: the same document.
	y := run(t, "cluster", "restart", "--bundle", bundle, "--dry-run", "-o", "yaml")
	if js := asJSON(t, "cluster restart -o yaml", "yaml", y.stdout); y.code != ExitOK || !slices.Equal(keyPaths(t, js), keyPaths(t, r.stdout)) {
		t.Errorf("-o yaml: exit %d, keys %v, -o json's %v", y.code, keyPaths(t, js), keyPaths(t, r.stdout))
	}
	// Bad input: one line, exit 2.
	for _, args := range [][]string{{"cluster", "restart"}, {"cluster", "restart", "--bundle", t.TempDir()}, {"cluster", "check", "--bundle", t.TempDir()}} {
		r := run(t, args...)
		if r.code != ExitUsage || len(r.stderrLines()) != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
