package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/verify"
)

// verify with a rules file fails on an object whose mapAddresses pointer
// still holds an address of an addressMap's old range, and on an object a
// delete rule selects; a file whose promises hold passes.
func TestVerifyUserRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The sample's Calico pool holds 10.244.0.0/16 at /spec/cidr.
	broken := write("broken.yaml", `addressMap:
- {from: 10.244.0.0/16, to: 10.55.0.0/16}
rules:
- name: calico-pool
  match: {resource: ippools.crd.projectcalico.org}
  mapAddresses: [/spec/cidr]
- name: drop-web
  match: {resource: deployments, namespaces: [demo], names: [web]}
  delete: true
`)
	r, err := verify.Run(context.Background(), verify.Config{Path: samplePath, Rules: []string{broken}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]verify.Check{}
	for _, c := range r.Checks {
		got[c.Name] = c
	}
	if c := got["user rules: mapped addresses"]; c.OK || len(c.Problems) != 1 || !strings.Contains(c.Problems[0], "/spec/cidr holds 10.244.0.0/16") {
		t.Errorf("mapped addresses check = %+v", c)
	}
	if c := got["user rules: deleted objects"]; c.OK || len(c.Problems) != 1 || !strings.Contains(c.Problems[0], "/registry/deployments/demo/web") {
		t.Errorf("deleted objects check = %+v", c)
	}
	fine := write("fine.yaml", `addressMap:
- {from: 10.0.100.0/24, to: 172.30.10.0/24}
rules:
- name: calico-pool
  match: {resource: ippools.crd.projectcalico.org}
  mapAddresses: [/spec/cidr]
`)
	r, err = verify.Run(context.Background(), verify.Config{Path: samplePath, Rules: []string{fine}})
	if err != nil || !r.OK {
		t.Errorf("verify with a file whose promises hold: %v %+v", err, r)
	}
}
