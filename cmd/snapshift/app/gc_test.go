package app

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestSizeGC holds a migration's collector settings to its input: the
// floor below gcFloor*gcSizeDivisor bytes, 1/gcSizeDivisor above; nothing
// changes unless the binary asked for it (SizeGC).
func TestSizeGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(oldPercent)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit); SizeGC = false })
	dir := t.TempDir()
	for _, c := range []struct {
		size, want int64
	}{{1 << 20, gcFloor}, {gcFloor * gcSizeDivisor, gcFloor}, {10 << 30, (10 << 30) / gcSizeDivisor}} {
		path := filepath.Join(dir, "in.db")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(c.size); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		f.Close()
		SizeGC = false
		sizeGC(path)
		if got := debug.SetMemoryLimit(-1); got != oldLimit {
			t.Fatalf("without SizeGC the limit changed to %d", got)
		}
		SizeGC = true
		sizeGC(path)
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("input of %d bytes: memory limit %d, want %d", c.size, got, c.want)
		}
		if got := debug.SetGCPercent(oldPercent); got != gcPercent {
			t.Errorf("input of %d bytes: GOGC %d, want %d", c.size, got, gcPercent)
		}
		debug.SetMemoryLimit(oldLimit)
	}
}
