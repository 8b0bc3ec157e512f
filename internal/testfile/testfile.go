// Package testfile holds the file helpers the tests of several packages
// share: copying an input so the original is never at risk, hashing a file
// to prove it unchanged, and listing a directory (hidden temporary files
// included) to prove nothing was left behind.
package testfile

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Copy copies src into dir (same base name) and returns the new path.
func Copy(t testing.TB, src, dir string) string {
	t.Helper()
	return CopyTo(t, src, filepath.Join(dir, filepath.Base(src)))
}

// CopyTo copies src to dst, which must not exist, and returns dst.
func CopyTo(t testing.TB, src, dst string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Sum is the sha256 of a file's bytes.
func Sum(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// Names lists a directory's entries, hidden ones included.
func Names(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
