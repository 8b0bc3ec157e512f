package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/snapshot"
)

// ListConfig configures List.
type ListConfig struct {
	Path          string
	Prefix        string
	SkipHashCheck bool
}

// ListEntry is one live key.
type ListEntry struct {
	Key            string `json:"key"`
	ModRevision    int64  `json:"modRevision"`
	CreateRevision int64  `json:"createRevision"`
	Version        int64  `json:"version"`
	Lease          int64  `json:"lease,omitempty"`
	Size           int    `json:"size"`
	Encoding       string `json:"encoding"`
	Type           string `json:"type,omitempty"` // apiVersion/kind when known
}

// List returns the live keys under Prefix, sorted by key, with their type.
func List(ctx context.Context, cfg ListConfig) ([]ListEntry, error) {
	snap, ix, err := openIndexed(ctx, cfg.Path, cfg.SkipHashCheck)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	c := codec.New()
	var out []ListEntry
	for _, kr := range ix.LiveKeysWithPrefix(cfg.Prefix) {
		kv, ok, err := snap.Get(kr.Rev)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		e := ListEntry{Key: kr.Key, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision,
			Version: kv.Version, Lease: kv.Lease, Size: len(kv.Value), Encoding: codec.Detect(kv.Value).String()}
		if gvk, _, err := c.PeekGVK(kv.Value); err == nil && !gvk.Empty() {
			e.Type = gvk.GroupVersion().String() + "/" + gvk.Kind
		}
		out = append(out, e)
	}
	return out, nil
}

// GetConfig configures Get.
type GetConfig struct {
	Path          string
	Key           string
	SkipHashCheck bool
	// ShowSecrets prints Secret data. Default false: values are redacted.
	ShowSecrets bool
	// Encryption decrypts a value encrypted at rest. Optional.
	Encryption *encryption.Config
}

// GetResult is one decoded key.
type GetResult struct {
	Entry ListEntry `json:"entry"`
	// Object is the decoded object as a JSON-compatible map (Secret data
	// redacted unless ShowSecrets), or nil when the value cannot be decoded.
	Object map[string]any `json:"object,omitempty"`
	// Note explains a value that is not shown (encrypted, unknown type).
	Note string `json:"note,omitempty"`
	// Text is the value when it is not a Kubernetes object but printable.
	Text string `json:"text,omitempty"`
}

// Get decodes the live value of one key.
func Get(ctx context.Context, cfg GetConfig) (*GetResult, error) {
	snap, ix, err := openIndexed(ctx, cfg.Path, cfg.SkipHashCheck)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	rev, ok := ix.Lookup([]byte(cfg.Key))
	if !ok {
		return nil, fmt.Errorf("key %q: %w", cfg.Key, ErrNotFound)
	}
	kv, _, err := snap.Get(rev)
	if err != nil {
		return nil, err
	}
	value := kv.Value
	enc := codec.Detect(value)
	if enc == codec.Encrypted && cfg.Encryption != nil {
		plain, _, err := cfg.Encryption.Decrypt(cfg.Key, value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Key, err)
		}
		value, enc = plain, codec.Detect(plain)
	}
	r := &GetResult{Entry: ListEntry{Key: cfg.Key, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision,
		Version: kv.Version, Lease: kv.Lease, Size: len(kv.Value), Encoding: enc.String()}}
	switch enc {
	case codec.Encrypted:
		info, _ := codec.ParseEncrypted(kv.Value)
		r.Note = fmt.Sprintf("the value is encrypted at rest (provider %s %s, key %q); it is not shown", info.Provider, info.Version, info.KeyName)
		return r, nil
	case codec.Unknown:
		if isPrintable(value) && !cfg.isSecretKey() {
			r.Text = string(value)
		} else {
			r.Note = fmt.Sprintf("the value is %d bytes that are not a Kubernetes object; it is not shown", len(value))
		}
		return r, nil
	}
	o, err := codec.New().Decode(value)
	if err != nil {
		r.Note = "the value does not decode"
		if !cfg.isSecretKey() { // the decoder's words may quote Secret data
			r.Note += ": " + err.Error()
		}
		return r, nil
	}
	r.Entry.Type = o.GVK.GroupVersion().String() + "/" + o.GVK.Kind
	m, err := toMap(o.Obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Key, err)
	}
	if !cfg.ShowSecrets {
		RedactSecret(m)
	}
	r.Object = m
	return r, nil
}

// isSecretKey reports whether the key may hold a Secret, under any
// --etcd-prefix: a "secrets" path segment anywhere is enough to hide it.
func (cfg GetConfig) isSecretKey() bool {
	return strings.Contains(cfg.Key, "/secrets/")
}

// ErrNotFound is returned by Get for a key that is not live.
var ErrNotFound = fmt.Errorf("not found in the snapshot (or deleted)")

func toMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// RedactSecret replaces the values of a Secret's data and stringData (and a
// kubectl last-applied-configuration copy of them) with a placeholder that
// says only how long they were. Objects of other kinds are left alone.
func RedactSecret(m map[string]any) {
	if m["kind"] != "Secret" {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		if d, ok := m[field].(map[string]any); ok {
			for k, v := range d {
				s, _ := v.(string)
				d[k] = fmt.Sprintf("<redacted, %d base64 characters>", len(s))
			}
		}
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
				ann["kubectl.kubernetes.io/last-applied-configuration"] = "<redacted: holds Secret data>"
			}
		}
		// managedFields carry field names only, never values: kept.
	}
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 9 || (c > 13 && c < 32) || c == 127 {
			return false
		}
	}
	return true
}

// openIndexed opens a snapshot (its trailer checked) and indexes it.
func openIndexed(ctx context.Context, path string, allowNoTrailer bool) (*snapshot.Snapshot, *snapshot.Index, error) {
	snap, err := snapshot.Open(path, snapshot.OpenOptions{AllowNoTrailer: allowNoTrailer})
	if err != nil {
		return nil, nil, err
	}
	ix, err := snap.Index(ctx, nil)
	if err != nil {
		snap.Close()
		return nil, nil, err
	}
	return snap, ix, nil
}
