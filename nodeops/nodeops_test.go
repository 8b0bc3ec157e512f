package nodeops_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/nodeops"
	"github.com/snapshift/snapshift/rebuild"
)

// The end-to-end proof with real etcd and kube-apiserver processes is
// e2e/nodeops_test.go (make e2e). These tests run apply and rollback
// in-process on a small hand-made bundle, with recorders for systemctl,
// crictl and ip first in PATH and no health gates.

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

// bundle makes a one-node bundle (node n1 at 127.0.0.1, member m1).
func bundle(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"kubernetes/n1/pki/ca.crt": "new ca\n", "kubernetes/n1/pki/ca.key": "new ca key\n",
		"kubernetes/n1/admin.conf": "new admin.conf\n", "kubernetes/n1/manifests/etcd.yaml": "new etcd manifest\n",
		"kubernetes/n1/host/etc/enc/config.yaml": "encryption config\n", "etcd/m1/member/snap/db": "new member db\n",
	}
	sums := map[string]string{}
	for rel, s := range files {
		write(t, filepath.Join(dir, rel), s, 0o600)
		sum := sha256.Sum256([]byte(s))
		sums[rel] = hex.EncodeToString(sum[:])
	}
	rep := rebuild.Report{Nodes: []rebuild.NodeResult{{Name: "n1", EtcdMember: "m1", AdvertiseAddress: "127.0.0.1", Dir: "kubernetes/n1"}},
		Operation: &rebuild.Operation{EtcdDataDir: "/var/lib/etcd", CAChanged: true, CNI: []string{"flannel"}, ClusterDNS: "172.24.0.10", Checksums: sums}}
	b, _ := json.Marshal(rep)
	write(t, filepath.Join(dir, rebuild.ReportFile), string(b), 0o600)
	return dir
}

// node makes a kubeadm-shaped root and recorders; it returns the root.
func node(t *testing.T) string {
	root := t.TempDir()
	write(t, filepath.Join(root, "etc/kubernetes/pki/ca.crt"), "old ca\n", 0o644)
	write(t, filepath.Join(root, "etc/kubernetes/admin.conf"), "old admin.conf\n", 0o600)
	write(t, filepath.Join(root, "etc/kubernetes/manifests/etcd.yaml"), "old etcd manifest\n", 0o600)
	write(t, filepath.Join(root, "etc/kubernetes/audit/policy.yaml"), "kept: the bundle does not replace it\n", 0o640)
	write(t, filepath.Join(root, "var/lib/etcd/member/snap/db"), "old member db\n", 0o600)
	write(t, filepath.Join(root, "var/lib/kubelet/config.yaml"), "kind: KubeletConfiguration\nclusterDNS:\n- 192.168.0.10\nclusterDomain: cluster.local\n", 0o644)
	write(t, filepath.Join(root, "var/lib/kubelet/pki/kubelet-client-2020-01-01.pem"), "old client cert\n", 0o600)
	if err := os.Symlink("/var/lib/kubelet/pki/kubelet-client-2020-01-01.pem", filepath.Join(root, "var/lib/kubelet/pki/kubelet-client-current.pem")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "run/flannel/subnet.env"), "FLANNEL_SUBNET=10.244.1.1/24\n", 0o644)
	bin := filepath.Join(root, "recorder")
	log := filepath.Join(root, "calls.log")
	for _, tool := range []string{"systemctl", "crictl", "ip"} {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> %s\n", tool, log)
		if tool == "crictl" {
			// What crictl prints on every call of a node without /etc/crictl.yaml
			// (the lab's nodes, many kubeadm nodes): on stderr, never a container ID.
			script += "echo 'time=\"2026-01-01T00:00:00Z\" level=warning msg=\"Config \\\"/etc/crictl.yaml\\\" does not exist\"' >&2\n"
		}
		if tool == "ip" {
			script += "[ \"$1 $2 $3\" = \"link show cni0\" ] && exit 0\n[ \"$2\" = show ] && exit 1\nexit 0\n"
		}
		write(t, filepath.Join(bin, tool), script, 0o755)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return root
}

