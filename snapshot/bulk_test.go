package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/snapshot"
)

// bulkCase is a set of `key` bucket entries for TestBulkLoader.
type bulkCase struct {
	name     string
	n        int
	maxValue int // values are 0 to maxValue bytes
	// edge: values of the sizes that fill a page exactly with one or two
	// entries, and a byte either side (maxValue is then unused)
	edge bool
}

// writerKinds are the two ways a Writer writes the `key` bucket. The
// writer tests run on both, as bbolt runs its whole suite on both of its
// freelists: a bug in one shows as a difference from the other.
func writerKinds() []snapshot.WriterKind {
	return []snapshot.WriterKind{snapshot.WriterBulk, snapshot.WriterBbolt}
}

// TestBulkLoader writes databases through the Writer, with each writer:
// the bulk loader, which lays the `key` bucket out page by page without
// bbolt, and the reference, bbolt's own Put. Each is held to what bbolt
// makes of the same entries: bbolt opens them, Tx.Check finds nothing
// wrong, every branch page has two children or more, every entry reads back
// in order, and bbolt can go on writing (puts, deletes, a bucket) with
// Tx.Check still clean after.
func TestBulkLoader(t *testing.T) {
	cases := []bulkCase{
		{"empty", 0, 0, false},
		{"one", 1, 100, false},
		{"one-page", 50, 100, false},
		{"two-levels", 5_000, 300, false},
		{"three-levels", 60_000, 40, false},
		{"lone-last-child", 123*123 + 1, 0, false}, // 4 KiB: 124 leaves, one more than a branch page holds
		{"empty-values", 3_000, 0, false},
		{"overflow", 400, 70_000, false}, // values over a page, some over four
		{"page-edges", 600, 0, true},
	}
	for _, kind := range writerKinds() {
		for _, pageSize := range []int{4 << 10, 16 << 10, 64 << 10} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/%s/%dK", kind, c.name, pageSize>>10), func(t *testing.T) {
					checkBulk(t, kind, c, pageSize)
				})
			}
		}
	}
}

