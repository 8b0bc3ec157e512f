package rules_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/transform"
)

// goldenInput builds a snapshot (real etcd) from a golden case's input.
func goldenInput(t *testing.T, dir string) string {
	t.Helper()
	c := codec.New()
	var kvs []kvPair
	for _, e := range readInputYAML(t, filepath.Join(dir, "input.yaml")) {
		kvs = append(kvs, kvPair{Key: e.Key, Value: encodeEntry(t, c, e)})
	}
	return buildSnapshot(t, kvs)
}

func changesOf(rep *transform.Report, key string) []string {
	var out []string
	for _, o := range rep.Objects {
		if o.Key == key {
			for _, c := range o.Changes {
				out = append(out, c.String())
			}
		}
	}
	return out
}

// The report names each change by rule and JSON pointer, old -> new, and
// never shows a Secret's values.
func TestUserRulesReport(t *testing.T) {
	dir := "../testdata/golden/user-rules/metallb"
	in := goldenInput(t, dir)
	rep, _, _, err := runRules(t, in, "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{filepath.Join(dir, "rules.yaml")}}})
	if err != nil {
		t.Fatal(err)
	}
	pool := strings.Join(changesOf(rep, "/registry/metallb.io/ipaddresspools/metallb-system/default-pool"), "\n")
	for _, want := range []string{
		"metallb-pools: /spec/addresses/0: 10.0.100.10-10.0.100.60 -> 172.30.10.10-172.30.10.60",
		"metallb-pools: /spec/addresses/1: 10.0.100.128/26 -> 172.30.10.128/26",
		"metallb-pools: /spec/avoidBuggyIPs: true",
	} {
		if !strings.Contains(pool, want) {
			t.Errorf("pool changes:\n%s\nwant %q", pool, want)
		}
	}
	secret := strings.Join(changesOf(rep, "/registry/secrets/metallb-system/memberlist"), "\n")
	if secret != "memberlist-key: /data/secretkey: (hidden) -> (hidden)" {
		t.Errorf("Secret change = %q, want the field only", secret)
	}
	for _, o := range rep.Objects {
		for _, c := range o.Changes {
			if strings.Contains(c.Old+c.New, "bmV3") || strings.Contains(c.Old+c.New, "b2xk") {
				t.Errorf("%s: a Secret value is in the report: %v", o.Key, c)
			}
		}
	}
	if got := changesOf(rep, "/registry/metallb.io/ipaddresspools/metallb-system/legacy-pool"); len(got) != 1 || !strings.HasPrefix(got[0], "legacy-pool: ") {
		t.Errorf("deleted pool changes = %v", got)
	}
}

// A rules file with a mistake is an option error (exit 2) before the
// snapshot is read; two rules setting one field differently are refused.
func TestUserRulesRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", "rules:\n- name: a\n  match: {resource: configmaps}\n  mapAddresses: [data]\n")
	_, _, err := rules.Build(rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{bad}}})
	var oe *option.Error
	if !errors.As(err, &oe) || oe.Field != "Rules" || !strings.Contains(err.Error(), "bad.yaml:4") {
		t.Fatalf("Build with a bad file = %v, want an option error on Rules naming bad.yaml:4", err)
	}
	two := write("two.yaml", `rules:
- name: first
  match: {resource: ipaddresspools.metallb.io, names: [default-pool]}
  patch: [{op: replace, path: /spec/autoAssign, value: false}]
- name: second
  match: {resource: ipaddresspools.metallb.io}
  mergePatch: {spec: {autoAssign: true}}
`)
	in := goldenInput(t, "../testdata/golden/user-rules/metallb")
	_, _, _, err = runRules(t, in, "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{two}}})
	if !errors.Is(err, transform.ErrRefused) || !strings.Contains(err.Error(), `rule "first"`) || !strings.Contains(err.Error(), `rule "second"`) {
		t.Fatalf("two rules on one field = %v, want a refusal naming both", err)
	}
	invalid := write("invalid.yaml", `rules:
- name: typo-field
  match: {resource: deployments}
  patch: [{op: add, path: /spec/replicaz, value: 3}]
`)
	in = goldenInput(t, "../testdata/golden/user-rules/dns-address")
	_, _, _, err = runRules(t, in, "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{invalid}}})
	if !errors.Is(err, transform.ErrRefused) || !strings.Contains(err.Error(), "replicaz") {
		t.Fatalf("a patch adding an unknown field = %v, want a refusal naming it", err)
	}
}
