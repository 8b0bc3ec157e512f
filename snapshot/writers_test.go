package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/snapshot"
)

// longKeys are n increasing keys of keyLen bytes (4 at least): a counter,
// then filler.
func longKeys(n, keyLen int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		k := bytes.Repeat([]byte{'k'}, keyLen)
		binary.BigEndian.PutUint32(k, uint32(i))
		keys[i] = k
	}
	return keys
}

// writeEntries writes keys and values through a Writer of kind and
// returns the database's path, or the error of the first Put or of Commit
// (the Writer then leaves nothing behind). A panic is reported as a test
// failure, with the entries' sizes.
func writeEntries(t *testing.T, kind snapshot.WriterKind, pageSize int, keys, values [][]byte) (path string, err error) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "db")
	w, err := snapshot.Create(snapshot.WriterConfig{Path: path, Raw: true, PageSize: pageSize, TxBytes: 1 << 16, Writer: kind})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s writer, %d-byte pages, %d entries (key %d bytes, value %d bytes): panic: %v",
				kind, pageSize, len(keys), len(keys[0]), len(values[0]), p)
		}
	}()
	defer w.Abort()
	for i := range keys {
		if err := w.Put(keys[i], values[i]); err != nil {
			return "", err
		}
	}
	if _, err := w.Commit(); err != nil {
		return "", err
	}
	return path, nil
}

