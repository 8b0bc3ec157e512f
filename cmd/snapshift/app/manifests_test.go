package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestsCommand rewrites kubeadm 1.36 manifests for the seed
// migration: only the three flag lines change, the originals are kept
// outside the manifest dir, and a second run changes nothing.
func TestManifestsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	src := "../../../manifests/testdata/kubeadm-v1.36.3/ipv4"
	orig := map[string]string{}
	for _, f := range []string{"kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml", "etcd.yaml"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		orig[f] = string(b)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"snapshift", "manifests", "--manifest-dir", dir, "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16"}
	var out, errb bytes.Buffer
	if code := Main(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	changed := 0
	for f, before := range orig {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		bl, al := strings.Split(before, "\n"), strings.Split(string(b), "\n")
		if len(bl) != len(al) {
			t.Fatalf("%s: %d lines became %d", f, len(bl), len(al))
		}
		for i := range bl {
			if bl[i] != al[i] {
				changed++
				if !strings.Contains(al[i], "172.24.0.0/16") && !strings.Contains(al[i], "10.55.0.0/16") {
					t.Errorf("%s:%d changed unexpectedly: %q -> %q", f, i+1, bl[i], al[i])
				}
			}
		}
	}
	if changed != 3 {
		t.Errorf("%d lines changed, want 3 (apiserver and controller-manager service range, cluster-cidr)", changed)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("the manifest dir holds %d files: a backup there would run as a static pod", len(entries))
	}
	if _, err := os.Stat(dir + "-backup/kube-apiserver.yaml.bak"); err != nil {
		t.Errorf("no backup of the original: %v", err)
	}
	out.Reset()
	if code := Main(args, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "nothing to change") {
		t.Errorf("second run: exit %d, %q", code, out.String())
	}
}

// TestManifestsGenerateInitialCluster generates one member of a
// three-member etcd: its etcd.yaml names all three in --initial-cluster
// (the lab found it named the member alone, so each node started a
// cluster of its own), --quiet prints nothing, and a list without this
// node's member is refused.
func TestManifestsGenerateInitialCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	cluster := "cp1=https://10.0.0.11:2380,cp2=https://10.0.0.14:2380,cp3=https://10.0.0.15:2380"
	base := []string{"snapshift", "manifests", "--generate", "--quiet", "--out-dir", dir, "--kubernetes-version", "v1.36.3",
		"--node-name", "cp2", "--apiserver-advertise-address", "10.0.0.14", "--service-cidr", "192.168.0.0/16",
		"--etcd-member", "cp2=https://10.0.0.14:2380"}
	var out, errb bytes.Buffer
	if code := Main(append(base, "--initial-cluster", cluster), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	if out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("--quiet printed %q %q", out.String(), errb.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--initial-cluster=" + cluster, "--name=cp2", "--listen-client-urls=https://127.0.0.1:2379,https://10.0.0.14:2379"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("etcd.yaml lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "initial-cluster-state") {
		t.Errorf("etcd.yaml sets --initial-cluster-state; a new cluster needs none:\n%s", b)
	}
	out.Reset()
	errb.Reset()
	code := Main(append(base, "--initial-cluster", "cp1=https://10.0.0.11:2380,cp3=https://10.0.0.15:2380"), strings.NewReader(""), &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "does not list this node's member cp2") {
		t.Errorf("a list without cp2: exit %d, %q", code, errb.String())
	}
}
