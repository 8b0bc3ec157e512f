package rules_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*/*/expected.yaml from the current output")

const goldenDir = "../testdata/golden"

// caseFlags is a golden case's case.yaml: the CLI flags of the run.
type caseFlags struct {
	Description       string   `json:"description"`
	ServiceCIDR       string   `json:"service-cidr,omitempty"`
	OldServiceCIDR    string   `json:"old-service-cidr,omitempty"`
	Repack            bool     `json:"repack,omitempty"`
	Keep              []string `json:"keep,omitempty"`
	DNSBridge         bool     `json:"dns-bridge,omitempty"`
	DNSService        string   `json:"dns-service,omitempty"`
	PodNetworkCIDR    string   `json:"pod-network-cidr,omitempty"`
	OldPodNetworkCIDR string   `json:"old-pod-network-cidr,omitempty"`
	SATokens          string   `json:"sa-tokens,omitempty"`
	ClusterCA         string   `json:"cluster-ca,omitempty"`
	ClusterInfoServer string   `json:"cluster-info-server,omitempty"`
	BootstrapToken    string   `json:"bootstrap-token,omitempty"`
}

func (f caseFlags) options() rules.Options {
	return rules.Options{
		ServiceCIDR: f.ServiceCIDR, OldServiceCIDR: f.OldServiceCIDR, Repack: f.Repack,
		KeepServiceIPs: f.Keep, DNSBridge: f.DNSBridge, DNSService: f.DNSService,
		PodNetworkCIDR: f.PodNetworkCIDR, OldPodNetworkCIDR: f.OldPodNetworkCIDR,
		SATokens: f.SATokens, Now: nowFunc,
		ClusterCA: []byte(f.ClusterCA), ClusterInfoServer: f.ClusterInfoServer,
		BootstrapToken: bootstrapToken(f.BootstrapToken),
	}
}

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
	var flags caseFlags
	if err := sigyaml.UnmarshalStrict(b, &flags); err != nil {
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
		got.Error = err.Error()
		if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
			t.Errorf("a refused run left %s behind (stat: %v)", out, statErr)
		}
	} else {
		outState := readState(t, out)
		checkRevisionMetadata(t, inState, outState, rep)
		checkConfigMapsEditedInPlace(t, c, inState, outState, plan)
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
		if ra, ok := dec.Obj.(*corev1.RangeAllocation); ok && (k == state.KeyServiceIPRange || k == state.KeySecondaryIPRange) {
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

// checkConfigMapsEditedInPlace asserts DESIGN 11 on every ConfigMap the
// cluster-config rule claims: with the new CIDRs and addresses substituted
// back by the old ones, each data document is byte-identical to the input
// (only the CIDR scalars moved), and no old CIDR is left in it.
func checkConfigMapsEditedInPlace(t *testing.T, c *codec.Codec, in, out *liveState, plan *rules.Plan) {
	t.Helper()
	back := reverseMapping(plan)
	// The cluster-config rule's prefixes do not depend on the options.
	var cc transform.Rule
	rs, _, err := rules.Build(rules.Options{ServiceCIDR: "203.0.113.0/24"})
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

// isNetworkConfigMap reports the ConfigMaps that must name no old range
// after the transform (kubeadm, kube-proxy, flannel).
func isNetworkConfigMap(k string) bool {
	if k == state.KeyKubeadmConfig || k == state.KeyKubeProxy {
		return true
	}
	for _, f := range state.FlannelConfigKeys {
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
