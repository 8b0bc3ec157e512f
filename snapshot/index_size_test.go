package snapshot_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/snapshot"
)

// generated writes a generated snapshot of keys keys (with history and
// tombstones, as internal/gen makes them) and opens it.
func generated(tb testing.TB, keys int) *snapshot.Snapshot {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "gen.db")
	if _, err := gen.Generate(context.Background(), gen.Config{Path: path, Keys: keys, Seed: 3}); err != nil {
		tb.Fatal(err)
	}
	s, err := snapshot.Open(path, snapshot.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// heapOf is the heap the index built by build keeps, in bytes.
func heapOf(tb testing.TB, build func() *snapshot.Index) (*snapshot.Index, uint64) {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC() // a second cycle frees what the first one's finalizers let go
	runtime.ReadMemStats(&before)
	ix := build()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		tb.Fatalf("the heap shrank while the index was built (%d -> %d bytes): the measurement is void", before.HeapAlloc, after.HeapAlloc)
	}
	return ix, after.HeapAlloc - before.HeapAlloc
}

// TestIndexBytesPerKey: the index keeps at most 9 bytes per key (issues
// 16, 28 and 39): 2 bytes of each key's hash under a table of slots (4
// bytes for about 16 keys), a 4-byte position, exactly sized, one bit per
// bucket entry and a 16-byte mark every 64.
func TestIndexBytesPerKey(t *testing.T) {
	s := generated(t, 20_000)
	ix, kept := heapOf(t, func() *snapshot.Index {
		ix, err := s.Index(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return ix
	})
	perKey := float64(kept) / float64(ix.LiveKeys)
	t.Logf("%d entries, %d live keys, %d bytes kept: %.1f bytes per live key", ix.Entries, ix.LiveKeys, kept, perKey)
	if perKey > 9 {
		t.Errorf("the index keeps %.1f bytes per live key, want at most 9", perKey)
	}
	runtime.KeepAlive(ix)
}

// BenchmarkIndex measures building the index of a generated snapshot (50k
// keys), and the heap it keeps per live key.
func BenchmarkIndex(b *testing.B) {
	s := generated(b, 50_000)
	build := func() *snapshot.Index {
		ix, err := s.Index(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		return ix
	}
	for b.Loop() {
		build()
	}
	b.StopTimer()
	ix, kept := heapOf(b, build)
	b.ReportMetric(float64(kept)/float64(ix.LiveKeys), "B/key")
}
