package app

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRebuildThreeNodes runs `snapshift rebuild` on a three-member file
// (testdata/rebuild.yaml's shape) and checks the per-node bundle layout,
// then a file whose member has no IP to advertise (exit 2, YAML path named).
func TestRebuildThreeNodes(t *testing.T) {
	dir := t.TempDir()
	sample, err := filepath.Abs(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rebuild.yaml")
	body := `apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: ` + sample + `
output: ` + filepath.Join(dir, "bundle") + `
networking: {serviceSubnet: 172.24.0.0/16, podSubnet: 10.55.0.0/16}
etcd:
  members:
  - {name: cp1, peerURL: "https://10.0.0.10:2380", clientURL: "https://10.0.0.10:2379"}
  - {name: cp2, nodeName: master-2, peerURL: "https://10.0.0.11:2380", clientURL: "https://10.0.0.11:2379"}
  - {name: cp3, peerURL: "https://10.0.0.12:2380", clientURL: "https://10.0.0.12:2379"}
manifests: {kubernetesVersion: v1.36.3}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "rebuild", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"[node] master-2 (10.0.0.11, etcd member cp2)", "[config] controlPlaneEndpoint 10.0.0.10:6443 kept"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, r.stdout)
		}
	}
	for _, node := range []string{"cp1", "master-2", "cp3"} {
		for _, f := range []string{"kubelet.conf", "admin.conf", "pki/apiserver.crt", "pki/etcd/peer.key", "manifests/etcd.yaml", "manifests/kube-apiserver.yaml"} {
			if _, err := os.Stat(filepath.Join(dir, "bundle", "kubernetes", node, f)); err != nil {
				t.Errorf("bundle: %v", err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bundle", "kubernetes", "pki")); err == nil {
		t.Error("a shared kubernetes/pki directory: every node has its own")
	}
	// RUNBOOK.md names every node: the control-plane nodes' backup
	// directories as node apply makes them (report.json's sha256), the
	// snapshot's workers one line each, in the worker step and the
	// rollback; node apply's --timeout; what to do when one apply fails.
	rb, err := os.ReadFile(filepath.Join(dir, "bundle", "RUNBOOK.md"))
	if err != nil {
		t.Fatal(err)
	}
	rj, err := os.ReadFile(filepath.Join(dir, "bundle", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rj)
	tag := hex.EncodeToString(sum[:])[:12]
	for _, want := range []string{"- `/var/lib/snapshift/backup/master-2-" + tag + "/` on master-2",
		"snapshift node apply --bundle /root/snapshift-bundle --node cp3 --timeout 5m   # on cp3",
		"On each worker: worker-hw1, worker-vm1, as root", "kubectl wait node/worker-vm1 --for=jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'=Unknown --timeout=5m   # STATUS NotReady",
		"B=/var/lib/snapshift/backup/worker-hw1-" + tag + "   # on worker-hw1", `cp -a "$B/etc/kubernetes/." /etc/kubernetes/`,
		"**If one of the applies fails**", "**The point of no return:**"} {
		if !strings.Contains(string(rb), want) {
			t.Errorf("RUNBOOK.md does not say %q", want)
		}
	}
	for _, bad := range []string{"<worker>", "<bundle>", "old join command"} {
		if strings.Contains(string(rb), bad) {
			t.Errorf("RUNBOOK.md says %q", bad)
		}
	}

	bad := strings.Replace(body, `{name: cp3, peerURL: "https://10.0.0.12:2380"`, `{name: cp3, peerURL: "https://etcd-3.example:2380"`, 1)
	bad = strings.Replace(bad, filepath.Join(dir, "bundle"), filepath.Join(dir, "bundle2"), 1)
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, "rebuild", "--config", cfg, "--dry-run")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "etcd.members[2].advertiseAddress") {
		t.Errorf("a member without an IP: exit %d, %s", r.code, r.stderr)
	}
}
