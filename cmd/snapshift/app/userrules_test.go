package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
)

const userRulesFile = `apiVersion: snapshift.io/v1alpha1
kind: RuleSet
rules:
- name: calico-pool
  match: {resource: ippools.crd.projectcalico.org}
  mapAddresses: [/spec/cidr]        # the built-in calico rule moves it: the same value, no conflict
  mergePatch: {spec: {disabled: true}}
- name: web-annotation
  match: {resource: deployments, namespaces: [demo], names: [web]}
  mergePatch: {metadata: {annotations: {example.com/dns: "192.168.0.10"}}}
  mapAddresses: [/spec/template/spec/containers]
- name: db-password
  match: {resource: secrets, namespaces: [demo], names: [db-credentials]}
  patch: [{op: replace, path: /data/password, value: bmV3LXBhc3N3b3Jk}]
- name: nothing
  match: {resource: cm, names: [no-such-configmap]}
  delete: true
`

// A transform with --rules, restored by etcd's own restore and read back
// through a real etcd: the custom resource (JSON), the Deployment and the
// Secret (protobuf) hold the rules' results; the plan reports each change
// by rule and pointer without Secret data, and the rule matching nothing.
func TestTransformUserRules(t *testing.T) {
	in := copySample(t)
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte(userRulesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	nets := []string{"--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "--rules", rulesPath}
	r := run(t, append([]string{"plan", in, "--output", "json"}, nets...)...)
	if r.code != ExitOK {
		t.Fatalf("plan: exit %d, %s", r.code, r.stderr)
	}
	for _, want := range []string{`"field":"calico-pool: /spec/disabled"`,
		`"field":"db-password: /data/password","old":"(hidden)","new":"(hidden)"`, `warning: rule \"nothing\"`} {
		if !strings.Contains(squash(r.stdout), squash(want)) {
			t.Errorf("plan --output json lacks %s", want)
		}
	}
	// A misspelt custom resource is no warning but a usage error naming
	// the resource the snapshot holds.
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\nrules:\n- name: typo\n  match: {resource: ipool.crd.projectcalico.org}\n  delete: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "plan", in, "--rules", typo, "--quiet"); r.code != ExitUsage || !strings.Contains(r.stderr, `did you mean "ippools.crd.projectcalico.org"?`) {
		t.Errorf("plan with a misspelt resource: exit %d, %s", r.code, r.stderr)
	}
	out := filepath.Join(dir, "out.db")
	if r := run(t, append([]string{"transform", in, "--out", out, "-q"}, nets...)...); r.code != ExitOK {
		t.Fatalf("transform: exit %d, %s", r.code, r.stderr)
	}
	if r := run(t, append([]string{"verify", out}, nets...)...); r.code != ExitOK {
		t.Fatalf("verify: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	srv := restoreAndStart(t, out, dir)
	get := func(key string) []byte {
		res, err := srv.Client().Get(context.Background(), key)
		if err != nil || len(res.Kvs) != 1 {
			t.Fatalf("get %s: %v (%d kvs)", key, err, len(res.Kvs))
		}
		return res.Kvs[0].Value
	}
	var pool struct {
		Spec struct {
			CIDR     string `json:"cidr"`
			Disabled bool   `json:"disabled"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(get("/registry/crd.projectcalico.org/ippools/default-ipv4-ippool"), &pool); err != nil || pool.Spec.CIDR != "10.55.0.0/16" || !pool.Spec.Disabled {
		t.Errorf("IPPool spec = %+v (%v), want cidr 10.55.0.0/16 (the calico rule) and disabled (the user rule)", pool.Spec, err)
	}
	c := codec.New()
	dep, err := c.Decode(get("/registry/deployments/demo/web"))
	if err != nil || codec.Detect(get("/registry/deployments/demo/web")) != codec.Protobuf {
		t.Fatalf("Deployment: %v", err)
	}
	if a := dep.Obj.(*appsv1.Deployment).Annotations["example.com/dns"]; a != "192.168.0.10" {
		t.Errorf("Deployment annotation = %q", a)
	}
	sec, err := c.Decode(get("/registry/secrets/demo/db-credentials"))
	if err != nil {
		t.Fatal(err)
	}
	if p := string(sec.Obj.(*corev1.Secret).Data["password"]); p != "new-password" {
		t.Errorf("Secret password not replaced")
	}
}

// restoreAndStart restores a snapshot into a new data dir and starts a
// real etcd member on it (127.0.0.1).
func restoreAndStart(t *testing.T, snap, dir string) *etcdtest.Server {
	t.Helper()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", port)
	dataDir := filepath.Join(dir, "m1.etcd")
	if r := run(t, "restore", snap, "--name", "m1", "--data-dir", dataDir, "--initial-cluster", "m1="+peer, "--initial-advertise-peer-urls", peer); r.code != ExitOK {
		t.Fatalf("restore: exit %d, %s", r.code, r.stderr)
	}
	return etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "m1", PeerURL: peer})
}

// A rules file with a mistake exits 2 with one line naming the file,
// line and --rules.
func TestUserRulesBadFile(t *testing.T) {
	in := copySample(t)
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\nrules:\n- name: a\n  match: {resource: configmaps, namespace: [x]}\n  delete: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "plan", in, "--rules", p)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--rules") || !strings.Contains(r.stderr, "rules[0].match.namespace (line 5): unknown key, did you mean namespaces?") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("plan with a bad rules file: exit %d, stderr %q", r.code, r.stderr)
	}
}

func squash(s string) string { return strings.Join(strings.Fields(s), "") }
