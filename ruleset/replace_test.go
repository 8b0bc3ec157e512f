package ruleset_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/ruleset"
)

func mustRule(t *testing.T, body string) *ruleset.Rule {
	t.Helper()
	f, err := ruleset.Parse("x.yaml", []byte(head+"rules:\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return f.Rules[0]
}

func mustDoc(t *testing.T, s string) any {
	t.Helper()
	d, err := ruleset.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func apply(t *testing.T, r *ruleset.Rule, doc any) (string, int) {
	t.Helper()
	got, n, err := r.Apply(doc, testMapping())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	return string(b), n
}

// @containers resolves per kind to the three container lists of the pod
// spec; "*" takes every index or key.
func TestExpandAliases(t *testing.T) {
	for kind, want := range map[string]string{
		"Pod":        "[/spec/containers/0/image /spec/initContainers/0/image]",
		"Deployment": "[/spec/template/spec/containers/0/image /spec/template/spec/initContainers/0/image]",
		"CronJob":    "[/spec/jobTemplate/spec/template/spec/containers/0/image /spec/jobTemplate/spec/template/spec/initContainers/0/image]",
		"ConfigMap":  "[]",
	} {
		spec := `{"containers":[{"image":"a"}],"initContainers":[{"image":"b"}]}`
		var doc string
		switch kind {
		case "Pod", "ConfigMap":
			doc = `{"kind":"` + kind + `","spec":` + spec + `}`
		case "CronJob":
			doc = `{"kind":"CronJob","spec":{"jobTemplate":{"spec":{"template":{"spec":` + spec + `}}}}}`
		default:
			doc = `{"kind":"` + kind + `","spec":{"template":{"spec":` + spec + `}}}`
		}
		if got := fmt.Sprint(ruleset.Expand(mustDoc(t, doc), "@containers/*/image")); got != want {
			t.Errorf("%s: Expand = %s, want %s", kind, got, want)
		}
	}
	doc := mustDoc(t, `{"data":{"b":"x","a~/":"y"},"l":[{"v":1},{"w":2},{"v":3}]}`)
	if got := fmt.Sprint(ruleset.Expand(doc, "/data/*")); got != "[/data/a~0~1 /data/b]" {
		t.Errorf("Expand /data/* = %s", got)
	}
	if got := fmt.Sprint(ruleset.Expand(doc, "/l/*/v")); got != "[/l/0/v /l/2/v]" {
		t.Errorf("Expand /l/*/v = %s", got)
	}
}

// replace rewrites strings only (keys and numbers stay), literally or by
// RE2 with groups, and counts every match.
func TestApplyReplace(t *testing.T) {
	r := mustRule(t, `- name: a
  match: {resource: workloads}
  replace:
  - {path: "@containers/*/image", from: registry.old.example/, to: registry.new.example/}
  - {path: /metadata/annotations, regex: '^v(\d+)$', to: 'version-$1'}
`)
	doc := mustDoc(t, `{"kind":"Deployment","metadata":{"annotations":{"registry.old.example/x":"v2","n":"v3x"}},
	  "spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"registry.old.example/","image":"registry.old.example/app:1"},{"image":"docker.io/registry.old.example/app"}],
	  "initContainers":[{"image":"registry.old.example/init"}]}}}}`)
	got, n := apply(t, r, doc)
	want := `{"kind":"Deployment","metadata":{"annotations":{"n":"v3x","registry.old.example/x":"version-2"}},"spec":{"replicas":3,"template":{"spec":{"containers":[{"image":"registry.new.example/app:1","name":"registry.old.example/"},{"image":"docker.io/registry.new.example/app"}],"initContainers":[{"image":"registry.new.example/init"}]}}}}`
	if got != want || n != 4 {
		t.Errorf("Apply = %s (%d matches), want %s (4)", got, n, want)
	}
	// A plain pointer with nothing there does not apply; a pattern that
	// names nothing is no error.
	plain := mustRule(t, "- name: a\n  match: {resource: pods}\n  replace: [{path: /spec/hostname, from: a, to: b}]\n")
	if _, _, err := plain.Apply(mustDoc(t, `{"kind":"Pod","spec":{}}`), testMapping()); err == nil || !strings.Contains(err.Error(), "nothing at /spec/hostname") {
		t.Errorf("replace at a missing plain pointer = %v", err)
	}
	images := mustRule(t, "- name: a\n  match: {resource: workloads}\n  replace: [{path: \"@containers/*/image\", from: a, to: b}]\n")
	if _, n := apply(t, images, mustDoc(t, `{"kind":"Service","spec":{}}`)); n != 0 {
		t.Errorf("pattern on a kind without a pod spec: %d matches", n)
	}
}

// Patterns in where hold when one place equals; in test and replace ops
// they expand to one op per place.
func TestPatternsInWhereAndPatch(t *testing.T) {
	r := mustRule(t, `- name: a
  match:
    resource: cm
    where: [{path: /metadata/finalizers/*, equals: example.com/blocker}]
  patch:
  - {op: test, path: /data/*, value: "on"}
  - {op: replace, path: /data/*, value: "off"}
`)
	doc := mustDoc(t, `{"metadata":{"finalizers":["a","example.com/blocker"]},"data":{"x":"on","y":"on"}}`)
	if !r.Matches(ruleset.MetaOf(doc), doc) {
		t.Error("where with a wildcard: no match")
	}
	if other := mustDoc(t, `{"metadata":{"finalizers":["a"]}}`); r.Matches(ruleset.MetaOf(other), other) {
		t.Error("where with a wildcard matched an object without the value")
	}
	if got, _ := apply(t, r, doc); !strings.Contains(got, `"data":{"x":"off","y":"off"}`) {
		t.Errorf("Apply = %s", got)
	}
	bad := mustDoc(t, `{"data":{"x":"on","y":"no"}}`)
	if _, _, err := r.Apply(bad, testMapping()); err == nil {
		t.Error("a test op with a wildcard passed though one place differs")
	}
	if _, _, err := r.Apply(mustDoc(t, `{"data":{}}`), testMapping()); err == nil || !strings.Contains(err.Error(), "names no place") {
		t.Errorf("a test op whose pattern names nothing = %v", err)
	}
}

// A Secret's stringData is folded into data as the apiserver does;
// server-owned fields and a built-in object's status are refused.
func TestApiserverWriteRules(t *testing.T) {
	r := mustRule(t, "- name: a\n  match: {resource: secrets}\n  mergePatch: {stringData: {password: s3cret, user: admin}}\n")
	got, _ := apply(t, r, mustDoc(t, `{"apiVersion":"v1","kind":"Secret","data":{"password":"b2xk","keep":"eA=="}}`))
	if want := `{"apiVersion":"v1","data":{"keep":"eA==","password":"czNjcmV0","user":"YWRtaW4="},"kind":"Secret"}`; got != want {
		t.Errorf("stringData fold = %s, want %s", got, want)
	}
	for body, want := range map[string]string{
		"mergePatch: {metadata: {resourceVersion: \"5\"}}":         "/metadata/resourceVersion is set by kube-apiserver",
		"mergePatch: {metadata: {managedFields: null}}":            "/metadata/managedFields is set by kube-apiserver",
		"patch: [{op: replace, path: /status/phase, value: Gone}]": "editStatus: true",
	} {
		r := mustRule(t, "- name: a\n  match: {resource: pods}\n  "+body+"\n")
		doc := mustDoc(t, `{"apiVersion":"v1","kind":"Pod","metadata":{"managedFields":[{"manager":"k"}]},"status":{"phase":"Running"}}`)
		if _, _, err := r.Apply(doc, testMapping()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	ok := mustRule(t, "- name: a\n  match: {resource: pods}\n  editStatus: true\n  patch: [{op: replace, path: /status/phase, value: Gone}]\n")
	if got, _ := apply(t, ok, mustDoc(t, `{"kind":"Pod","status":{"phase":"Running"}}`)); !strings.Contains(got, "Gone") {
		t.Errorf("editStatus: %s", got)
	}
}
