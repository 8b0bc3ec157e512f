package manifests

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/snapshift/snapshift/internal/fsutil"
)

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Read, Update, Write in place, Read again: the files parse as the updated
// Pods, are 0600, and the originals are kept as .bak; the unchanged
// scheduler manifest is not touched.
func TestWriteRoundTrip(t *testing.T) {
	dir := copyDir(t, kubeadmIPv4)
	if err := os.Chmod(filepath.Join(dir, "kube-apiserver.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := mustRead(t, dir)
	updated, _, err := Update(set, seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Write(updated, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wantWritten := []string{filepath.Join(dir, "kube-apiserver.yaml"), filepath.Join(dir, "kube-controller-manager.yaml"), filepath.Join(dir, "etcd.yaml")}
	if !slices.Equal(res.Written(), wantWritten) {
		t.Errorf("written %q", res.Written())
	}
	for _, f := range res.Files {
		if f.Unchanged {
			if f.Component != KubeScheduler || f.Backup != "" {
				t.Errorf("unchanged %+v", f)
			}
			continue
		}
		if f.Backup != f.Path+".bak" || f.Mode != "0600" || f.Method != RenderEdited {
			t.Errorf("%+v", f)
		}
		if got := fileMode(t, f.Path); got != 0o600 {
			t.Errorf("%s: mode %04o", f.Path, got)
		}
		if readString(t, f.Backup) != readFixture(t, kubeadmIPv4, f.Component) {
			t.Errorf("%s: backup is not the original", f.Backup)
		}
	}
	if got := fileMode(t, filepath.Join(dir, "kube-apiserver.yaml.bak")); got != 0o644 {
		t.Errorf("backup mode %04o, want the original's 0644", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-scheduler.yaml.bak")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unchanged scheduler was backed up: %v", err)
	}

	back := mustRead(t, dir)
	for _, c := range Components() {
		if !apiequality.Semantic.DeepEqual(mustGet(t, back, c).Pod, mustGet(t, updated, c).Pod) {
			t.Errorf("%s: re-read Pod differs from the updated one", c)
		}
	}
	if !slices.Equal(back.Other, []string{"etcd.yaml.bak", "kube-apiserver.yaml.bak", "kube-controller-manager.yaml.bak"}) {
		t.Errorf("other %q", back.Other)
	}

	// Writing the same set again changes nothing.
	res, err = Write(updated, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written()) != 0 {
		t.Errorf("second write wrote %q", res.Written())
	}

	// A second migration keeps both backups: .bak is never overwritten.
	again, _, err := Update(back, Changes{ServiceCIDR: "172.25.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = Write(again, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	api := filepath.Join(dir, "kube-apiserver.yaml")
	if res.Files[0].Backup != api+".bak.1" {
		t.Errorf("second backup %q", res.Files[0].Backup)
	}
	if readString(t, api+".bak") != readFixture(t, kubeadmIPv4, KubeAPIServer) ||
		!strings.Contains(readString(t, api+".bak.1"), "--service-cluster-ip-range=172.24.0.0/16") ||
		!strings.Contains(readString(t, api), "--service-cluster-ip-range=172.25.0.0/16") {
		t.Error("backups or manifest wrong after the second write")
	}
}

// Without force only a file that still holds what was read is replaced;
// the check runs for every file before any is written.
func TestWriteRefusesChangedFiles(t *testing.T) {
	dir := copyDir(t, kubeadmIPv4)
	set := mustRead(t, dir)
	updated, _, err := Update(set, seedChanges())
	if err != nil {
		t.Fatal(err)
	}
	etcd := filepath.Join(dir, "etcd.yaml")
	edited := readString(t, etcd) + "# edited meanwhile\n"
	if err := os.WriteFile(etcd, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Write(updated, dir, false)
	if !errors.Is(err, fsutil.ErrExists) || !strings.Contains(err.Error(), etcd+" already exists and differs from the manifest that was read") {
		t.Fatalf("changed file: %v", err)
	}
	if readString(t, filepath.Join(dir, "kube-apiserver.yaml")) != readFixture(t, kubeadmIPv4, KubeAPIServer) {
		t.Error("kube-apiserver.yaml was written before the check failed")
	}
	res, err := Write(updated, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if readString(t, res.Files[len(res.Files)-1].Backup) != edited {
		t.Error("forced write did not keep the edited file")
	}

	// A generated set over existing manifests needs force too.
	gen, err := Generate(ipv4Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(gen, dir, false); !errors.Is(err, fsutil.ErrExists) || !strings.Contains(err.Error(), "was not read into this set") {
		t.Errorf("generated over existing: %v", err)
	}
}

// A manifest set written into a new directory (an output bundle): every
// manifest is written, with no backup; the directory is created 0700.
func TestWriteNewDirAndBackupDir(t *testing.T) {
	set := mustRead(t, kubeadmIPv4)
	out := filepath.Join(t.TempDir(), "bundle", "manifests")
	res, err := Write(set, out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written()) != 4 || fileMode(t, out) != DirPerm {
		t.Errorf("written %q, dir mode %04o", res.Written(), fileMode(t, out))
	}
	for _, c := range Components() {
		if readString(t, filepath.Join(out, FileName(c))) != readFixture(t, kubeadmIPv4, c) {
			t.Errorf("%s not copied byte for byte", c)
		}
	}

	// Backups outside the static Pod directory, where kubelet does not look.
	dir := copyDir(t, kubeadmIPv4)
	baks := filepath.Join(t.TempDir(), "backup")
	updated, _, err := Update(mustRead(t, dir), Changes{ServiceCIDR: "172.24.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(baks, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(baks, "kube-apiserver.yaml.bak"), []byte("older"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = WriteWith(updated, WriteOptions{Dir: dir, BackupDir: baks})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files[0].Backup != filepath.Join(baks, "kube-apiserver.yaml.bak.1") || readString(t, filepath.Join(baks, "kube-apiserver.yaml.bak")) != "older" {
		t.Errorf("backup %q", res.Files[0].Backup)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".bak") {
			t.Errorf("backup %s left in the manifest directory", e.Name())
		}
	}
}

func TestWriteErrors(t *testing.T) {
	set := mustRead(t, kubeadmIPv4)
	if _, err := Write(set, "", false); err == nil {
		t.Error("empty dir accepted")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "etcd.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(set, dir, true); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("directory in the way: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files written before the check failed: %d entries", len(entries))
	}
}
