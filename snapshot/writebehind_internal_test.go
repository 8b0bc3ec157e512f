//go:build linux

package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// TestWriteBehind writes 24 MiB of `key` bucket pages through the bulk
// loader with a 1 MiB write-behind window: with drop, every window but the
// last two has been written back and left the page cache by the time the
// loader finishes (mincore finds none of its pages), the rest is still
// there; without drop, all of it stays cached. Either way bbolt opens the
// database, Tx.Check finds nothing wrong and every entry reads back.
func TestWriteBehind(t *testing.T) {
	for _, drop := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "db")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		b := newBulkLoader(f, 16<<10, DefaultTxBytes, 0)
		b.wb.window, b.wb.drop = 1<<20, drop
		v := bytes.Repeat([]byte{'v'}, 1000)
		const n = 24 << 10 // ~1 KiB each: 24 MiB
		for i := range n {
			if err := b.add(RevisionKey(Revision{Main: int64(i + 2)}), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.flush(); err != nil {
			t.Fatal(err)
		}
		started := b.wb.prev // below it: written back (and dropped)
		if started < 16<<20 {
			t.Fatalf("drop %v: write-behind waited for %d bytes, want most of 24 MiB", drop, started)
		}
		res := resident(t, f, b.wb.end)
		// page 0-3 are written last (finish): from the first chunk on
		head := int64(firstFreePage) * 16 << 10
		droppedRes, keptRes := countPages(res[head/4096:started/4096]), countPages(res[started/4096:])
		if drop && droppedRes > 0 {
			t.Errorf("drop: %d of the written-back pages are still cached", droppedRes)
		}
		if !drop && droppedRes < int(started-head)/4096*9/10 {
			t.Errorf("no drop: %d of %d written pages cached, want them all", droppedRes, (started-head)/4096)
		}
		if keptRes == 0 {
			t.Errorf("drop %v: the last windows are not cached", drop)
		}
		if err := b.finish(); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			c, i := tx.Bucket(KeyBucket).Cursor(), 0
			for k, got := c.First(); k != nil; k, got = c.Next() {
				if want := RevisionKey(Revision{Main: int64(i + 2)}); !bytes.Equal(k, want) || !bytes.Equal(got, v) {
					t.Fatalf("entry %d: key %x, want %x", i, k, want)
				}
				i++
			}
			if i != n {
				t.Errorf("%d entries read back, want %d", i, n)
			}
			return nil
		})
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteBehindDrop: an output expected to outgrow half the memory budget
// leaves the page cache once written back, a small one stays.
func TestWriteBehindDrop(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "db")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := memoryBudget()
	if w := newWriteBehind(f, b); !w.drop {
		t.Errorf("an output of the whole budget (%d) is not dropped", b)
	}
	if w := newWriteBehind(f, b/4); w.drop {
		t.Errorf("an output of a quarter of the budget is dropped")
	}
	if w := newWriteBehind(f, 0); w.drop {
		t.Errorf("an output of unknown size is dropped")
	}
}

// resident is mincore's answer for the first size bytes of f, a byte per
// 4 KiB page, bit 0 set if cached.
func resident(t *testing.T, f *os.File, size int64) []byte {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (size+4095)/4096)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatal(errno)
	}
	return vec
}

func countPages(vec []byte) int {
	n := 0
	for _, b := range vec {
		n += int(b & 1)
	}
	return n
}
