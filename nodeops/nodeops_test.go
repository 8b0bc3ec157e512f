package nodeops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/nodetest"
	"github.com/snapshift/snapshift/nodeops"
)

// The end-to-end proof with real etcd and kube-apiserver processes is
// e2e/nodeops_test.go (make e2e). These tests run apply and rollback
// in-process on a small hand-made bundle, with recorders for systemctl,
// crictl and ip first in PATH and no health gates.

func write(t *testing.T, p, s string, mode os.FileMode) { nodetest.Write(t, p, s, mode) }

// makeBundle makes a one-node bundle (node n1 at 127.0.0.1, member m1).
func makeBundle(t *testing.T) string {
	dir := t.TempDir()
	nodetest.Bundle(t, dir)
	return dir
}

// node makes a kubeadm-shaped root and recorders (logging to calls.log,
// first in PATH); it returns the root.
func node(t *testing.T) string {
	root := t.TempDir()
	nodetest.Node(t, root)
	bin := filepath.Join(root, "recorder")
	nodetest.Recorders(t, bin, filepath.Join(root, "calls.log"))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	return root
}

// tree is every path under root/dirs with its mode and content or target.
func tree(t *testing.T, root string, dirs ...string) map[string]string {
	return nodetest.Tree(t, root, dirs...)
}

func TestApplyRefusesATamperedBundle(t *testing.T) {
	b, root := makeBundle(t), node(t)
	before := tree(t, root, "etc", "var")
	write(t, filepath.Join(b, "kubernetes/n1/pki/ca.key"), "another key\n", 0o600)
	_, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true})
	if err == nil || !strings.Contains(err.Error(), "kubernetes/n1/pki/ca.key (sha256 differs)") {
		t.Fatalf("Apply on a tampered bundle: %v", err)
	}
	if after := tree(t, root, "etc", "var"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused apply changed the node")
	}
	if _, err := nodeops.Apply(context.Background(), nodeops.Config{Bundle: b, Node: "n2", Root: root}); err == nil || !strings.Contains(err.Error(), "has no node \"n2\" (it has n1)") {
		t.Errorf("Apply for an unknown node: %v", err)
	}
}

func TestApplyRollback(t *testing.T) {
	b, root := makeBundle(t), node(t)
	before := tree(t, root, "etc", "var")
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
	for round := 1; round <= 2; round++ { // the second round applies again after a rollback
		if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: Apply: %v", round, err)
		}
		checkApplied(t, root)
		rec, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-*", nodeops.RecordFile))
		first, _ := os.ReadFile(rec[0])
		if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: a second Apply: %v", round, err)
		}
		if again, _ := os.ReadFile(rec[0]); string(again) != string(first) {
			t.Errorf("round %d: a second Apply changed the backup record", round)
		}
		checkApplied(t, root)
		if _, err := nodeops.Rollback(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: Rollback: %v", round, err)
		}
		checkRolledBack(t, root, before, fmt.Sprintf("round %d: ", round))
	}
	calls, _ := os.ReadFile(filepath.Join(root, "calls.log"))
	// flannel's agent is stopped before its state goes (crictl ps by name).
	if !strings.Contains(string(calls), "--name ^kube-flannel$") || strings.Index(string(calls), "--name ^kube-flannel$") > strings.Index(string(calls), "ip link delete cni0") {
		t.Errorf("CNI cleanup: the agent kube-flannel is not looked up before the links are deleted:\n%s", calls)
	}
	if !strings.Contains(string(calls), "ip link delete cni0") || strings.Contains(string(calls), "ip link delete flannel.1") {
		t.Errorf("CNI cleanup: only the links that exist are deleted:\n%s", calls)
	}
}

// checkRolledBack: after a rollback every path of before is as it was and
// nothing else exists outside var/lib/snapshift (the backups); what names
// the case in each message ("round 2: ", or "").
func checkRolledBack(t *testing.T, root string, before map[string]string, what string) {
	t.Helper()
	after := tree(t, root, "etc", "var")
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%safter rollback %s is %q, was %q", what, p, after[p], v)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !strings.HasPrefix(p, "var/lib/snapshift") {
			t.Errorf("%safter rollback %s exists", what, p)
		}
	}
}

