package rules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
	"github.com/snapshift/snapshift/wellknown"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*/*/expected.yaml from the current output")

const goldenDir = "../testdata/golden"

// caseFlags is a golden case's case.yaml: a description and the run's
// options, by their registered names (the CLI's flag names), so a new
// rule's options work in golden cases without touching this file.
type caseFlags struct {
	Description string
	opts        rules.Options
}

func parseCaseFlags(b []byte) (caseFlags, error) {
	var raw map[string]any
	if err := sigyaml.UnmarshalStrict(b, &raw); err != nil {
		return caseFlags{}, err
	}
	f := caseFlags{opts: rules.Options{}}
	byName := map[string]rules.Option{}
	for _, o := range rules.AllOptions(&f.opts) {
		byName[o.Name] = o
	}
	for k, v := range raw {
		if k == "description" {
			f.Description, _ = v.(string)
			continue
		}
		o, ok := byName[k]
		if !ok {
			return caseFlags{}, fmt.Errorf("unknown option %q (not a registered rule option)", k)
		}
		vals, isList := v.([]any)
		if !isList {
			vals = []any{v}
		}
		for _, x := range vals {
			if err := o.Set(fmt.Sprint(x)); err != nil {
				return caseFlags{}, err
			}
		}
	}
	return f, nil
}

func (f caseFlags) options() rules.Options { return f.opts }

// goldenResult is what expected.yaml holds.
type goldenResult struct {
	Description string `yaml:"description"`
	// Error is the refusal, for a case that must not write anything.
	Error   string         `yaml:"error,omitempty"`
	Rules   []goldenRule   `yaml:"rules,omitempty"`
	Deleted []string       `yaml:"deleted,omitempty"`
	Objects []goldenObject `yaml:"objects,omitempty"`
}

type goldenRule struct {
	Name    string   `yaml:"name"`
	Seen    int      `yaml:"seen"`
	Changed int      `yaml:"changed"`
	Deleted int      `yaml:"deleted"`
	Created int      `yaml:"created"`
	Notes   []string `yaml:"notes,omitempty"`
}

type goldenObject struct {
	Key string `yaml:"key"`
	// Change is unchanged, replaced or created, judged from the stored bytes.
	Change string `yaml:"change"`
	// Bitmap lists the addresses a RangeAllocation's data encodes.
	Bitmap []string `yaml:"bitmap,omitempty"`
	Object any      `yaml:"object"`
}

// TestGolden runs every case under testdata/golden/<rule>/<case>/: the
// objects of input.yaml are encoded as kube-apiserver stores them and
// written to a real etcd, whose snapshot goes through transform.Run with
// the rules and flags of case.yaml; the output, read back with
// snapshot.Open/Index/Live and the codec, must render exactly as
// expected.yaml. Run `go test ./rules -run TestGolden -update` to rewrite
// the expected files after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "*", "*", "case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 20 {
		t.Fatalf("found %d golden cases under %s, want at least 20", len(dirs), goldenDir)
	}
	seenRule := map[string]bool{}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		rule := filepath.Base(filepath.Dir(dir))
		seenRule[rule] = true
		t.Run(rule+"/"+filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			runGoldenCase(t, dir)
		})
	}
	for _, n := range rules.Names() {
		if !seenRule[n] {
			t.Errorf("rule %s has no golden case under %s/%s", n, goldenDir, n)
		}
	}
}

func runGoldenCase(t *testing.T, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flags, err := parseCaseFlags(b)
	if err != nil {
		t.Fatalf("case.yaml: %v", err)
	}
	c := codec.New()
	var kvs []kvPair
	for _, e := range readInputYAML(t, filepath.Join(dir, "input.yaml")) {
		kvs = append(kvs, kvPair{Key: e.Key, Value: encodeEntry(t, c, e)})
	}
	in := buildSnapshot(t, kvs)
	inState := readState(t, in)
	out := filepath.Join(t.TempDir(), "out.db")

	got := goldenResult{Description: flags.Description}
	rep, plan, _, err := runRules(t, in, out, flags.options())
	if err != nil {
		got.Error, _ = option.Render(err, rules.FlagName) // options named as the CLI names them
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Errorf("a refused run left %s behind (stat: %v)", out, statErr)
		}
	} else {
		outState := readState(t, out)
		checkRevisionMetadata(t, inState, outState, rep)
		checkConfigMapsEditedInPlace(t, c, inState, outState, plan, userAddressMapBack(t, flags.options().Rules))
		checkOutputVerifies(t, out, flags.options())
		got.Rules, got.Deleted, got.Objects = renderOutput(t, c, inState, outState, rep)
	}
	gotYAML := append([]byte("# Generated by `go test ./rules -run TestGolden -update`; review every change.\n"), marshalYAML(t, got)...)

	expPath := filepath.Join(dir, "expected.yaml")
	if *update {
		if err := os.WriteFile(expPath, gotYAML, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(expPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, gotYAML) {
		t.Errorf("output differs from %s (-want +got):\n%s", expPath, lineDiff(string(want), string(gotYAML)))
	}
}

func renderOutput(t *testing.T, c *codec.Codec, in, out *liveState, rep *transform.Report) ([]goldenRule, []string, []goldenObject) {
	var rs []goldenRule
	for _, r := range rep.Rules {
		rs = append(rs, goldenRule{Name: r.Name, Seen: r.Seen, Changed: r.Changed, Deleted: r.Deleted, Created: r.Created, Notes: r.Notes})
	}
	var deleted []string
	for _, k := range in.keys() {
		if _, ok := out.Live[k]; !ok {
			deleted = append(deleted, k)
		}
	}
	var objs []goldenObject
	for _, k := range out.keys() {
		o := out.Live[k]
		change := "created"
		if i, ok := in.Live[k]; ok {
			change = "replaced"
			if bytes.Equal(i.KV.Value, o.KV.Value) {
				change = "unchanged"
			}
		}
		dec := decodeValue(t, c, k, o.KV.Value)
		g := goldenObject{Key: k, Change: change, Object: objectTree(t, dec)}
		if ra, ok := dec.Obj.(*corev1.RangeAllocation); ok && (k == wellknown.KeyServiceIPRange || k == wellknown.KeySecondaryIPRange) {
			// Show the bitmap as addresses; the bytes must be exactly what
			// the independent encoder of internal/sample makes of them.
			g.Bitmap = bitmapAddrs(t, ra)
			if want := sampleBitmap(t, ra.Range, g.Bitmap); !bytes.Equal(want, ra.Data) {
				t.Errorf("%s: bitmap bytes %x, want %x (big-endian, minimal) for %v", k, ra.Data, want, g.Bitmap)
			}
			delete(g.Object.(map[string]any), "data")
		}
		objs = append(objs, g)
	}
	return rs, deleted, objs
}

// checkConfigMapsEditedInPlace asserts docs/ARCHITECTURE.md §11 on every ConfigMap the
// cluster-config rule claims: with the new CIDRs and addresses substituted
// back by the old ones, each data document is byte-identical to the input
// (only the CIDR scalars moved), and no old CIDR is left in it.
func checkConfigMapsEditedInPlace(t *testing.T, c *codec.Codec, in, out *liveState, plan *rules.Plan, userBack *ruleset.Mapping) {
	t.Helper()
	back := reverseMapping(plan)
	// The cluster-config rule's prefixes do not depend on the options.
	var cc transform.Rule
	rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "203.0.113.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Name() == rules.NameClusterConfig {
			cc = r
		}
	}
	for _, k := range in.keys() {
		if !strings.HasPrefix(k, "/registry/configmaps/") || k == "/registry/configmaps/kube-public/cluster-info" {
			continue // cluster-info is rewritten whole by its own rule (its golden shows it)
		}
		o, ok := out.Live[k]
		if !ok {
			t.Errorf("%s: ConfigMap missing from the output", k)
			continue
		}
		inCM := decodeTyped[*corev1.ConfigMap](t, c, k, in.Live[k].KV.Value)
		outCM := decodeTyped[*corev1.ConfigMap](t, c, k, o.KV.Value)
		if len(inCM.Data) != len(outCM.Data) {
			t.Errorf("%s: data keys %v -> %v", k, keysOf(inCM.Data), keysOf(outCM.Data))
		}
		for dk, doc := range inCM.Data {
			got := substituteTokens(outCM.Data[dk], back)
			if g, _, err := userBack.MapText(got); err == nil {
				got = g // the rules files' addressMap, backwards
			}
			if got != doc {
				t.Errorf("%s data[%s]: beyond the CIDR scalars the document changed:\n%s", k, dk, lineDiff(doc, got))
			}
			if !underAny(k, cc.Prefixes()) || !isNetworkConfigMap(k) {
				continue
			}
			for _, p := range oldRanges(plan) {
				if strings.Contains(outCM.Data[dk], p.String()) {
					t.Errorf("%s data[%s]: the old range %s is still there:\n%s", k, dk, p, outCM.Data[dk])
				}
			}
		}
		// kubectl's last-applied copy of the data moves with the data:
		// mapped back, it must be what it was.
		if la, ok := outCM.Annotations[rules.LastApplied]; ok {
			outCM.Annotations[rules.LastApplied] = substituteTokens(la, back)
		}
		for _, f := range []func(*corev1.ConfigMap) any{
			func(cm *corev1.ConfigMap) any { return cm.ObjectMeta },
			func(cm *corev1.ConfigMap) any { return cm.BinaryData },
			func(cm *corev1.ConfigMap) any { return cm.Immutable },
		} {
			a, _ := json.Marshal(f(inCM))
			b, _ := json.Marshal(f(outCM))
			if !bytes.Equal(a, b) {
				t.Errorf("%s: metadata or binaryData changed:\n%s\n%s", k, a, b)
			}
		}
	}
}

// userAddressMapBack maps the rules files' addressMap new ranges back to
// the old ones.
func userAddressMapBack(t *testing.T, files []string) *ruleset.Mapping {
	t.Helper()
	m := &ruleset.Mapping{}
	if len(files) == 0 {
		return m
	}
	fs, err := ruleset.Load(files)
	if err != nil {
		return m // the case's expected error says why
	}
	for _, r := range ruleset.Ranges(fs) {
		m.Ranges = append(m.Ranges, ruleset.Range{Old: r.New, New: r.Old, Source: "back: " + r.Source})
	}
	return m
}

// isNetworkConfigMap reports the ConfigMaps that must name no old range
// after the transform (kubeadm, kube-proxy, flannel).
func isNetworkConfigMap(k string) bool {
	if k == wellknown.KeyKubeadmConfig || k == wellknown.KeyKubeProxy {
		return true
	}
	for _, f := range wellknown.FlannelConfigKeys {
		if k == f {
			return true
		}
	}
	return false
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func bootstrapToken(s string) *rules.BootstrapToken {
	id, secret, ok := strings.Cut(s, ".")
	if !ok {
		return nil
	}
	return &rules.BootstrapToken{ID: id, Secret: secret}
}

// checkOutputVerifies runs verify's network checks on a case's output with
// the case's own options, as transform checks its output before publishing
// it: whatever the rules write, the check must accept (a one-family move of
// a dual-stack cluster once failed here, exit 5, while plan showed the
// right changes).
func checkOutputVerifies(t *testing.T, out string, o rules.Options) {
	t.Helper()
	if o.ServiceCIDR == "" && o.PodNetworkCIDR == "" {
		return
	}
	if o.OldServiceCIDR != "" || o.OldPodNetworkCIDR != "" {
		// An override says the records are stale; the rules leave a stale
		// record as it is, and verify's configuration check names it.
		return
	}
	r, err := verify.Run(context.Background(), verify.Config{Path: out, ServiceCIDR: o.ServiceCIDR, PodNetworkCIDR: o.PodNetworkCIDR,
		KeepServiceIPs: o.KeepServiceIPs, DNSService: o.DNSService, ServiceCIDRMap: o.ServiceCIDRMap})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	for _, c := range r.Checks {
		if !c.OK {
			t.Errorf("verify of the output: %s: %v", c.Name, c.Problems)
		}
	}
}
