package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/rules"
)

// TestPlanEncrypted: plan takes --encryption-config as transform does. The
// sample's ConfigMaps stored with secretbox: the pod-cidr migration must
// read and plan the kube-proxy and kubeadm ConfigMaps, and without the
// configuration it is refused naming the flag.
func TestPlanEncrypted(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "enc.yaml")
	conf := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [configmaps]\n  providers:\n" +
		"  - secretbox:\n      keys:\n      - {name: cm-key, secret: Y29uZmlnbWFwcy1zZWNyZXRib3gta2V5LTMyYnl0ZXM=}\n  - identity: {}\n"
	if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	in := testfile.RewriteLive(t, samplePath, filepath.Join(dir, "in.db"), func(key string, v []byte) ([]byte, error) {
		if !strings.HasPrefix(key, "/registry/configmaps/") {
			return v, nil
		}
		return enc.Encrypt(key, v, encryption.Info{Provider: "secretbox", KeyName: "cm-key"})
	})
	r := run(t, "plan", in, "--pod-network-cidr", "10.55.0.0/16", "--encryption-config", cfgPath, "--quiet", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("plan --encryption-config: exit %d: %s", r.code, r.stderr)
	}
	var res struct {
		Objects []struct {
			Key   string   `json:"key"`
			Rules []string `json:"rules"`
		} `json:"objects"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	planned := map[string]bool{}
	for _, o := range res.Objects {
		planned[o.Key] = true
	}
	for _, k := range []string{"/registry/configmaps/kube-system/kube-proxy", "/registry/configmaps/kube-system/kubeadm-config"} {
		if !planned[k] {
			t.Errorf("plan with --encryption-config does not change the encrypted %s (planned: %v)", k, res.Objects)
		}
	}
	r = run(t, "plan", in, "--pod-network-cidr", "10.55.0.0/16", "--quiet")
	if r.code != ExitRefused || !strings.Contains(r.stderr, "--encryption-config") {
		t.Errorf("plan without the configuration: exit %d, stderr %q; want %d naming --encryption-config", r.code, r.stderr, ExitRefused)
	}
	// inspect without the key still summarises, and says what it could not
	// read and why; with it, it reads everything.
	r = run(t, "inspect", in, "--quiet")
	if r.code != ExitOK || !strings.Contains(r.stdout, "not read") || !strings.Contains(r.stdout, "kube-system/kubeadm-config is encrypted (secretbox key \"cm-key\")") ||
		!strings.Contains(r.stdout, "secretbox") || !strings.Contains(r.stdout, "192.168.0.0/16") {
		t.Errorf("inspect without the configuration: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if !strings.Contains(l, "not read") {
			continue
		}
		if n := goIdentifierIn(optionStructNames(t), l); n != "" || !strings.HasSuffix(l, "with --encryption-config") {
			t.Errorf("inspect's \"not read\" line should name --encryption-config, not the Go field %q: %s", n, l)
		}
	}
	if r = run(t, "inspect", in, "--encryption-config", cfgPath, "--quiet"); r.code != ExitOK || strings.Contains(r.stdout, "not read") ||
		!strings.Contains(r.stdout, "10.244.0.0/16") {
		t.Errorf("inspect with the configuration: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestGetPrintsTheObject: -o json and -o yaml print the object itself, as
// kubectl does, so it pipes into jq or kubectl apply; --show-entry wraps it
// with the etcd entry.
func TestGetPrintsTheObject(t *testing.T) {
	in := copySample(t)
	key := "/registry/services/specs/kube-system/kube-dns"
	for _, format := range []string{"json", "yaml"} {
		r := run(t, "get", in, key, "-o", format)
		if r.code != ExitOK {
			t.Fatalf("get -o %s: exit %d: %s", format, r.code, r.stderr)
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(r.stdout), &obj); err != nil {
			t.Fatalf("get -o %s: %v", format, err)
		}
		meta, _ := obj["metadata"].(map[string]any)
		if obj["kind"] != "Service" || obj["apiVersion"] != "v1" || meta["name"] != "kube-dns" || obj["entry"] != nil {
			t.Errorf("get -o %s printed %v, want the Service object itself", format, obj)
		}
		r = run(t, "get", in, key, "-o", format, "--show-entry")
		var wrapped struct {
			Entry  map[string]any `json:"entry"`
			Object map[string]any `json:"object"`
		}
		if err := yaml.Unmarshal([]byte(r.stdout), &wrapped); err != nil || wrapped.Entry["key"] != key || wrapped.Object["kind"] != "Service" {
			t.Errorf("get -o %s --show-entry printed %q (%v), want {entry, object}", format, r.stdout, err)
		}
	}
}

// TestGetHidesManagedFields: like kubectl get -o yaml|json, get leaves out metadata.managedFields
// (the sample's Node cp1 has them), with or without --show-entry; --show-managed-fields prints them.
func TestGetHidesManagedFields(t *testing.T) {
	in := copySample(t)
	managed := func(out string) bool {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatalf("%v in %q", err, out)
		}
		if o, ok := obj["object"].(map[string]any); ok {
			obj = o
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta["name"] != "cp1" {
			t.Fatalf("not the Node cp1: %q", out)
		}
		_, ok := meta["managedFields"]
		return ok
	}
	for _, format := range []string{"json", "yaml"} {
		for _, extra := range [][]string{nil, {"--show-entry"}} {
			args := append([]string{"get", in, "no/cp1", "-o", format}, extra...)
			if r := run(t, args...); r.code != ExitOK || managed(r.stdout) || strings.Contains(r.stdout, "f:podCIDR") {
				t.Errorf("%s: exit %d, metadata.managedFields shown:\n%s", strings.Join(args[2:], " "), r.code, r.stdout)
			}
			args = append(args, "--show-managed-fields")
			if r := run(t, args...); r.code != ExitOK || !managed(r.stdout) {
				t.Errorf("%s: exit %d, no metadata.managedFields:\n%s%s", strings.Join(args[2:], " "), r.code, r.stdout, r.stderr)
			}
		}
	}
}

// TestRulesCommand: `snapshift rules` lists every registered rule with its
// flags, and the flags of plan and transform are exactly the registered
// CLI options (so a new rule's flags cannot be forgotten).
func TestRulesCommand(t *testing.T) {
	r := run(t, "rules", "-o", "json")
	if r.code != ExitOK {
		t.Fatalf("rules: exit %d: %s", r.code, r.stderr)
	}
	var list ruleList
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	listed := list.Items
	if got, want := len(listed), len(rules.Names()); got != want {
		t.Fatalf("rules lists %d rules, want %d", got, want)
	}
	var scratch rules.Options
	want := map[string]bool{}
	for _, o := range rules.AllOptions(&scratch) {
		if o.CLI {
			want[o.Name] = true
		}
	}
	app := New(nil, nil, nil)
	for _, cmd := range []string{"plan", "transform"} {
		have := map[string]bool{}
		for _, f := range app.Command(cmd).Flags {
			have[f.Names()[0]] = true
		}
		for name := range want {
			if !have[name] {
				t.Errorf("%s has no --%s flag, which a rule registers", cmd, name)
			}
		}
	}
	text := run(t, "rules")
	for _, n := range rules.Names() {
		if !strings.Contains(text.stdout, n+": ") {
			t.Errorf("rules text output does not list %s:\n%s", n, text.stdout)
		}
	}
	// rules NAME...: those rules only, in the registry's order.
	names := rules.Names()
	one := run(t, "rules", names[len(names)-1], names[0], "-o", "json")
	var some ruleList
	if err := json.Unmarshal([]byte(one.stdout), &some); err != nil || one.code != ExitOK {
		t.Fatalf("rules %s %s: exit %d, %v: %s", names[len(names)-1], names[0], one.code, err, one.stderr)
	}
	if len(some.Items) != 2 || some.Items[0].Name != names[0] || some.Items[1].Name != names[len(names)-1] {
		t.Errorf("rules %s %s listed %+v, want those two in the registry's order", names[len(names)-1], names[0], some.Items)
	}
}

// TestCustomPrefixCommands: on a cluster kept under --etcd-prefix
// /kubernetes.io, inspect, plan, transform, verify and get all work on the
// detected prefix, say which it is, and keep Secret data hidden.
func TestCustomPrefixCommands(t *testing.T) {
	dir := t.TempDir()
	in := testfile.RewriteLiveKV(t, samplePath, filepath.Join(dir, "prefixed.db"), func(k string, v []byte) (string, []byte, error) {
		return strings.Replace(k, "/registry/", "/kubernetes.io/", 1), v, nil
	})
	r := run(t, "inspect", in, "-o", "json", "-q")
	var ins struct {
		EtcdPrefix string `json:"etcdPrefix"`
		Resources  []struct {
			Name string `json:"name"`
		} `json:"resources"`
		Networks struct {
			ServiceCIDRs []string `json:"serviceCIDRs"`
		} `json:"networks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ins); r.code != 0 || err != nil {
		t.Fatalf("inspect: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	if ins.EtcdPrefix != "/kubernetes.io/" || len(ins.Resources) == 0 || strings.HasPrefix(ins.Resources[0].Name, "(outside") {
		t.Errorf("inspect of a /kubernetes.io/ snapshot: prefix %q, resources %v", ins.EtcdPrefix, ins.Resources)
	}
	if r := run(t, "plan", in, "--service-cidr", "172.24.0.0/16", "-q"); r.code != 0 || !strings.Contains(r.stdout, "under /kubernetes.io/") {
		t.Errorf("plan: exit %d, want the prefix named\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(dir, "out.db")
	if r := run(t, "transform", in, "--out", out, "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "-q"); r.code != 0 {
		t.Fatalf("transform: exit %d\n%s", r.code, r.stderr)
	}
	if r := run(t, "verify", out, "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "-q"); r.code != 0 {
		t.Errorf("verify of the output: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	live, _ := liveState(t, out)
	for k := range live {
		if !strings.HasPrefix(k, "/kubernetes.io/") && k != "compact_rev_key" { // the apiserver's compactor key has no prefix
			t.Errorf("output key %s is outside the cluster's prefix", k)
		}
	}
	for _, k := range sortedKeys(live) {
		if strings.HasPrefix(k, "/kubernetes.io/secrets/") {
			if r := run(t, "get", out, k); r.code != 0 || !strings.Contains(r.stdout, "redacted") {
				t.Errorf("get %s: exit %d, want the Secret redacted\n%s", k, r.code, r.stderr)
			}
			break
		}
	}
}

// TestRestoreCopyRouteRemoved: --route copy names its removal, writes
// nothing, and exits as a usage error.
func TestRestoreCopyRouteRemoved(t *testing.T) {
	work := t.TempDir()
	r := run(t, append(fusedRestoreInto(samplePath, work), "--route", "copy", "--quiet")...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "removed") || !strings.Contains(r.stderr, "--route") {
		t.Errorf("restore --route copy: exit %d, stderr %q; want %d and a line saying --route copy was removed", r.code, r.stderr, ExitUsage)
	}
	if ents, _ := os.ReadDir(work); len(ents) > 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// ls, get and inspect speak kubectl's resource names: short names and
// plural.group as input, api-resources names in inspect's summary; a typo
// is a usage error with the nearest name.
func TestResourceNamesOnTheCommandLine(t *testing.T) {
	in := copySample(t)
	byKey := run(t, "get", in, "/registry/services/specs/kube-system/kube-dns", "-o", "json")
	if r := run(t, "get", in, "svc/kube-system/kube-dns", "-o", "json"); r.code != ExitOK || r.stdout != byKey.stdout {
		t.Errorf("get svc/kube-system/kube-dns: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	r := run(t, "ls", in, "deploy", "-o", "json")
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &list); r.code != ExitOK || err != nil || len(list.Items) == 0 {
		t.Fatalf("ls deploy: exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	for _, e := range list.Items {
		if k, _ := e["key"].(string); !strings.HasPrefix(k, "/registry/deployments/") {
			t.Errorf("ls deploy listed %s", k)
		}
	}
	if r := run(t, "ls", in, "deploymnets"); r.code != ExitUsage || !strings.Contains(r.stderr, `did you mean "deployments.apps"?`) {
		t.Errorf("ls deploymnets: exit %d, %s", r.code, r.stderr)
	}
	if r := run(t, "inspect", in, "--quiet"); r.code != ExitOK || !strings.Contains(r.stdout, "deployments.apps") || strings.Contains(r.stdout, "crd.projectcalico.org/ippools") {
		t.Errorf("inspect: exit %d, want api-resources names:\n%s", r.code, r.stdout)
	}
}