// tree is every path under root/dirs with its mode and content or target.
func tree(t *testing.T, root string, dirs ...string) map[string]string {
	out := map[string]string{}
	for _, d := range dirs {
		filepath.WalkDir(filepath.Join(root, d), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, _ := os.Lstat(p)
			v := info.Mode().String()
			if info.Mode()&fs.ModeSymlink != 0 {
				l, _ := os.Readlink(p)
				v += " -> " + l
			} else if info.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				v += " " + string(b)
			}
			rel, _ := filepath.Rel(root, p)
			out[rel] = v
			return nil
		})
	}
	return out
}

func TestApplyRefusesATamperedBundle(t *testing.T) {
	b, root := bundle(t), node(t)
	before := tree(t, root, "etc", "var")
	write(t, filepath.Join(b, "kubernetes/n1/pki/ca.key"), "another key\n", 0o600)
	err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true})
	if err == nil || !strings.Contains(err.Error(), "kubernetes/n1/pki/ca.key (sha256 differs)") {
		t.Fatalf("Apply on a tampered bundle: %v", err)
	}
	if after := tree(t, root, "etc", "var"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused apply changed the node")
	}
	if err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n2", Root: root}); err == nil || !strings.Contains(err.Error(), "has no node \"n2\" (it has n1)") {
		t.Errorf("Apply for an unknown node: %v", err)
	}
}

func TestApplyRollback(t *testing.T) {
	b, root := bundle(t), node(t)
	before := tree(t, root, "etc", "var")
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
	for round := 1; round <= 2; round++ { // the second round applies again after a rollback
		if err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: Apply: %v", round, err)
		}
		checkApplied(t, root)
		rec, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-*", nodeops.RecordFile))
		first, _ := os.ReadFile(rec[0])
		if err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: a second Apply: %v", round, err)
		}
		if again, _ := os.ReadFile(rec[0]); string(again) != string(first) {
			t.Errorf("round %d: a second Apply changed the backup record", round)
		}
		checkApplied(t, root)
		if err := nodeops.Rollback(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: Rollback: %v", round, err)
		}
		after := tree(t, root, "etc", "var")
		for p, v := range before {
			if after[p] != v {
				t.Errorf("round %d: after rollback %s is %q, was %q", round, p, after[p], v)
			}
		}
		for p := range after {
			if _, ok := before[p]; !ok && !strings.HasPrefix(p, "var/lib/snapshift") {
				t.Errorf("round %d: after rollback %s exists", round, p)
			}
		}
	}
	calls, _ := os.ReadFile(filepath.Join(root, "calls.log"))
	if !strings.Contains(string(calls), "ip link delete cni0") || strings.Contains(string(calls), "ip link delete flannel.1") {
		t.Errorf("CNI cleanup: only the links that exist are deleted:\n%s", calls)
	}
}

func checkApplied(t *testing.T, root string) {
	t.Helper()
	for p, want := range map[string]string{"etc/kubernetes/pki/ca.crt": "-rw-r--r-- new ca\n", "etc/kubernetes/pki/ca.key": "-rw------- new ca key\n",
		"etc/kubernetes/manifests/etcd.yaml": "-rw------- new etcd manifest\n", "etc/enc/config.yaml": "-rw------- encryption config\n",
		"var/lib/etcd/member/snap/db": "-rw------- new member db\n", "etc/kubernetes/audit/policy.yaml": "-rw-r----- kept: the bundle does not replace it\n",
		"var/lib/kubelet/config.yaml": "-rw-r--r-- kind: KubeletConfiguration\nclusterDNS:\n- 172.24.0.10\nclusterDomain: cluster.local\n"} {
		if got := tree(t, root, p)[p]; got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	if st, _ := os.Stat(filepath.Join(root, "var/lib/etcd")); st.Mode().Perm() != 0o700 {
		t.Errorf("etcd data dir mode %v", st.Mode())
	}
	if m, _ := filepath.Glob(filepath.Join(root, "var/lib/kubelet/pki/kubelet-client-*")); len(m) > 0 {
		t.Errorf("the CA changed and the kubelet's old client certificates are still there: %v", m)
	}
	if _, err := os.Stat(filepath.Join(root, "run/flannel/subnet.env")); err == nil {
		t.Errorf("flannel's subnet.env is still there")
	}
}
