package ruleset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/wellknown"
)

const head = "apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\n"

// Every mistake is one sentence naming where it is.
func TestParseRefusesWithLine(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown key", "rules:\n- name: a\n  match: {resource: configmaps}\n  mapAdresses: [/data/x]\n", "rules[0].mapAdresses (line 6): unknown key, did you mean mapAddresses?"},
		{"unknown match key", "rules:\n- name: a\n  match: {resource: configmaps, namespace: [x]}\n  delete: true\n", "rules[0].match.namespace (line 5): unknown key, did you mean namespaces?"},
		{"bad pointer", "rules:\n- name: a\n  match: {resource: configmaps}\n  mapAddresses: [data/x]\n", `x.yaml:4: rule "a": mapAddresses: JSON pointer "data/x" must start with /`},
		{"bad escape", "rules:\n- name: a\n  match: {resource: configmaps}\n  mapAddresses: [/data/a~2]\n", "~ must be followed by 0 or 1"},
		{"bad selector", "rules:\n- name: a\n  match: {resource: configmaps, labelSelector: \"app in (\"}\n  delete: true\n", `x.yaml:4: rule "a": match.labelSelector "app in ("`},
		{"bad cidr", "addressMap:\n- {from: 10.0.100.0/33, to: 172.30.10.0/24}\n", "addressMap[0]: from:"},
		{"smaller to", "addressMap:\n- {from: 10.0.100.0/24, to: 172.30.10.0/25}\n", "the new range must be at least as large"},
		{"mixed family", "addressMap:\n- {from: 10.0.100.0/24, to: fd00::/64}\n", "within one family"},
		{"grouped built-in", "rules:\n- name: a\n  match: {resource: deployments.apps}\n  delete: true\n", `write "deployments"`},
		{"no resource", "rules:\n- name: a\n  match: {names: [x]}\n  delete: true\n", "match.resource is required"},
		{"does nothing", "rules:\n- name: a\n  match: {resource: configmaps}\n", "it does nothing"},
		{"bad op", "rules:\n- name: a\n  match: {resource: configmaps}\n  patch: [{op: upsert, path: /x}]\n", `op "upsert" is not one of`},
		{"op without value", "rules:\n- name: a\n  match: {resource: configmaps}\n  patch: [{op: replace, path: /x}]\n", "op replace needs a value"},
		{"delete and patch", "rules:\n- name: a\n  match: {resource: configmaps}\n  delete: true\n  mapAddresses: [/data/x]\n", "delete: true removes the object"},
		{"bad kind", "apiVersion: v1\nkind: ConfigMap\n", "apiVersion/kind must be snapshift.io/v1alpha1 RuleSet"},
		{"not yaml", "rules: [\n", "x.yaml: yaml: line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := head + c.body
			if strings.HasPrefix(c.body, "apiVersion") {
				body = c.body
			}
			_, err := ruleset.Parse("x.yaml", []byte(body))
			if err == nil || !errors.Is(err, ruleset.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v, want an ErrInvalid containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestParseExample(t *testing.T) {
	fs, err := ruleset.Load([]string{"../testdata/rules/example.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fs[0].Rules); n != 5 {
		t.Fatalf("%d rules, want 5", n)
	}
	r := fs[0].Rules[0]
	if r.Name != "metallb-pool" || r.Line != 12 || r.Prefix() != "/registry/metallb.io/ipaddresspools/" {
		t.Errorf("first rule %s, prefix %s", r, r.Prefix())
	}
	if got := ruleset.Ranges(fs); len(got) != 1 || got[0].Old.String() != "10.0.100.0/24" || got[0].New.String() != "172.30.10.0/24" {
		t.Errorf("Ranges = %v", got)
	}
}

func TestLoadRefusesDuplicatesAndOverlaps(t *testing.T) {
	if _, err := ruleset.Load([]string{"../testdata/rules/example.yaml", "../testdata/rules/example.yaml"}); err == nil || !strings.Contains(err.Error(), "is used twice") {
		t.Errorf("Load twice = %v, want a duplicate name", err)
	}
}

func TestPrefix(t *testing.T) {
	for res, want := range map[string]string{
		"services":                  "/registry/services/specs/",
		"endpoints":                 "/registry/services/endpoints/",
		"nodes":                     "/registry/minions/",
		"configmaps":                "/registry/configmaps/",
		"deployments":               "/registry/deployments/",
		"ipaddresspools.metallb.io": "/registry/metallb.io/ipaddresspools/",
	} {
		if got := wellknown.Prefix(res); got != want {
			t.Errorf("Prefix(%s) = %s, want %s", res, got, want)
		}
	}
}
