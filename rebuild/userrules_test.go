package rebuild_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapshift/snapshift/rebuild"
)

// A rebuild file's rules: list runs the user's rules files in the
// transform; the restored member serves their result.
func TestRebuildUserRules(t *testing.T) {
	dir := t.TempDir()
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte(`apiVersion: snapshift.io/v1alpha1
kind: RuleSet
rules:
- name: calico-pool
  match: {resource: ippools.crd.projectcalico.org}
  mapAddresses: [/spec/cidr]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ms := members(t, 1)
	out := filepath.Join(dir, "bundle")
	// The file as a user writes it: rules: is a top-level key.
	cfgPath := filepath.Join(dir, "rebuild.yaml")
	// The snapshot given relative to the file's directory, as the file
	// resolves it (not the working directory).
	rel, err := filepath.Rel(dir, abs(t, samplePath))
	if err != nil {
		t.Fatal(err)
	}
	cfgYAML := `apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: ` + rel + `
output: ` + out + `
rules: [` + rulesPath + `]
networking: {serviceSubnet: 172.24.0.0/16, podSubnet: 10.55.0.0/16}
etcd:
  members: [{name: ` + ms[0].Name + `, peerURL: "` + ms[0].PeerURL + `", clientURL: "` + ms[0].ClientURL + `"}]
pki: {nodeName: ` + ms[0].Name + `, advertiseAddress: 127.0.0.1}
manifests: {kubernetesVersion: v1.36.3}
`
	if err := os.WriteFile(cfgPath, []byte(cfgYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rebuild.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Rules) != 1 || !filepath.IsAbs(cfg.Rules[0]) {
		t.Fatalf("rules = %v, want one absolute path", cfg.Rules)
	}
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	srvs := startMembers(t, out, ms)
	resp, err := srvs[0].Client().Get(context.Background(), "/registry/crd.projectcalico.org/ippools/default-ipv4-ippool")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get pool: %v", err)
	}
	var pool struct {
		Spec struct {
			CIDR string `json:"cidr"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &pool); err != nil || pool.Spec.CIDR != "10.55.0.0/16" {
		t.Errorf("pool cidr %q (%v), want 10.55.0.0/16", pool.Spec.CIDR, err)
	}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
