package rules_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/corpus"
	"github.com/snapshift/snapshift/leftovers"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
)

// samplePath is the committed kubeadm-style sample snapshot
// (internal/sample written by a real etcd).
const samplePath = "../testdata/sample.db"

// snapshotFromYAML builds a snapshot from input.yaml-style text.
func snapshotFromYAML(t *testing.T, c *codec.Codec, text string) string {
	t.Helper()
	kvs := corpus.KVs(t, c, corpus.Parse(t, t.Name(), []byte(text)))
	return corpus.Write(t, kvs)
}

// liveKV is one live key as stored, copied out of the snapshot.
type liveKV struct {
	Rev snapshot.Revision
	KV  snapshot.KV
}

// liveState is a snapshot read back through snapshot.Open/Index/Live.
type liveState struct {
	Current int64
	Live    map[string]liveKV
}

func (s *liveState) keys() []string {
	out := make([]string, 0, len(s.Live))
	for k := range s.Live {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readState(t testing.TB, path string) *liveState {
	t.Helper()
	s, err := snapshot.Open(path, snapshot.OpenOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer s.Close()
	ix, err := s.Index(context.Background(), nil)
	if err != nil {
		t.Fatalf("index %s: %v", path, err)
	}
	st := &liveState{Current: ix.CurrentRevision, Live: map[string]liveKV{}}
	err = s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		kv := e.KV
		kv.Key = bytes.Clone(kv.Key)
		kv.Value = bytes.Clone(kv.Value)
		st.Live[string(kv.Key)] = liveKV{Rev: e.Rev, KV: kv}
		return nil
	})
	if err != nil {
		t.Fatalf("live %s: %v", path, err)
	}
	return st
}

// decodeValue decodes a stored value with the project's codec.
func decodeValue(t testing.TB, c *codec.Codec, key string, value []byte) *codec.Object {
	t.Helper()
	o, err := c.Decode(value)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return o
}

// objectTree turns a decoded object into a plain tree (maps, slices,
// strings, int64, float64, bool) for YAML rendering.
func objectTree(t testing.TB, o *codec.Object) any {
	t.Helper()
	var src any = o.Obj
	if u, ok := o.Obj.(*unstructured.Unstructured); ok {
		src = u.Object
	}
	j, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	return jsonTree(t, j)
}

func jsonTree(t testing.TB, j []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return normalizeNumbers(v)
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// marshalYAML renders v with two-space indentation.
func marshalYAML(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lineDiff returns a short line diff of want and got ("-" want, "+" got).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence, fine for golden files of a few hundred lines.
	n, m := len(w), len(g)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if w[i] == g[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && w[i] == g[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, fmt.Sprintf("+%4d: %s", j+1, g[j]))
			j++
		default:
			out = append(out, fmt.Sprintf("-%4d: %s", i+1, w[i]))
			i++
		}
	}
	if len(out) > 60 {
		out = append(out[:60], fmt.Sprintf("... and %d more differing lines", len(out)-60))
	}
	return strings.Join(out, "\n")
}

// runRules runs transform.Run with the rules opts select and returns the
// report, the plan and the leftover scan. SNAPSHIFT_WRITER=bbolt writes
// the output with the reference writer (bbolt's own Put) instead of the
// bulk loader: `make test` runs TestGolden with both, as bbolt runs its
// suite on both freelists.
func runRules(t testing.TB, in, out string, opts rules.Options) (*transform.Report, *rules.Plan, *leftovers.LeftoverScan, error) {
	t.Helper()
	rs, plan, err := rules.Build(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	scan := leftovers.NewLeftoverScan(plan)
	rep, err := transform.Run(context.Background(), transform.Config{
		Input: in, Output: out, DryRun: out == "", Rules: rs, Observers: []transform.Observer{scan},
		Writer: snapshot.WriterKind(os.Getenv("SNAPSHIFT_WRITER")),
	})
	return rep, plan, scan, err
}

// ruleCounts is a report's per-rule counts by name.
func ruleCounts(rep *transform.Report) map[string]transform.RuleReport {
	out := map[string]transform.RuleReport{}
	for _, r := range rep.Rules {
		out[r.Name] = *r
	}
	return out
}

// checkRevisionMetadata asserts the engine's revision promises between an
// input and an output state (DESIGN.md decisions 2 and 3): unchanged keys keep their
// stored KeyValue and revision; replaced keys are written at input current
// revision + 1 with Version+1 and the same CreateRevision and Lease; created
// keys start a new generation there.
func checkRevisionMetadata(t testing.TB, in, out *liveState, rep *transform.Report) {
	t.Helper()
	next := in.Current + 1
	actions := map[string]string{}
	for o := range rep.Objects.All() {
		actions[o.Key] = o.Action
	}
	for _, k := range out.keys() {
		o := out.Live[k]
		i, existed := in.Live[k]
		switch act := actions[k]; {
		case act == "" || act == "keep":
			if !existed {
				t.Errorf("%s: in the output, not in the input, and not reported as created", k)
				continue
			}
			if o.Rev != i.Rev || !bytes.Equal(o.KV.Value, i.KV.Value) || o.KV.ModRevision != i.KV.ModRevision ||
				o.KV.CreateRevision != i.KV.CreateRevision || o.KV.Version != i.KV.Version || o.KV.Lease != i.KV.Lease {
				t.Errorf("%s: unchanged key differs from the input: revision %v -> %v, meta %+v -> %+v, value equal %v",
					k, i.Rev, o.Rev, metaOf(i.KV), metaOf(o.KV), bytes.Equal(o.KV.Value, i.KV.Value))
			}
		case act == "replace":
			if !existed {
				t.Errorf("%s: reported replaced but not in the input", k)
				continue
			}
			if o.Rev.Main != next || o.KV.ModRevision != next || o.KV.Version != i.KV.Version+1 ||
				o.KV.CreateRevision != i.KV.CreateRevision || o.KV.Lease != i.KV.Lease {
				t.Errorf("%s: replaced key has revision %v meta %+v; want main %d, ModRevision %d, Version %d, CreateRevision %d, Lease %d",
					k, o.Rev, metaOf(o.KV), next, next, i.KV.Version+1, i.KV.CreateRevision, i.KV.Lease)
			}
			if bytes.Equal(o.KV.Value, i.KV.Value) {
				t.Errorf("%s: reported replaced but the value is byte-identical", k)
			}
		case act == "create":
			if o.Rev.Main != next || o.KV.ModRevision != next || o.KV.CreateRevision != next || o.KV.Version != 1 || o.KV.Lease != 0 {
				t.Errorf("%s: created key has revision %v meta %+v; want a new generation at %d (CreateRevision = ModRevision, Version 1, no lease)",
					k, o.Rev, metaOf(o.KV), next)
			}
		case act == "delete":
			t.Errorf("%s: reported deleted but still live in the output", k)
		}
	}
	for _, k := range in.keys() {
		if _, ok := out.Live[k]; !ok && actions[k] != "delete" {
			t.Errorf("%s: live in the input, absent from the output, and not reported deleted", k)
		}
	}
}

func metaOf(kv snapshot.KV) string {
	return fmt.Sprintf("{create %d mod %d version %d lease %d}", kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease)
}

// ipToken matches IPv4 and IPv6 addresses and CIDRs in text.
var ipToken = regexp.MustCompile(`[0-9A-Fa-f:.]*[0-9A-Fa-f][0-9A-Fa-f:.]*(/[0-9]{1,3})?`)

// substituteTokens replaces every whole IP or CIDR token of s found in m.
func substituteTokens(s string, m map[string]string) string {
	return ipToken.ReplaceAllStringFunc(s, func(tok string) string {
		if n, ok := m[tok]; ok {
			return n
		}
		// "ipv4-cidrs:10.55.0.0/16" (Cilium's auto-create-cilium-pod-ip-pools):
		// the key's colon runs into the token.
		if n, ok := m[strings.TrimPrefix(tok, ":")]; ok && strings.HasPrefix(tok, ":") {
			return ":" + n
		}
		return tok
	})
}

// reverseMapping maps every new CIDR and Service address of a plan back to
// the old one (the DNS bridge's address back to the kept DNS address).
func reverseMapping(plan *rules.Plan) map[string]string {
	m := map[string]string{}
	if sp := plan.Service; sp != nil {
		for i := range sp.Old {
			m[sp.New[i].String()] = sp.Old[i].String()
		}
		for o, n := range sp.IPs {
			m[n.String()] = o.String()
		}
		if sp.Bridge.IsValid() {
			for _, mv := range sp.Services {
				if mv.Kept && len(mv.Old) > 0 && mv.Old[0] == sp.DNS.String() {
					m[sp.Bridge.String()] = mv.Old[0]
				}
			}
		}
	}
	if pp := plan.Pod; pp != nil {
		for i := range pp.Old {
			m[pp.New[i].String()] = pp.Old[i].String()
		}
	}
	return m
}

// oldRanges are the remapped old ranges of a plan.
func oldRanges(plan *rules.Plan) []netip.Prefix {
	var out []netip.Prefix
	if sp := plan.Service; sp != nil {
		for i := range sp.Old {
			if sp.Old[i] != sp.New[i] {
				out = append(out, sp.Old[i])
			}
		}
	}
	if pp := plan.Pod; pp != nil {
		for i := range pp.Old {
			if pp.Old[i] != pp.New[i] {
				out = append(out, pp.Old[i])
			}
		}
	}
	return out
}

// bitmapAddrs decodes a RangeAllocation's bitmap to address strings.
func bitmapAddrs(t testing.TB, ra *corev1.RangeAllocation) []string {
	t.Helper()
	p, err := netip.ParsePrefix(ra.Range)
	if err != nil {
		t.Fatalf("RangeAllocation range %q: %v", ra.Range, err)
	}
	as, err := cidr.BitmapAddrs(p, ra.Data)
	if err != nil {
		t.Fatalf("RangeAllocation %s bitmap: %v", ra.Range, err)
	}
	out := []string{}
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

// decodeTyped is decodeValue for a kind the caller knows.
func decodeTyped[T runtime.Object](t testing.TB, c *codec.Codec, key string, value []byte) T {
	t.Helper()
	o := decodeValue(t, c, key, value)
	v, ok := o.Obj.(T)
	if !ok {
		var zero T
		t.Fatalf("%s: stored %s (%T), want %T", key, o.GVK, o.Obj, zero)
	}
	return v
}
