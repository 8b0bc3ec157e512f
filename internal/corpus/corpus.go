// Package corpus is the one loader of the golden corpora for the tests of
// every package that reads them (rules, rebuild, the CLI, ...):
// testdata/golden/<rule>/<case>/input.yaml and the input.yaml-style files
// beside them (testdata/restart/*.yaml). Each file is a list of etcd keys
// and the objects stored there as readable YAML; the loader parses it
// strictly (an unknown field of an entry or, for a built-in kind, of the
// object fails the test), encodes every object exactly as kube-apiserver
// stores it ("k8s\0" protobuf for built-in kinds, JSON for custom
// resources; a RangeAllocation's bitmap from its addresses, by
// internal/sample's independent encoder) and writes the keys, in order, to
// a real etcd on 127.0.0.1 whose snapshot the test then reads.
package corpus

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
)

// Entry is one key of an input.yaml: the etcd key and the object as
// readable YAML. Built-in kinds are stored as protobuf (as kube-apiserver
// stores them); encoding: json stores the object as a custom resource is.
type Entry struct {
	Key      string `json:"key"`
	Encoding string `json:"encoding,omitempty"`
	// Bitmap, for a RangeAllocation, lists the allocated addresses; Encode
	// fills data from it with internal/sample's independent encoder.
	Bitmap []string        `json:"bitmap,omitempty"`
	Object json.RawMessage `json:"object"`
}

// KV is a key and its stored value.
type KV struct {
	Key   string
	Value []byte
}

// Testdata is the module's testdata directory, found from the test's
// working directory (its package's directory) up to go.mod.
func Testdata(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("corpus: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Golden is the input.yaml of a golden case, "<rule>/<case>".
func Golden(t testing.TB, dir string) string {
	t.Helper()
	return filepath.Join(Testdata(t), "golden", dir, "input.yaml")
}

// Read parses an input.yaml file.
func Read(t testing.TB, path string) []Entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(t, path, b)
}

// Parse parses input.yaml content; name names it in errors.
func Parse(t testing.TB, name string, b []byte) []Entry {
	t.Helper()
	j, err := sigyaml.YAMLToJSON(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var entries []Entry
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(entries) == 0 {
		t.Fatalf("%s: no entries", name)
	}
	return entries
}

// Encode encodes one object exactly as the apiserver stores it: "k8s\0"
// protobuf of the typed object for built-in kinds (strictly parsed: a
// misspelt field fails the test), JSON for custom resources.
func Encode(t testing.TB, c *codec.Codec, e Entry) []byte {
	t.Helper()
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(e.Object, &tm); err != nil {
		t.Fatalf("%s: %v", e.Key, err)
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil || tm.Kind == "" {
		t.Fatalf("%s: object needs apiVersion and kind (got %q %q)", e.Key, tm.APIVersion, tm.Kind)
	}
	gvk := gv.WithKind(tm.Kind)
	switch e.Encoding {
	case "json":
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(e.Object, &u.Object); err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		b, err := c.EncodeJSON(u)
		if err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		return b
	case "", "protobuf":
		obj, err := clientgoscheme.Scheme.New(gvk)
		if err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		dec := json.NewDecoder(bytes.NewReader(e.Object))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("%s: %s: %v", e.Key, gvk, err)
		}
		if e.Bitmap != nil {
			ra, ok := obj.(*corev1.RangeAllocation)
			if !ok {
				t.Fatalf("%s: bitmap given for a %s", e.Key, gvk)
			}
			ra.Data = Bitmap(t, ra.Range, e.Bitmap)
		}
		b, err := c.EncodeProtobuf(obj, gvk)
		if err != nil {
			t.Fatalf("%s: %v", e.Key, err)
		}
		return b
	default:
		t.Fatalf("%s: unknown encoding %q", e.Key, e.Encoding)
		return nil
	}
}

// Bitmap is the service allocator's bitmap of range rng with ips
// allocated, by internal/sample's encoder (independent of the rules').
func Bitmap(t testing.TB, rng string, ips []string) []byte {
	t.Helper()
	var as []netip.Addr
	for _, s := range ips {
		as = append(as, netip.MustParseAddr(s))
	}
	b, err := sample.ServiceIPBitmap(netip.MustParsePrefix(rng), as)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// KVs are the entries encoded, in order.
func KVs(t testing.TB, c *codec.Codec, entries []Entry) []KV {
	t.Helper()
	out := make([]KV, 0, len(entries))
	for _, e := range entries {
		out = append(out, KV{Key: e.Key, Value: Encode(t, c, e)})
	}
	return out
}

// Write puts kvs, in order, into a new embedded etcd on 127.0.0.1 and
// saves a snapshot of it as etcdctl does. It returns the file's path.
func Write(t testing.TB, kvs []KV) string {
	t.Helper()
	srv := etcdtest.StartT(t)
	for _, kv := range kvs {
		if _, err := srv.Put(t.Context(), kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "input.db")
	if err := srv.SaveSnapshot(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Snapshot is the snapshot of the objects of input.yaml-style files, in
// order, written through a real etcd.
func Snapshot(t testing.TB, files ...string) string {
	t.Helper()
	c := codec.New()
	var kvs []KV
	for _, f := range files {
		kvs = append(kvs, KVs(t, c, Read(t, f))...)
	}
	return Write(t, kvs)
}
