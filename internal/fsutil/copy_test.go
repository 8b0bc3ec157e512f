package fsutil_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// copySource is a tree with a file, a setgid directory, a symlink and an
// old modification time.
func copySource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(filepath.Join(src, "pki"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "pki", "ca.key"), []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "ca.crt"), []byte("crt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pki/ca.key", filepath.Join(src, "current.pem")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, p := range []string{"pki/ca.key", "ca.crt", "pki"} {
		if err := os.Chtimes(filepath.Join(src, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func TestCopyExact(t *testing.T) {
	src := copySource(t)
	dst := filepath.Join(t.TempDir(), "dst")
	if err := fsutil.Copy(src, dst, fsutil.CopyOptions{Symlinks: true, KeepOwner: true, KeepTimes: true, Sync: true}); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"pki", "pki/ca.key", "ca.crt", "current.pem"} {
		a, _ := os.Lstat(filepath.Join(src, rel))
		b, err := os.Lstat(filepath.Join(dst, rel))
		if err != nil {
			t.Fatal(err)
		}
		if a.Mode() != b.Mode() || (a.Mode()&os.ModeSymlink == 0 && !a.ModTime().Equal(b.ModTime())) {
			t.Errorf("%s: %v %v, source %v %v", rel, b.Mode(), b.ModTime(), a.Mode(), a.ModTime())
		}
	}
	if l, _ := os.Readlink(filepath.Join(dst, "current.pem")); l != "pki/ca.key" {
		t.Errorf("symlink target %q", l)
	}
	if err := fsutil.Copy(src, dst, fsutil.CopyOptions{Symlinks: true}); err == nil {
		t.Errorf("a copy over an existing tree without Merge succeeded")
	}
}

func TestCopyRefusesSymlinks(t *testing.T) {
	src := copySource(t)
	dst := filepath.Join(t.TempDir(), "a", "b", "dst")
	err := fsutil.Copy(src, dst, fsutil.CopyOptions{Merge: true, DirMode: 0o700})
	if err == nil || !strings.Contains(err.Error(), "current.pem is a symlink: refused") {
		t.Fatalf("Copy of a tree with a symlink: %v", err)
	}
	os.Remove(filepath.Join(src, "current.pem"))
	if err := fsutil.Copy(src, dst, fsutil.CopyOptions{Merge: true, DirMode: 0o700}); err != nil {
		t.Fatal(err)
	}
	if err := fsutil.Copy(src, dst, fsutil.CopyOptions{Merge: true, DirMode: 0o700}); err != nil {
		t.Fatalf("Merge over its own copy: %v", err)
	}
	for rel, want := range map[string]os.FileMode{"pki": os.ModeDir | 0o700, "pki/ca.key": 0o600, "ca.crt": 0o644} {
		if st, err := os.Stat(filepath.Join(dst, rel)); err != nil || st.Mode() != want {
			t.Errorf("%s: %v, want %v (%v)", rel, st.Mode(), want, err)
		}
	}
	if st, _ := os.Stat(filepath.Join(dst, "..")); st.Mode().Perm() != 0o700 {
		t.Errorf("a missing parent made %v", st.Mode())
	}
	one := filepath.Join(t.TempDir(), "db")
	if err := fsutil.Copy(filepath.Join(src, "ca.crt"), one, fsutil.CopyOptions{FileMode: 0o600}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(one); string(b) != "crt\n" {
		t.Errorf("a single file: %q", b)
	}
	if st, _ := os.Stat(one); st.Mode() != 0o600 {
		t.Errorf("FileMode: %v", st.Mode())
	}
}

func TestCopySkip(t *testing.T) {
	src := copySource(t)
	if err := os.WriteFile(filepath.Join(src, "pki", "ca.key.bak"), []byte("old key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	skip := func(name string) bool { return strings.HasSuffix(name, ".bak") }
	if err := fsutil.Copy(src, dst, fsutil.CopyOptions{Symlinks: true, Skip: skip}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "pki", "ca.key.bak")); !os.IsNotExist(err) {
		t.Errorf("the skipped backup was copied (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "pki", "ca.key")); err != nil {
		t.Errorf("a file Skip did not name is missing: %v", err)
	}
}
