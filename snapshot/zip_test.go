package snapshot_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snapshift/snapshift/snapshot"
)

// TestZipRoundTrip: Zip writes what k3s's compressSnapshot writes (one Deflate entry named after
// the zip, mode and time kept), Unzip reads it back byte for byte into its own directory, and Open
// of the zip itself says what it is.
func TestZipRoundTrip(t *testing.T) {
	plain, err := os.ReadFile("../testdata/sample.db")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "plain")
	if err := os.WriteFile(src, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "etcd-snapshot-n1-1764000000.zip")
	when := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if err := snapshot.Zip(src, dst, snapshot.ZipOptions{Mode: 0o640, Modified: when}); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Zip(src, dst, snapshot.ZipOptions{}); err == nil {
		t.Error("Zip replaced an existing file without Force")
	}
	zr, err := zip.OpenReader(dst)
	if err != nil {
		t.Fatal(err)
	}
	f := zr.File[0]
	if len(zr.File) != 1 || f.Name != "etcd-snapshot-n1-1764000000" || f.Method != zip.Deflate || f.Mode().Perm() != 0o640 || !f.Modified.Equal(when) {
		t.Errorf("entry %q method %d mode %v time %v; want one Deflate entry named after the zip, 0640, %v", f.Name, f.Method, f.Mode(), f.Modified, when)
	}
	zr.Close()
	if z, err := snapshot.IsZip(dst); err != nil || !z {
		t.Errorf("IsZip(zip) = %v, %v", z, err)
	}
	if z, err := snapshot.IsZip(src); err != nil || z {
		t.Errorf("IsZip(plain) = %v, %v", z, err)
	}
	if z, err := snapshot.IsZip(dir); err != nil || z {
		t.Errorf("IsZip(dir) = %v, %v", z, err)
	}
	tmp := t.TempDir()
	u, err := snapshot.Unzip(dst, tmp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(u.Path)
	if err != nil || !bytes.Equal(got, plain) || u.Entry != "etcd-snapshot-n1-1764000000" || u.Mode != 0o640 {
		t.Errorf("Unzip: %d bytes (want %d), entry %q mode %v, %v", len(got), len(plain), u.Entry, u.Mode, err)
	}
	if err := u.Remove(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("Remove left %d entries in the temporary directory", len(ents))
	}
	_, err = snapshot.Open(dst, snapshot.OpenOptions{})
	if !errors.Is(err, snapshot.ErrInvalidInput) || !bytes.Contains([]byte(err.Error()), []byte("is a zip archive")) {
		t.Errorf("Open(zip) = %v, want an input error saying it is a zip", err)
	}
	if got, want := snapshot.MetadataPath("/d/server/db/snapshots/s.zip"), "/d/server/db/.metadata/s.zip"; got != want {
		t.Errorf("MetadataPath = %s, want %s", got, want)
	}
}
