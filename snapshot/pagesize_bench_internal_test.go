package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkPageSize is the writer's path (ordered puts into the key
// bucket, FillPercent 1, a commit every 8 MiB, NoSync) of 256 MiB of
// 2.5 KB values into bbolt files of several page sizes: bbolt writes each
// dirty page with its own pwrite, so the page size sets how many (and a
// 2.5 KB value leaves most of a 4 KiB page empty). It chose
// DefaultPageSize; BenchmarkMemberPageSize measures what the larger pages
// cost etcd's own writes on the restored member until it defragments.
// -count 5 -benchtime 2x, load 4.4 on 2 cores, medians: 4096 443 ms,
// 16384 148 ms, 65536 99 ms.
func BenchmarkPageSize(b *testing.B) {
	eachPageSize(b, func(b *testing.B, path string, ps int, value []byte) func() {
		db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoGrowSync: true, NoFreelistSync: true,
			FreelistType: bolt.FreelistMapType, PageSize: ps, InitialMmapSize: 300 << 20})
		if err != nil {
			b.Fatal(err)
		}
		tx, _ := db.Begin(true)
		bk, _ := tx.CreateBucket(KeyBucket)
		bk.FillPercent = 1
		pending := 0
		for i := range 256 << 20 / len(value) {
			if err := bk.Put(RevisionKey(Revision{Main: int64(i + 1)}), value); err != nil {
				b.Fatal(err)
			}
			if pending += len(value) + 17; pending >= 8<<20 {
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				tx, _ = db.Begin(true)
				bk = tx.Bucket(KeyBucket)
				bk.FillPercent = 1
				pending = 0
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		db.Close()
		return func() { os.Remove(path) }
	})
}

// BenchmarkBulkLoader is BenchmarkPageSize's 256 MiB through the Writer,
// whose bulkLoader lays out the key bucket's pages itself (up to the
// database closed: no trailer, no fsync, as there). Run the two together
// (-bench 'PageSize|BulkLoader') to compare them in one run.
func BenchmarkBulkLoader(b *testing.B) { benchWriter(b, WriterBulk) }

// BenchmarkBoltWriter is BenchmarkBulkLoader with the reference writer,
// --writer bbolt (bbolt's own Put, a commit every 4 MiB): what the
// fallback costs.
func BenchmarkBoltWriter(b *testing.B) { benchWriter(b, WriterBbolt) }

func benchWriter(b *testing.B, kind WriterKind) {
	eachPageSize(b, func(b *testing.B, path string, ps int, value []byte) func() {
		w, err := Create(WriterConfig{Path: path, Raw: true, PageSize: ps, Writer: kind})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 256 << 20 / len(value) {
			if err := w.Put(RevisionKey(Revision{Main: int64(i + 1)}), value); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.close(); err != nil {
			b.Fatal(err)
		}
		return w.Abort
	})
}

// eachPageSize times write, 256 MiB of 2.5 KB values into a new database
// at path, at each page size; what write returns (the clean-up) runs with
// the timer stopped.
func eachPageSize(b *testing.B, write func(b *testing.B, path string, pageSize int, value []byte) (cleanup func())) {
	value := make([]byte, 2500)
	for i := range value {
		value[i] = byte(i * 13)
	}
	for _, ps := range []int{4096, 16384, 65536} {
		b.Run(fmt.Sprint(ps), func(b *testing.B) {
			dir := b.TempDir()
			n := 0
			for b.Loop() {
				n++
				cleanup := write(b, filepath.Join(dir, fmt.Sprintf("db%d", n)), ps, value)
				b.StopTimer()
				cleanup()
				b.StartTimer()
			}
		})
	}
}
