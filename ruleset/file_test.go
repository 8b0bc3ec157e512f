package ruleset_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

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
		{"resource typo", "rules:\n- name: a\n  match: {resource: deploymnets}\n  delete: true\n", `match.resource "deploymnets" is no resource kube-apiserver serves (did you mean "deployments.apps"?)`},
		{"unknown built-in group resource", "rules:\n- name: a\n  match: {resource: ingress.extensions}\n  delete: true\n", `(did you mean "ingresses.networking.k8s.io"?)`},
		{"wildcard add", "rules:\n- name: a\n  match: {resource: configmaps}\n  patch: [{op: add, path: /data/*, value: x}]\n", "wildcards and aliases work in test and replace ops only"},
		{"bad alias", "rules:\n- name: a\n  match: {resource: pods}\n  mapAddresses: [\"@pod/x\"]\n", "the aliases are @podSpec and @containers"},
		{"replace from and regex", "rules:\n- name: a\n  match: {resource: pods}\n  replace: [{path: /spec, from: a, regex: b, to: c}]\n", "replace[0]: give exactly one of from"},
		{"replace bad regex", "rules:\n- name: a\n  match: {resource: pods}\n  replace: [{path: /spec, regex: \"a(\", to: c}]\n", "replace[0]: regex: error parsing regexp"},
		{"no resource", "rules:\n- name: a\n  match: {names: [x]}\n  delete: true\n", "match.resource is required"},
		{"does nothing", "rules:\n- name: a\n  match: {resource: configmaps}\n", "it does nothing"},
		{"bad op", "rules:\n- name: a\n  match: {resource: configmaps}\n  patch: [{op: upsert, path: /x}]\n", `op "upsert" is not one of`},
		{"op without value", "rules:\n- name: a\n  match: {resource: configmaps}\n  patch: [{op: replace, path: /x}]\n", "op replace needs a value"},
		{"delete and patch", "rules:\n- name: a\n  match: {resource: configmaps}\n  delete: true\n  mapAddresses: [/data/x]\n", "delete: true removes the object"},
		{"bad kind", "apiVersion: v1\nkind: ConfigMap\n", "apiVersion is v1, not snapshift.io/v1alpha1, kind is ConfigMap, not RuleSet: the file begins with apiVersion: snapshift.io/v1alpha1 and kind: RuleSet"},
		{"not yaml", "rules: [\n", "x.yaml: line 3: not valid YAML: did not find expected node content"},
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
	if r.Name != "metallb-pool" || r.Line != 14 || fmt.Sprint(r.Prefixes()) != "[/registry/metallb.io/ipaddresspools/]" {
		t.Errorf("first rule %s, prefixes %v", r, r.Prefixes())
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

// Built-in resources are accepted by every name kubectl accepts and
// normalised to the api-resources name; workloads stands for every
// resource with a pod spec.
func TestResourceNames(t *testing.T) {
	for in, want := range map[string]string{
		"deployments": "[deployments.apps]", "deployments.apps": "[deployments.apps]", "deploy": "[deployments.apps]",
		"deployment": "[deployments.apps]", "svc": "[services]", "ing": "[ingresses.networking.k8s.io]",
		"cm": "[configmaps]", "crd": "[customresourcedefinitions.apiextensions.k8s.io]", "netpol": "[networkpolicies.networking.k8s.io]",
		"ipaddresspools.metallb.io": "[ipaddresspools.metallb.io]",
		"workloads":                 "[pods replicationcontrollers deployments.apps daemonsets.apps statefulsets.apps replicasets.apps jobs.batch cronjobs.batch]",
	} {
		f, err := ruleset.Parse("x.yaml", []byte(head+"rules:\n- name: a\n  match: {resource: "+in+"}\n  delete: true\n"))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := fmt.Sprint(f.Rules[0].Resources()); got != want {
			t.Errorf("%s: resources %s, want %s", in, got, want)
		}
	}
	f, _ := ruleset.Parse("x.yaml", []byte(head+"rules:\n- name: a\n  match: {resource: ing}\n  delete: true\n"))
	if got := fmt.Sprint(f.Rules[0].Prefixes()); got != "[/registry/ingress/]" {
		t.Errorf("ing prefixes %s", got)
	}
}

// The resource table agrees with client-go's scheme: each built-in
// resource's kind is registered in its group, and its plural is the one
// the RESTMapper would guess from the kind.
func TestBuiltinResourcesMatchTheScheme(t *testing.T) {
	for _, r := range wellknown.BuiltinResources {
		plural, group, _ := strings.Cut(r.Name, ".")
		if r.KeyGroup {
			continue // apiextensions-apiserver's and kube-aggregator's, not in client-go's scheme
		}
		found := false
		for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
			if gvk.Group == group && gvk.Kind == r.Kind {
				found = true
				if res, _ := meta.UnsafeGuessKindToResource(gvk); res.Resource != plural && r.Kind != "Endpoints" {
					t.Errorf("%s: the kind %s guesses plural %s", r.Name, r.Kind, res.Resource)
				}
				break
			}
		}
		if !found {
			t.Errorf("%s: kind %s is not registered in group %q", r.Name, r.Kind, group)
		}
	}
}