// editReport rewrites the bundle's report.json through edit (report.json
// is not in its own checksums).
func editReport(t *testing.T, b string, edit func(*bundle.Report)) {
	t.Helper()
	p := filepath.Join(b, bundle.ReportFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rep bundle.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	edit(&rep)
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	write(t, p, string(out), 0o600)
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

// TestRollbackReadsAnOldRecord: a backup.json written before the steps
// were typed (a map of step names) is read: rollback puts everything back.
func TestRollbackReadsAnOldRecord(t *testing.T) {
	b, root := makeBundle(t), node(t)
	before := tree(t, root, "etc", "var")
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	recs, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-*", nodeops.RecordFile))
	var rec map[string]any
	raw, _ := os.ReadFile(recs[0])
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	delete(rec, "steps")
	rec["done"] = map[string]bool{"backup": true, "static-pods-stopped": true, "etcd-moved": true, "etcd-installed": true, "installed": true}
	raw, _ = json.Marshal(rec)
	write(t, recs[0], string(raw), 0o600)
	if _, err := nodeops.Rollback(context.Background(), cfg); err != nil {
		t.Fatalf("Rollback with an old record: %v", err)
	}
	after := tree(t, root, "etc", "var")
	for p, v := range before {
		if after[p] != v {
			t.Errorf("after rollback %s is %q, was %q", p, after[p], v)
		}
	}
	if raw, _ := os.ReadFile(recs[0]); !strings.Contains(string(raw), `"rolledBack": true`) || !strings.Contains(string(raw), `"steps": [`) {
		t.Errorf("the record after rollback:\n%s", raw)
	}
}

// TestRollbackPutsTheAPIServerBack: the node as the runbook leaves it
// before the snapshot (manifests copied to manifests.before-snapshift,
// kube-apiserver.yaml taken out): apply backs that up, and rollback brings
// the old control plane back whole, kube-apiserver.yaml from the copy,
// byte for byte; the copy stays.
func TestRollbackPutsTheAPIServerBack(t *testing.T) {
	b, root := makeBundle(t), node(t)
	man := filepath.Join(root, "etc/kubernetes/manifests")
	before := filepath.Join(root, bundle.ManifestsBefore)
	write(t, filepath.Join(man, "kube-apiserver.yaml"), "old apiserver manifest\n", 0o600)
	if out, err := exec.Command("cp", "-a", man, before).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	want := tree(t, root, "etc", "var")
	if err := os.Remove(filepath.Join(man, "kube-apiserver.yaml")); err != nil {
		t.Fatal(err)
	}
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if _, err := nodeops.Rollback(context.Background(), cfg); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	after := tree(t, root, "etc", "var")
	for p, v := range want {
		if after[p] != v {
			t.Errorf("after rollback %s is %q, want %q", p, after[p], v)
		}
	}
}

// recoveryBundle makes the one-node bundle with report.json's
// operation.recovery set, as a rebuild file's recovery: true writes it.
func recoveryBundle(t *testing.T) string {
	b := makeBundle(t)
	editReport(t, b, func(rep *bundle.Report) { rep.Operation.Recovery = true })
	return b
}

// TestApplyRecovery (issue 51 item 7): a control-plane node that lost its
// /etc/kubernetes (every certificate, kubeconfig and static-pod manifest)
// is refused by a planned migration's bundle, naming what is missing, and
// accepted by a recovery's: apply says what was lost, moves the surviving
// etcd data dir into its backup, installs the bundle, and rollback puts
// the node back as it was (lost). A node that lost its etcd data dir too
// (the harder case: a new machine) is applied the same way.
func TestApplyRecovery(t *testing.T) {
	for _, tc := range []struct {
		name string
		lost []string
	}{
		{"etc/kubernetes lost", []string{"etc/kubernetes"}},
		{"etc/kubernetes and the data dir lost", []string{"etc/kubernetes", "var/lib/etcd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := node(t)
			for _, p := range tc.lost {
				if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
					t.Fatal(err)
				}
			}
			before := tree(t, root, "etc", "var")
			cfg := nodeops.Config{Bundle: makeBundle(t), Node: "n1", Root: root, SkipHealth: true}
			if _, err := nodeops.Apply(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no /etc/kubernetes under --root") {
				t.Fatalf("a planned migration's apply on a node without /etc/kubernetes: %v", err)
			}
			if after := tree(t, root, "etc", "var"); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("a refused apply changed the node")
			}
			var out strings.Builder
			cfg.Bundle, cfg.Out = recoveryBundle(t), &out
			if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
				t.Fatalf("a recovery's apply: %v\n%s", err, out.String())
			}
			want := "[preflight] recovery: no /etc/kubernetes"
			if len(tc.lost) == 2 {
				want += ", no etcd data dir /var/lib/etcd"
			}
			if !strings.Contains(out.String(), want) {
				t.Errorf("apply's output does not say %q:\n%s", want, out.String())
			}
			for p, want := range map[string]string{"etc/kubernetes/pki/ca.crt": "-rw-r--r-- new ca\n", "etc/kubernetes/manifests/etcd.yaml": "-rw------- new etcd manifest\n",
				"var/lib/etcd/member/snap/db": "-rw------- new member db\n"} {
				if got := tree(t, root, p)[p]; got != want {
					t.Errorf("%s: %q, want %q", p, got, want)
				}
			}
			db, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-*/*/member/snap/db"))
			if kept := len(tc.lost) == 1; kept != (len(db) == 1) {
				t.Errorf("the surviving data dir in the backup: %v (want it kept: %v)", db, kept)
			}
			if _, err := nodeops.Rollback(context.Background(), cfg); err != nil {
				t.Fatalf("Rollback: %v", err)
			}
			checkRolledBack(t, root, before, "")
		})
	}
}
