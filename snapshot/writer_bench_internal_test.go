package snapshot

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWriterFinish is a raw database's Commit (a fused restore's
// member database): the last transaction, the check (BeforePublish, here a
// CPU-bound read of the whole file, as verify's re-read) and the fsync,
// with the fsync after the check (serial, as before) and during it
// (overlapped). The puts are not timed; 64 MiB of values, written anew each
// time so that the fsync has dirty pages to write.
func BenchmarkWriterFinish(b *testing.B) {
	value := make([]byte, 4000)
	for i := range value {
		value[i] = byte(i * 7)
	}
	check := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		for range 4 { // about as long as verify takes on its output
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		}
		return nil
	}
	for _, serial := range []bool{true, false} {
		name := "overlapped"
		if serial {
			name = "serial"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			n := 0
			for b.Loop() {
				b.StopTimer()
				n++
				w, err := Create(WriterConfig{Path: filepath.Join(dir, fmt.Sprintf("db%d", n)), Raw: true, BeforePublish: check})
				if err != nil {
					b.Fatal(err)
				}
				w.serialSync = serial
				for i := range 64 << 20 / len(value) {
					if err := w.Put(RevisionKey(Revision{Main: int64(i + 1)}), value); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if _, err := w.Commit(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.Remove(filepath.Join(dir, fmt.Sprintf("db%d", n)))
				b.StartTimer()
			}
		})
	}
}
