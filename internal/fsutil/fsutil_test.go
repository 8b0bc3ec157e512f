package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBackupNames(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "apiserver.crt")
	for i, content := range []string{"v0", "v1", "v2", "v3"} {
		if err := WriteFile(p, []byte(content), 0o644, true); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			break
		}
		bak, err := Backup(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if want := BackupName(p, i); bak != want {
			t.Errorf("backup %d = %s, want %s", i, bak, want)
		}
	}
	for i, want := range []string{"v0", "v1", "v2"} {
		if b, _ := os.ReadFile(BackupName(p, i)); string(b) != want {
			t.Errorf("%s = %q, want %q", BackupName(p, i), b, want)
		}
	}
	if bak, err := Backup(filepath.Join(dir, "missing"), ""); bak != "" || err != nil {
		t.Errorf("backup of a missing file: %q %v", bak, err)
	}
}

func TestBackupIntoAnotherDir(t *testing.T) {
	dir, bdir := t.TempDir(), t.TempDir()
	p := filepath.Join(dir, "etcd.yaml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	bak, err := Backup(p, bdir)
	if err != nil || bak != filepath.Join(bdir, "etcd.yaml.bak") {
		t.Fatalf("Backup = %q, %v", bak, err)
	}
	if st, _ := os.Stat(bak); st.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want the original's 0600", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the backup landed beside the file")
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", 1536: "1.50 KiB", 101 << 20: "101 MiB",
		87<<20 + 300<<10: "87.3 MiB", 1717986918: "1.60 GiB", 10*1024 - 1: "10.0 KiB", 3 << 40: "3.00 TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