func checkBulk(t *testing.T, kind snapshot.WriterKind, c bulkCase, pageSize int) {
	rng := rand.New(rand.NewPCG(uint64(c.n), uint64(pageSize)))
	keys, values := make([][]byte, c.n), make([][]byte, c.n)
	for i := range keys {
		keys[i] = snapshot.RevisionKey(snapshot.Revision{Main: int64(i/3 + 2), Sub: int64(i % 3)})
		size := rng.IntN(c.maxValue + 1)
		if c.edge {
			// header 16, then per entry 16 + 17-byte key + value
			one, two := pageSize-16-16-17, (pageSize-16)/2-16-17
			size = []int{one, two}[rng.IntN(2)] + rng.IntN(3) - 1
		}
		values[i] = make([]byte, size)
		for j := range values[i] {
			values[i][j] = byte(rng.IntN(256))
		}
	}
	path := writeBulk(t, kind, pageSize, keys, values)
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Info().PageSize; got != pageSize {
		t.Errorf("page size %d, want %d", got, pageSize)
	}
	checkTx(t, db)
	checkBranches(t, db)
	readBack(t, db, keys, values)
	// bbolt goes on where the loader stopped: a put in every tenth
	// entry's place, deletes, appends, a new bucket.
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(snapshot.KeyBucket)
		for i := 0; i < len(keys); i += 10 {
			values[i] = bytes.Repeat([]byte{'u'}, rng.IntN(200))
			if err := b.Put(keys[i], values[i]); err != nil {
				return err
			}
		}
		for i := 5; i < len(keys); i += 7 {
			if err := b.Delete(keys[i]); err != nil {
				return err
			}
			values[i] = nil
		}
		for i := range 100 {
			k := snapshot.RevisionKey(snapshot.Revision{Main: int64(c.n + 10 + i)})
			keys, values = append(keys, k), append(values, []byte("appended"))
			if err := b.Put(k, values[len(values)-1]); err != nil {
				return err
			}
		}
		_, err := tx.CreateBucket([]byte("lease"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checkTx(t, db)
	readBack(t, db, keys, values)
}

// writeBulk writes keys and values through the Writer of kind (TxBytes 64
// KiB: the bulk loader's failpoint count wraps many times, and the bbolt
// writer commits as often), with one entry in a meta bucket, and returns
// the database's path.
func writeBulk(t *testing.T, kind snapshot.WriterKind, pageSize int, keys, values [][]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	w, err := snapshot.Create(snapshot.WriterConfig{Path: path, Raw: true, PageSize: pageSize, TxBytes: 1 << 16, Writer: kind})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutBucket([]byte("meta"), []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if err := w.Put(keys[i], values[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkTx(t *testing.T, db *bolt.DB) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("Tx.Check: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkBranches holds every branch page to bbolt's minimum of two
// children (the loader writes none with fewer, not even the last page of a
// level), and says how tall the tree is.
func checkBranches(t *testing.T, db *bolt.DB) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		branches := 0
		for id := 0; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				break
			}
			if p.Type == "branch" {
				branches++
				if p.Count < 2 {
					t.Errorf("branch page %d has %d children", id, p.Count)
				}
			}
		}
		t.Logf("%d branch pages, depth %d", branches, tx.Bucket(snapshot.KeyBucket).Stats().Depth)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readBack holds the `key` bucket to keys and values (a nil value: deleted).
func readBack(t *testing.T, db *bolt.DB, keys, values [][]byte) {
	t.Helper()
	err := db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("k")); string(v) != "v" {
			t.Errorf("meta bucket: %q", v)
		}
		cur := tx.Bucket(snapshot.KeyBucket).Cursor()
		k, v := cur.First()
		for i := range keys {
			if values[i] == nil {
				continue
			}
			if !bytes.Equal(k, keys[i]) || !bytes.Equal(v, values[i]) {
				return fmt.Errorf("entry %d: key %x (%d bytes), want %x (%d bytes)", i, k, len(v), keys[i], len(values[i]))
			}
			k, v = cur.Next()
		}
		if k != nil {
			return fmt.Errorf("an entry more: %x", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzBulkLoader: whatever the sizes of the values, in whatever mix, each
// writer (the bulk loader and the reference, bbolt's Put) writes a
// database that bbolt opens, Tx.Check accepts, whose branch pages have two
// children or more, and that reads back entry for entry. The first byte
// picks the page size; every two bytes after it are one value's size
// (under 4 KiB, or from 0xF000 on up to 3 pages of 64 KiB; 16 MiB in all
// at most).
func FuzzBulkLoader(f *testing.F) {
	f.Add([]byte{0, 0, 10, 0, 200, 16, 0, 255, 255})
	f.Add([]byte{1, 0xf5, 0x55, 0xf5, 0x55, 0, 0, 0xf5, 0x56, 0xf5, 0x54}) // values of about 16 KiB
	f.Add(append([]byte{2}, bytes.Repeat([]byte{0, 90}, 400)...))
	f.Add(append([]byte{0}, bytes.Repeat([]byte{0, 0}, 3000)...))
	f.Fuzz(func(t *testing.T, plan []byte) {
		if len(plan) == 0 {
			return
		}
		pageSize := 4096 << (2 * (int(plan[0]) % 3))
		var keys, values [][]byte
		total := 0
		for i := 1; i+1 < len(plan) && len(keys) < 20_000 && total < 16<<20; i += 2 {
			size := int(binary.BigEndian.Uint16(plan[i:]))
			if size < 0xF000 {
				size %= 4096 // most values are small
			} else {
				size = (size - 0xF000) * 48 // up to 3 pages of 64 KiB
			}
			total += size
			keys = append(keys, snapshot.RevisionKey(snapshot.Revision{Main: int64(len(keys) + 2)}))
			values = append(values, bytes.Repeat([]byte{byte(len(values))}, size))
		}
		for _, kind := range writerKinds() {
			db, err := bolt.Open(writeBulk(t, kind, pageSize, keys, values), 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			checkTx(t, db)
			checkBranches(t, db)
			readBack(t, db, keys, values)
			db.Close()
		}
	})
}
