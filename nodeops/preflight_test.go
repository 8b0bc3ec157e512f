package nodeops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/nodetest"
	"github.com/snapshift/snapshift/nodeops"
)

// preflightOnly runs apply --preflight-only on root, checks it changed
// nothing there, and returns its output and error.
func preflightOnly(t *testing.T, b, root string) (string, error) {
	t.Helper()
	before := tree(t, root, ".")
	var out bytes.Buffer
	err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, PreflightOnly: true, Out: &out})
	if after := tree(t, root, "."); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("--preflight-only changed the root")
	}
	return out.String(), err
}

// recorders puts systemctl, crictl and ip first in PATH (outside root).
func recorders(t *testing.T) {
	bin := t.TempDir()
	nodetest.Recorders(t, bin, "")
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
}

// TestPreflightRefusesAnEmptyRoot: an empty --root has no /etc/kubernetes
// and no etcd data dir: both are named, in one run, and apply is refused
// (exit 4), not a backup of nothing.
func TestPreflightRefusesAnEmptyRoot(t *testing.T) {
	b, root := makeBundle(t), t.TempDir()
	recorders(t)
	_, err := preflightOnly(t, b, root)
	if !errors.Is(err, nodeops.ErrRefused) {
		t.Fatalf("preflight on an empty root: %v, want a refusal", err)
	}
	for _, want := range []string{
		"[preflight] 2 checks failed, nothing was changed: (1) no /etc/kubernetes under --root " + root + " (a wrong --root, or not control-plane node n1); ",
		"(2) no etcd data dir /var/lib/etcd under --root " + root + ", where report.json says etcd keeps it",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, err)
		}
	}
	// Not --preflight-only: refused all the same, nothing written.
	if err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); !errors.Is(err, nodeops.ErrRefused) {
		t.Errorf("apply on an empty root: %v, want a refusal", err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, "*")); len(m) > 0 {
		t.Errorf("a refused apply wrote %v", m)
	}
}

// TestPreflightRefusesAWrongRoot: a worker's root (a kubelet.conf, an
// empty manifests/, no etcd), and a control-plane root whose etcd data
// dir is not where the bundle says, are refused with what is missing.
func TestPreflightRefusesAWrongRoot(t *testing.T) {
	b := makeBundle(t)
	recorders(t)
	worker := t.TempDir()
	write(t, filepath.Join(worker, "etc/kubernetes/kubelet.conf"), "worker kubelet.conf\n", 0o600)
	os.MkdirAll(filepath.Join(worker, "etc/kubernetes/manifests"), 0o755)
	write(t, filepath.Join(worker, "var/lib/kubelet/config.yaml"), "kind: KubeletConfiguration\n", 0o644)
	_, err := preflightOnly(t, b, worker)
	for _, want := range []string{
		"[preflight] 2 checks failed, nothing was changed: (1) /etc/kubernetes/manifests under --root " + worker + " holds no etcd.yaml or kube-apiserver.yaml: no control plane runs from it",
		"(2) no etcd data dir /var/lib/etcd under --root " + worker,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a worker's root: the refusal does not say %q:\n%v", want, err)
		}
	}

	moved := t.TempDir()
	nodetest.Node(t, moved)
	if err := os.Rename(filepath.Join(moved, "var/lib/etcd"), filepath.Join(moved, "var/lib/etcd-data")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(moved, "var/lib/etcd"), 0o700) // the kubelet's DirectoryOrCreate
	_, err = preflightOnly(t, b, moved)
	if want := "[preflight] etcd data dir /var/lib/etcd under --root " + moved + " holds no member/"; !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "/etc/kubernetes") {
		t.Errorf("etcd's data dir elsewhere: %v, want only %q", err, want)
	}
}

// TestPreflightListsEveryFailure: a tampered bundle, a missing tool and an
// empty root are all named in one run.
func TestPreflightListsEveryFailure(t *testing.T) {
	b, root := makeBundle(t), t.TempDir()
	bin := t.TempDir()
	nodetest.Recorders(t, bin, "")
	os.Remove(filepath.Join(bin, "crictl"))
	t.Setenv("PATH", bin)
	write(t, filepath.Join(b, "kubernetes/n1/admin.conf"), "another admin.conf\n", 0o600)
	_, err := preflightOnly(t, b, root)
	for _, want := range []string{"[preflight] 4 checks failed", "(1) the bundle does not match report.json: kubernetes/n1/admin.conf (sha256 differs); ", "(2) crictl not found in PATH", "(3) no /etc/kubernetes", "(4) no etcd data dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("the refusal is not one line:\n%v", err)
	}
}

// TestPreflightSaysWhatItDoes: on a kubeadm-shaped root preflight passes
// and says what apply backs up and moves (paths, sizes in human units),
// what it installs, and what rollback restores.
func TestPreflightSaysWhatItDoes(t *testing.T) {
	b, root := makeBundle(t), node(t)
	out, err := preflightOnly(t, b, root)
	if err != nil {
		t.Fatalf("preflight on a kubeadm-shaped root: %v\n%s", err, out)
	}
	bk := "/var/lib/snapshift/backup/n1-"
	for _, want := range []string{
		"[preflight] /etc/kubernetes/manifests has the static pod etcd.yaml; /var/lib/etcd holds an etcd member",
		"[preflight] will back up into " + bk,
		"[preflight]   copy /etc/kubernetes (6 files, 111 B) to " + bk,
		"[preflight]   copy /var/lib/kubelet/config.yaml (83 B) to ",
		"[preflight]   copy /var/lib/kubelet/pki (1 file, 16 B) to ",
		"[preflight]   /etc/enc: absent now (the bundle creates it)",
		"[preflight]   move etcd data dir /var/lib/etcd (2 files, 22 B) to " + bk,
		"[preflight] will install 5 files of kubernetes/n1 under /etc/kubernetes, etcd member m1 (22 B) as /var/lib/etcd",
		"[preflight] the CA changes: will move 2 kubelet-client-*.pem from /var/lib/kubelet/pki into the backup",
		"[preflight] rollback (snapshift node rollback) restores /var/lib/etcd moved back, /etc/enc removed, /var/lib/kubelet/pki from its copy, /var/lib/kubelet/config.yaml from its copy, /etc/kubernetes from its copy, byte for byte",
		"[preflight] passed; nothing changed (--preflight-only)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bytes") {
		t.Errorf("preflight prints raw byte counts:\n%s", out)
	}
	// What it said is what apply backs up.
	if err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}); err != nil {
		t.Fatal(err)
	}
	rec, _ := filepath.Glob(filepath.Join(root, bk+"*", nodeops.RecordFile))
	raw, _ := os.ReadFile(rec[0])
	for _, want := range []string{`"path": "/etc/kubernetes",`, `"path": "/etc/enc",
      "how": "absent"`, `"path": "/var/lib/etcd",
      "how": "moved",`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("backup.json does not record %s:\n%s", want, raw)
		}
	}
}
