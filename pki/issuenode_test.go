package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestIssueNode: a second control-plane node's leaves from the first
// node's CAs (copied): every certificate parses, chains to the shared CA
// and names the second node; keys are 0600; the CAs are not rewritten.
func TestIssueNode(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	cfg := testConfig(t, first)
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	shared := []string{"ca.crt", "ca.key", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key", "sa.key", "sa.pub"}
	for _, f := range shared {
		b, err := os.ReadFile(filepath.Join(first, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(second, f)), 0o700)
		if err := os.WriteFile(filepath.Join(second, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, second)
	n2 := cfg
	n2.CertDir, n2.NodeName, n2.AdvertiseAddress = second, "cp-2", "10.1.0.11"
	n2.EtcdMembers = []EtcdMember{{Name: "etcd-2", PeerURL: "https://10.1.0.11:2380", ClientURL: "https://10.1.0.11:2379"}}
	res, err := IssueNode(n2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 2*len(NodeLeaves()) {
		t.Errorf("%d files written, want %d", len(res.Files), 2*len(NodeLeaves()))
	}
	after := snapshot(t, second)
	for _, f := range shared {
		if string(before[f]) != string(after[f]) {
			t.Errorf("%s rewritten", f)
		}
	}
	ca := readPEMCert(t, filepath.Join(second, "ca.crt"))
	etcdCA := readPEMCert(t, filepath.Join(second, "etcd/ca.crt"))
	api := readPEMCert(t, filepath.Join(second, "apiserver.crt"))
	verify(t, api, ca, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "10.1.0.11")
	if !slices.Contains(api.DNSNames, "cp-2") || slices.Contains(api.DNSNames, cfg.NodeName) {
		t.Errorf("apiserver DNS SANs %v", api.DNSNames)
	}
	peer := readPEMCert(t, filepath.Join(second, "etcd/peer.crt"))
	verify(t, peer, etcdCA, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, "10.1.0.11")
	if peer.Subject.CommonName != "cp-2" || !slices.Contains(peer.DNSNames, "etcd-2") {
		t.Errorf("etcd peer %s %v", peer.Subject.CommonName, peer.DNSNames)
	}
	for _, f := range res.Files {
		if f.Kind == KindPrivateKey && mode(t, f.Path) != KeyPerm {
			t.Errorf("%s: mode %v", f.Path, mode(t, f.Path))
		}
	}
	// Without the CAs there is nothing to sign with.
	n2.CertDir = t.TempDir()
	if _, err := IssueNode(n2, "apiserver"); err == nil {
		t.Error("issued without a CA")
	}
	if _, err := IssueNode(n2, "ca"); err == nil {
		t.Error("issued a CA as a leaf")
	}
}

// TestWriteJoinedKubeconfigs: a further control-plane node gets every
// kubeconfig but super-admin.conf, its kubelet.conf for its own node.
func TestWriteJoinedKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, filepath.Join(dir, "pki"))
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	cfg.NodeName, cfg.AdvertiseAddress = "cp-2", "10.1.0.11"
	res, err := WriteJoinedKubeconfigs(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range res.Files {
		names = append(names, filepath.Base(f.Path))
		if f.Name == KubeletKubeConfigFileName && (f.Cert == nil || f.Cert.CommonName != "system:node:cp-2" || !slices.Equal(f.Cert.Organization, []string{"system:nodes"})) {
			t.Errorf("kubelet.conf: %+v", f.Cert)
		}
	}
	if want := []string{"admin.conf", "kubelet.conf", "controller-manager.conf", "scheduler.conf"}; !slices.Equal(names, want) {
		t.Errorf("wrote %v, want %v", names, want)
	}
}
