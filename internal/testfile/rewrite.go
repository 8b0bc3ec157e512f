package testfile

import (
	"context"
	"testing"

	"github.com/snapshift/snapshift/snapshot"
)

// RewriteLive writes dst as a snapshot holding src's other buckets and its
// live keys, each value replaced by what edit returns for it (the value
// itself to keep it), at its own revision: how a test makes a snapshot
// whose values are stored differently (encrypted, say) from one it has.
func RewriteLive(t testing.TB, src, dst string, edit func(key string, value []byte) ([]byte, error)) string {
	t.Helper()
	return RewriteLiveKV(t, src, dst, func(key string, value []byte) (string, []byte, error) {
		v, err := edit(key, value)
		return key, v, err
	})
}

// RewriteLiveKV is RewriteLive where edit may also move a value to another
// key (at the same revision).
func RewriteLiveKV(t testing.TB, src, dst string, edit func(key string, value []byte) (string, []byte, error)) string {
	t.Helper()
	s, ix := OpenIndexed(t, src)
	w, err := snapshot.Create(snapshot.WriterConfig{Path: dst})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.CopyBuckets(s); err != nil {
		t.Fatal(err)
	}
	err = s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		k, v, err := edit(string(e.KV.Key), e.KV.Value)
		if err != nil {
			return err
		}
		kv := e.KV
		kv.Key, kv.Value = []byte(k), v
		raw, err := kv.Marshal()
		if err != nil {
			return err
		}
		return w.Put(e.RevKey, raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// OpenIndexed opens a snapshot (its trailer checked) and indexes it; it is
// closed when the test ends.
func OpenIndexed(t testing.TB, path string) (*snapshot.Snapshot, *snapshot.Index) {
	t.Helper()
	s, err := snapshot.Open(path, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ix, err := s.Index(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, ix
}
