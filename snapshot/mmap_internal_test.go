//go:build linux

package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/progress"
)

// TestPopulateFlags: an input that fits in half the memory budget is populated, one beyond it is
// not; the budget is at most the machine's memory.
func TestPopulateFlags(t *testing.T) {
	b := memoryBudget()
	if b <= 0 || b > memTotal() {
		t.Fatalf("memory budget %d, MemTotal %d", b, memTotal())
	}
	if got := populateFlags(b / 4); got != mmapPopulate {
		t.Errorf("a quarter of the budget: flags %#x, want MAP_POPULATE", got)
	}
	if got := populateFlags(b); got != 0 {
		t.Errorf("the whole budget: flags %#x, want none", got)
	}
}

// TestAdviseSequential: bbolt maps a database MADV_RANDOM (VmFlags "rr"
// in smaps: no readahead); adviseSequential turns the mapping sequential
// ("sr"), as Open does for a file written in key order it does not populate.
func TestAdviseSequential(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	data := db.Info().Data
	if f := vmFlags(t, data); !slices.Contains(f, "rr") {
		t.Fatalf("bbolt's mapping has VmFlags %v, no rr (MADV_RANDOM)", f)
	}
	adviseSequential(data, 4096)
	if f := vmFlags(t, data); !slices.Contains(f, "sr") || slices.Contains(f, "rr") {
		t.Errorf("after adviseSequential VmFlags %v, want sr and no rr", f)
	}
}

// vmFlags are /proc/self/smaps' VmFlags of the mapping that starts at addr.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			start, _, _ := strings.Cut(f[0], "-")
			in = start == strconv.FormatUint(uint64(addr), 16)
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(v)
		}
	}
	t.Fatalf("no mapping at %#x in /proc/self/smaps", addr)
	return nil
}

// TestHashMapped: the mapped hash writes the file's first bytes exactly
// (pieces of 4 MiB and a short last one); a mapping longer than the file
// (truncated while it is read) faults past its end, which hashMapped
// reports as false instead of crashing.
func TestHashMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	content := make([]byte, 9<<20+123)
	for i := range content {
		content[i] = byte(i*7 + i>>13)
	}
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := int64(len(content) - 100)
	var got bytes.Buffer
	if !hashMapped(f, size, &got, progress.Nop{}) {
		t.Fatal("hashMapped of a file in the page cache is false")
	}
	if !bytes.Equal(got.Bytes(), content[:size]) {
		t.Fatalf("hashMapped wrote %d bytes, not the file's first %d", got.Len(), size)
	}
	got.Reset()
	if hashMapped(f, int64(len(content))+64<<10, &got, progress.Nop{}) {
		t.Fatal("hashMapped past the end of the file is true")
	}
}
