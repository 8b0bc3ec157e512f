package rules_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/corpus"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	corev1 "k8s.io/api/core/v1"
)

// goldenInput builds a snapshot (real etcd) from a golden case's input.
func goldenInput(t *testing.T, dir string) string {
	t.Helper()
	c := codec.New()
	kvs := corpus.KVs(t, c, corpus.Read(t, filepath.Join(dir, "input.yaml")))
	return corpus.Write(t, kvs)
}

func changesOf(rep *transform.Report, key string) []string {
	var out []string
	for o := range rep.Objects.All() {
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
	for o := range rep.Objects.All() {
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

// Values encrypted at rest: a user rule's result is re-encrypted with the
// object's provider and key; a KMS value no rule selects by namespace and
// name is copied as stored, one a rule selects is refused.
func TestUserRulesEncrypted(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "enc.yaml")
	if err := os.WriteFile(cfgPath, []byte(encConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := encryptSample(t, enc)
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte(`apiVersion: snapshift.io/v1alpha1
kind: RuleSet
rules:
- name: quiet
  match: {resource: configmaps, namespaces: [demo], names: [app-settings]}
  mergePatch: {data: {LOG_LEVEL: error}}
- name: kube-system-secrets
  match: {resource: secrets, namespaces: [kube-system], labelSelector: "no-such=label"}
  delete: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, _, err := rules.Build(rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{rulesPath}}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.db")
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: rs, Encryption: enc}); err != nil {
		t.Fatal(err)
	}
	inState, outState := readState(t, in), readState(t, out)
	const key = "/registry/configmaps/demo/app-settings"
	stored := outState.Live[key].KV.Value
	if !bytes.HasPrefix(stored, []byte("k8s:enc:secretbox:v1:cm-key:")) {
		t.Fatalf("%s stored as %q, want secretbox with cm-key", key, stored[:min(30, len(stored))])
	}
	plain, _, err := enc.Decrypt(key, stored)
	if err != nil {
		t.Fatal(err)
	}
	if cm := decodeTyped[*corev1.ConfigMap](t, codec.New(), key, plain); cm.Data["LOG_LEVEL"] != "error" || cm.Data["API_URL"] == "" {
		t.Errorf("ConfigMap data %v", cm.Data)
	}
	const kms = "/registry/secrets/demo/db-credentials"
	if !bytes.Equal(inState.Live[kms].KV.Value, outState.Live[kms].KV.Value) {
		t.Error("the KMS Secret no rule selects was not copied as stored")
	}

	if err := os.WriteFile(rulesPath, []byte("apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\nrules:\n- name: db\n  match: {resource: secrets, namespaces: [demo], names: [db-*]}\n  delete: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, _, err = rules.Build(rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{rulesPath}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = transform.Run(context.Background(), transform.Config{Input: in, DryRun: true, Rules: rs, Encryption: enc})
	if !errors.Is(err, state.ErrEncrypted) || !strings.Contains(err.Error(), kms) {
		t.Errorf("a rule selecting a KMS Secret: %v, want a refusal naming it", err)
	}
}

// The example rules file runs with every built-in network rule at once on
// the sample: it edits what it selects, the built-in rules still do their
// part, and a second run on the output with the same options changes
// nothing.
func TestUserRulesWithBuiltins(t *testing.T) {
	opts := rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"},
		PodCIDROptions:   rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"},
		UserRulesOptions: rules.UserRulesOptions{Rules: []string{"../testdata/rules/example.yaml"}}}
	in := testfile.Copy(t, samplePath, t.TempDir())
	out := filepath.Join(t.TempDir(), "out.db")
	rep, _, _, err := runRules(t, in, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*transform.RuleReport{}
	for _, r := range rep.Rules {
		byName[r.Name] = r
	}
	if byName[rules.NameServiceCIDR].Changed == 0 || byName[rules.NameUserRules].Changed != 1 {
		t.Errorf("rules report: service-cidr %+v, user-rules %+v", byName[rules.NameServiceCIDR], byName[rules.NameUserRules])
	}
	if got := changesOf(rep, "/registry/deployments/demo/web"); len(got) != 1 || got[0] != "annotate-single-replica-web: /metadata/annotations/snapshift.io~1migrated: true" {
		t.Errorf("demo/web changes = %v", got)
	}
	again, _, _, err := runRules(t, out, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Replaced+again.Deleted+again.Created != 0 {
		t.Errorf("a second run changed %d, deleted %d, created %d", again.Replaced, again.Deleted, again.Created)
	}
}

// A rule deleting an object another rule edits is refused up front.
func TestUserRulesDeleteAndEdit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: snapshift.io/v1alpha1
kind: RuleSet
rules:
- name: edit
  match: {resource: deployments, namespaces: [demo], names: [web]}
  mergePatch: {metadata: {annotations: {a: b}}}
- name: drop
  match: {resource: deployments, namespaces: [demo]}
  delete: true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := testfile.Copy(t, samplePath, t.TempDir())
	_, _, _, err := runRules(t, in, "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{p}}})
	if !errors.Is(err, transform.ErrRefused) || !strings.Contains(err.Error(), `rule "drop"`) || !strings.Contains(err.Error(), `rule "edit"`) {
		t.Errorf("delete and edit of one object = %v", err)
	}
}

// One rule over every workload kind: the report lists each concrete
// pointer the pattern touched, with its old and new value, and nothing it
// left alone.
func TestUserRulesRegistryMovePointers(t *testing.T) {
	dir := "../testdata/golden/user-rules/cookbook-registry-move"
	rep, _, _, err := runRules(t, goldenInput(t, dir), "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{filepath.Join(dir, "rules.yaml")}}})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][]string{
		"/registry/deployments/shop/web": {
			"registry-move: /spec/template/spec/containers/0/image: registry.old.example/shop/web:1.4 -> registry.new.example/shop/web:1.4",
			"registry-move: /spec/template/spec/initContainers/0/image: registry.old.example/shop/migrate:1.4 -> registry.new.example/shop/migrate:1.4",
			"registry-move: (text replacements in this object): 2",
		},
		"/registry/cronjobs/shop/backup": {
			"registry-move: /spec/jobTemplate/spec/template/spec/containers/0/image: registry.old.example/shop/backup:3 -> registry.new.example/shop/backup:3",
			"registry-move: (text replacements in this object): 1",
		},
		"/registry/pods/shop/debug": {
			"registry-move: /spec/ephemeralContainers/0/image: registry.old.example/tools/netshoot:0.13 -> registry.new.example/tools/netshoot:0.13",
			"registry-move: (text replacements in this object): 1",
		},
	} {
		if got := changesOf(rep, key); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s changes:\n%s\nwant\n%s", key, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// expect.min refuses a rule that changes too little; a custom resource the
// snapshot does not know is an option error (exit 2) with a suggestion; a
// Secret's stringData lands in data, hidden in the report.
func TestUserRulesExpectAndWriteRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) []string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("apiVersion: snapshift.io/v1alpha1\nkind: RuleSet\nrules:\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{p}
	}
	run := func(files []string) (*transform.Report, error) {
		in := goldenInput(t, "../testdata/golden/user-rules/metallb")
		rep, _, _, err := runRules(t, in, "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: files}})
		return rep, err
	}
	_, err := run(write("min.yaml", "- name: nothing\n  match: {resource: workloads}\n  replace: [{path: \"@containers/*/image\", from: registry.old.example/, to: x/}]\n  expect: {min: 1}\n"))
	if !errors.Is(err, transform.ErrRefused) || !strings.Contains(err.Error(), "expect.min is 1") {
		t.Errorf("expect.min with nothing changed = %v", err)
	}
	_, err = run(write("typo.yaml", "- name: typo\n  match: {resource: ipadresspools.metallb.io}\n  delete: true\n"))
	var oe *option.Error
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), `did you mean "ipaddresspools.metallb.io"?`) {
		t.Errorf("custom resource typo = %v, want an option error with a suggestion", err)
	}
	rep, err := run(write("sd.yaml", "- name: sd\n  match: {resource: secret, names: [memberlist]}\n  mergePatch: {stringData: {secretkey: new-key, extra: x}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(changesOf(rep, "/registry/secrets/metallb-system/memberlist"), "\n")
	if got != "sd: /data/extra: (hidden)\nsd: /data/secretkey: (hidden) -> (hidden)" {
		t.Errorf("stringData changes:\n%s", got)
	}
}

// A replace inside a long text is reported by the part that changed.
func TestUserRulesTextEditInReport(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(p, []byte(`apiVersion: snapshift.io/v1alpha1
kind: RuleSet
rules:
- name: db-host
  match: {resource: cm, names: [legacy-endpoints]}
  replace: [{path: /data/database.ini, from: "host = 192.168.10.22", to: "host = db-replica.new.example"}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := goldenInput(t, "../testdata/golden/user-rules/cookbook-configmap-old-ips")
	rep, _, _, err := runRules(t, in, "", rules.Options{UserRulesOptions: rules.UserRulesOptions{Rules: []string{p}}})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(changesOf(rep, "/registry/configmaps/shop/legacy-endpoints"), "\n")
	if want := "db-host: /data/database.ini (in the text): …host = 192.168.10.22… -> …host = db-replica.new.example…\ndb-host: (text replacements in this object): 1"; got != want {
		t.Errorf("changes:\n%s\nwant\n%s", got, want)
	}
}