// checkWritten holds a written database to keys and values as checkBulk
// does, then lets bbolt delete every other entry (its rebalance, where a
// branch page of one child panics, "parent must have at least 2
// children") and checks again.
func checkWritten(t *testing.T, path string, keys, values [][]byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkTx(t, db)
	checkBranches(t, db)
	err = db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(snapshot.KeyBucket).Cursor()
		k, v := cur.First()
		for i := range keys {
			if !bytes.Equal(k, keys[i]) || !bytes.Equal(v, values[i]) {
				return fmt.Errorf("entry %d: key of %d bytes, value of %d, want %d and %d", i, len(k), len(v), len(keys[i]), len(values[i]))
			}
			k, v = cur.Next()
		}
		if k != nil {
			return fmt.Errorf("an entry more: %d bytes", len(k))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(snapshot.KeyBucket)
		for i := 0; i < len(keys); i += 2 {
			if err := b.Delete(keys[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkTx(t, db)
}

// TestWritersRefuseWhatTheyCannotLayOut: the bulk loader lays out keys up
// to the length at which three fit in a branch page, and refuses longer
// ones with one sentence naming the key's length and the page size and
// pointing at the bbolt writer, which writes them (up to bbolt's own
// limit, refused by both). Nothing panics; a refused write leaves nothing.
// The loader used to write branch pages of one child for 1,400-byte keys
// at 4 KiB pages and 5,500-byte keys at 16 KiB, on which bbolt's next
// write panicked.
func TestWritersRefuseWhatTheyCannotLayOut(t *testing.T) {
	type c struct {
		pageSize, keyLen, valueLen, n int
	}
	var cases []c
	for _, ps := range []int{4 << 10, 16 << 10, 64 << 10} {
		limit := (ps-16)/3 - 16
		for _, kl := range []int{limit - 1, limit, limit + 1, ps / 2, ps, 3 * ps, bolt.MaxKeySize, bolt.MaxKeySize + 1} {
			cases = append(cases, c{ps, kl, 0, 40}, c{ps, kl, 100, 12})
		}
	}
	cases = append(cases, c{4 << 10, 1400, 0, 40}, c{16 << 10, 5500, 0, 40}, c{4 << 10, 20, 5 << 20, 3}, c{16 << 10, 1000, 3 << 20, 3})
	for _, tc := range cases {
		for _, kind := range writerKinds() {
			name := fmt.Sprintf("%s/page%d/key%d/value%d", kind, tc.pageSize, tc.keyLen, tc.valueLen)
			t.Run(name, func(t *testing.T) {
				keys := longKeys(tc.n, tc.keyLen)
				values := make([][]byte, tc.n)
				for i := range values {
					values[i] = bytes.Repeat([]byte{byte(i)}, tc.valueLen)
				}
				path, err := writeEntries(t, kind, tc.pageSize, keys, values)
				fits := tc.keyLen <= bolt.MaxKeySize
				if kind == snapshot.WriterBulk {
					fits = tc.keyLen <= (tc.pageSize-16)/3-16
				}
				switch {
				case fits && err != nil:
					t.Fatalf("refused: %v", err)
				case fits:
					checkWritten(t, path, keys, values)
				case err == nil:
					t.Fatalf("a key of %d bytes at %d-byte pages was written", tc.keyLen, tc.pageSize)
				default:
					checkRefusal(t, err, kind, tc.keyLen, tc.pageSize)
				}
			})
		}
	}
}

// checkRefusal holds a refusal to one sentence naming the key's length,
// and for the bulk loader the page size and the bbolt writer, when bbolt
// takes the key.
func checkRefusal(t *testing.T, err error, kind snapshot.WriterKind, keyLen, pageSize int) {
	t.Helper()
	msg := err.Error()
	t.Logf("%s", msg)
	if strings.Contains(msg, "\n") || strings.Count(msg, ". ") > 0 {
		t.Errorf("not one sentence: %q", msg)
	}
	if !strings.Contains(msg, fmt.Sprint(keyLen)) && !strings.Contains(msg, "key too large") {
		t.Errorf("the key's length %d is not named: %q", keyLen, msg)
	}
	if kind == snapshot.WriterBulk && keyLen <= bolt.MaxKeySize {
		if !strings.Contains(msg, fmt.Sprint(pageSize)) || !strings.Contains(msg, "--writer bbolt") {
			t.Errorf("the page size %d or the bbolt writer is not named: %q", pageSize, msg)
		}
	}
}

// FuzzWriterEntries: keys up to three pages long and values up to 6 MiB,
// in any mix, through either writer: no panic; each database written holds
// to Tx.Check, bbolt's minimum of two children a branch page, reads back
// entry for entry, and survives bbolt deleting half of it; a refusal is one
// sentence. The first byte picks the page size; every three bytes after it
// are one entry: its key's length (two bytes, modulo three pages) and its
// value's size (one byte: under 200 bytes, or from 250 on up to 6 MiB).
func FuzzWriterEntries(f *testing.F) {
	f.Add([]byte{0, 0x05, 0x78, 0, 0x05, 0x78, 10, 0x05, 0x78, 0}) // 1,400-byte keys at 4 KiB
	f.Add([]byte{1, 0x15, 0x7c, 0, 0x15, 0x7c, 0, 0x15, 0x7c, 0, 0x15, 0x7c, 0})
	f.Add([]byte{2, 0, 17, 255, 0, 17, 3, 0x7f, 0xff, 0})
	f.Add(append([]byte{0}, bytes.Repeat([]byte{0x05, 0x3c, 1}, 30)...)) // 1,344 bytes: the longest at 4 KiB
	f.Fuzz(func(t *testing.T, plan []byte) {
		if len(plan) < 4 {
			return
		}
		pageSize := 4096 << (2 * (int(plan[0]) % 3))
		var keys, values [][]byte
		total := 0
		for i := 1; i+2 < len(plan) && len(keys) < 500 && total < 32<<20; i += 3 {
			kl := 4 + int(binary.BigEndian.Uint16(plan[i:]))%(3*pageSize)
			vl := int(plan[i+2])
			if vl >= 250 {
				vl = (vl - 249) << 20
			}
			total += kl + vl
			k := bytes.Repeat([]byte{byte(i)}, kl)
			binary.BigEndian.PutUint32(k, uint32(len(keys)))
			keys, values = append(keys, k), append(values, bytes.Repeat([]byte{byte(len(values))}, vl))
		}
		if len(keys) == 0 {
			return
		}
		for _, kind := range writerKinds() {
			path, err := writeEntries(t, kind, pageSize, keys, values)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s writer: a multi-line refusal: %q", kind, err)
				}
				continue
			}
			checkWritten(t, path, keys, values)
		}
	})
}

// TestWritersAgree is the differential test of the two writers: the same
// stream (a real etcd snapshot's live state and other buckets, its
// compaction markers, then a generated churned one's) written by the bulk
// loader and by bbolt's own Put gives two databases that both pass
// Tx.Check and hold the same buckets, the same keys and values in every
// bucket, and so the same revisions, compaction markers and consistent
// index. Only the layout may differ (how full the pages are, the tree's
// height, the file's size); it is logged.
func TestWritersAgree(t *testing.T) {
	churn := filepath.Join(t.TempDir(), "churn.db")
	if _, err := gen.Generate(context.Background(), gen.Config{Path: churn, Keys: 4000, Seed: 39, Profile: gen.ProfileChurn}); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"../testdata/sample.db", churn} {
		for _, pageSize := range []int{4 << 10, 16 << 10} {
			t.Run(fmt.Sprintf("%s/%dK", filepath.Base(in), pageSize>>10), func(t *testing.T) {
				var dumps []string
				var revs []string
				for _, kind := range writerKinds() {
					path := writeStream(t, kind, pageSize, in)
					dump, layout := dumpDB(t, path)
					dumps = append(dumps, dump)
					revs = append(revs, revisionsOf(t, path))
					t.Logf("%s writer: %s", kind, layout)
				}
				if dumps[0] != dumps[1] {
					t.Errorf("the bulk and bbolt writers wrote different contents:\n%s", lineDiffOf(dumps[0], dumps[1]))
				}
				if revs[0] != revs[1] {
					t.Errorf("revisions: bulk %s, bbolt %s", revs[0], revs[1])
				}
			})
		}
	}
}

// writeStream writes the live state of in (a transform's identity stream:
// its other buckets, every live entry, the compaction markers) with a
// Writer of kind, without a trailer, and returns the database's path.
func writeStream(t *testing.T, kind snapshot.WriterKind, pageSize int, in string) string {
	t.Helper()
	s, ix := testfile.OpenIndexed(t, in)
	out := filepath.Join(t.TempDir(), "db")
	w, err := snapshot.Create(snapshot.WriterConfig{Path: out, Raw: true, PageSize: pageSize, TxBytes: 1 << 16, Writer: kind})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.CopyBuckets(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error { return w.Put(e.RevKey, e.Raw) }); err != nil {
		t.Fatal(err)
	}
	if err := w.SetCompacted(ix.CurrentRevision + 1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dumpDB runs Tx.Check on the database at path and returns every bucket's
// every key and value as text (a sha256 of each value), and its layout.
func dumpDB(t *testing.T, path string) (dump, layout string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkTx(t, db)
	var b strings.Builder
	err = db.View(func(tx *bolt.Tx) error {
		st := tx.Bucket(snapshot.KeyBucket).Stats()
		layout = fmt.Sprintf("%d bytes, key bucket depth %d, %d branch and %d leaf pages (+%d overflow), leaves %.1f%% full",
			tx.Size(), st.Depth, st.BranchPageN, st.LeafPageN, st.LeafOverflowN, 100*float64(st.LeafInuse)/float64(st.LeafAlloc))
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			fmt.Fprintf(&b, "bucket %q sequence %d\n", name, bk.Sequence())
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&b, "  %x = %x\n", k, sha256.Sum256(v))
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), layout
}

// revisionsOf is what snapshift reads of the database's revisions: the
// current and last revision, the compaction markers, the consistent index
// and term, the live keys.
func revisionsOf(t *testing.T, path string) string {
	t.Helper()
	s, err := snapshot.Open(path, snapshot.OpenOptions{AllowNoTrailer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ix, err := s.Index(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("current %d, last %v, live %d, meta %+v", ix.CurrentRevision, ix.LastRevision, ix.LiveKeys, s.Meta)
}

// lineDiffOf is the first lines where a and b differ.
func lineDiffOf(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)) && len(out) < 10; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d: bulk %q, bbolt %q", i+1, x, y))
		}
	}
	return strings.Join(out, "\n")
}
