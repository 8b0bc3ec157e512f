package app

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestCertsKubeconfigUser: after a new CA, certs writes a kubeconfig for a
// named identity (kube-proxy on a host outside the control plane): its
// client certificate is signed by the cert dir's CA for that user and its
// groups, it points at the control-plane endpoint, and the file is 0600.
func TestCertsKubeconfigUser(t *testing.T) {
	dir := t.TempDir()
	certDir := filepath.Join(dir, "pki")
	if r := run(t, "certs", "--all", "--cert-dir", certDir, "--kubeconfig-dir", dir, "--service-cidr", "172.24.0.0/16",
		"--node-name", "cp1", "--apiserver-advertise-address", "10.0.0.10"); r.code != 0 {
		t.Fatalf("certs --all: exit %d\n%s", r.code, r.stderr)
	}
	out := filepath.Join(dir, "outside", "kube-proxy.conf")
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "certs", "--cert-dir", certDir, "--kubeconfig-user", "system:kube-proxy", "--kubeconfig-group", "system:node-proxier",
		"--kubeconfig-out", out, "--control-plane-endpoint", "k8s-api.internal:6443"); r.code != 0 {
		t.Fatalf("certs --kubeconfig-user: exit %d\n%s", r.code, r.stderr)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v; want 0600", out, err, fi)
	}
	kc, err := clientcmd.LoadFromFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster].Server != "https://k8s-api.internal:6443" {
		t.Errorf("kubeconfig context %+v, clusters %+v: want the control-plane endpoint", ctx, kc.Clusters)
	}
	block, _ := pem.Decode(kc.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(certDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate does not verify against the cert dir's CA: %v", err)
	}
	if cert.Subject.CommonName != "system:kube-proxy" || !slices.Equal(cert.Subject.Organization, []string{"system:node-proxier"}) {
		t.Errorf("client certificate subject %v, want CN system:kube-proxy, O system:node-proxier", cert.Subject)
	}
	for _, bad := range [][]string{
		{"certs", "--cert-dir", certDir, "--kubeconfig-user", "x"},
		{"certs", "--cert-dir", certDir, "--kubeconfig-user", "x", "--kubeconfig-out", out, "--all"},
		{"certs", "--cert-dir", certDir, "--kubeconfig-out", out},
	} {
		if r := run(t, bad...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage)\n%s", bad, r.code, ExitUsage, r.stderr)
		}
	}
}

// TestCertsEtcdMemberWithClientURL: --etcd-member NAME=PEER_URL,CLIENT_URL,
// the form --help and docs/CLI.md show, is one member (the value is not
// split at its comma), repeatable: the local member's client URL host is
// a SAN of its etcd certificates.
func TestCertsEtcdMemberWithClientURL(t *testing.T) {
	dir := t.TempDir()
	certDir := filepath.Join(dir, "pki")
	if r := run(t, "certs", "--all", "--cert-dir", certDir, "--kubeconfig-dir", dir, "--service-cidr", "172.24.0.0/16",
		"--node-name", "cp1", "--apiserver-advertise-address", "10.0.0.10"); r.code != 0 {
		t.Fatalf("certs --all: exit %d\n%s", r.code, r.stderr)
	}
	r := run(t, "certs", "--renew", "etcd", "--cert-dir", certDir, "--node-name", "cp1",
		"--etcd-member", "cp1=https://10.1.0.11:2380,https://10.2.0.11:2379",
		"--etcd-member", "cp2=https://10.1.0.12:2380,https://10.2.0.12:2379")
	if r.code != 0 {
		t.Fatalf("certs --renew etcd with NAME=PEER_URL,CLIENT_URL: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(certDir, "etcd", "server.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, ip := range cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Contains(ips, "10.1.0.11") || !slices.Contains(ips, "10.2.0.11") || slices.Contains(ips, "10.1.0.12") {
		t.Errorf("etcd/server.crt IP SANs %v: want cp1's peer and client hosts 10.1.0.11 and 10.2.0.11, not cp2's", ips)
	}
}
