package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
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

// TestCertsKeyAlgorithmValidityClusterName: kubeadm-config's
// encryptionAlgorithm, certificateValidityPeriod, caCertificateValidityPeriod
// and clusterName as flags: every key of --all is of that type, every
// certificate that long-lived, every kubeconfig's cluster so named;
// --renew keeps the CA's key type when no algorithm is given.
func TestCertsKeyAlgorithmValidityClusterName(t *testing.T) {
	dir := t.TempDir()
	certDir := filepath.Join(dir, "pki")
	start := time.Now()
	if r := run(t, "certs", "--all", "--cert-dir", certDir, "--kubeconfig-dir", dir, "--service-cidr", "192.168.0.0/16",
		"--node-name", "cp1", "--apiserver-advertise-address", "10.0.0.10", "--encryption-algorithm", "ECDSA-P384",
		"--certificate-validity-period", "2160h", "--ca-certificate-validity-period", "43800h", "--cluster-name", "prod-eu"); r.code != 0 {
		t.Fatalf("certs --all: exit %d\n%s", r.code, r.stderr)
	}
	checkP384 := func(what string, pemKey []byte) {
		t.Helper()
		k, err := keyutil.ParsePrivateKeyPEM(pemKey)
		if ek, ok := k.(*ecdsa.PrivateKey); err != nil || !ok || ek.Curve != elliptic.P384() {
			t.Errorf("%s: not an ECDSA P-384 key (%T, %v)", what, k, err)
		}
	}
	checkExpiry := func(what string, c *x509.Certificate, d time.Duration) {
		t.Helper()
		if want := start.Add(d); c.NotAfter.Before(want.Add(-time.Minute)) || c.NotAfter.After(want.Add(time.Minute)) {
			t.Errorf("%s: NotAfter %s, want about %s", what, c.NotAfter, want)
		}
	}
	for _, base := range []string{"ca", "apiserver", "etcd/ca", "etcd/peer", "front-proxy-client", "sa"} {
		b, err := os.ReadFile(filepath.Join(certDir, base+".key"))
		if err != nil {
			t.Fatal(err)
		}
		checkP384(base+".key", b)
		if base == "sa" {
			continue
		}
		c := readCertFile(t, filepath.Join(certDir, base+".crt"))
		if c.IsCA {
			checkExpiry(base, c, 43800*time.Hour)
		} else {
			checkExpiry(base, c, 2160*time.Hour)
		}
	}
	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, "kubelet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kc.Clusters["prod-eu"]; !ok || kc.CurrentContext != "system:node:cp1@prod-eu" {
		t.Errorf("kubelet.conf: context %q, clusters %v", kc.CurrentContext, kc.Clusters)
	}
	for _, ai := range kc.AuthInfos {
		checkP384("kubelet.conf client key", ai.ClientKeyData)
	}
	// --renew without --encryption-algorithm: the CA key's type.
	if r := run(t, "certs", "--renew", "apiserver", "--cert-dir", certDir, "--old-service-cidr", "192.168.0.0/16", "--service-cidr", "172.24.0.0/16"); r.code != 0 {
		t.Fatalf("certs --renew apiserver: exit %d\n%s", r.code, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(certDir, "apiserver.key"))
	checkP384("renewed apiserver.key", b)
	r := run(t, "certs", "--all", "--cert-dir", filepath.Join(dir, "x"), "--service-cidr", "10.96.0.0/12", "--node-name", "cp1",
		"--apiserver-advertise-address", "10.0.0.10", "--encryption-algorithm", "ED25519")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--encryption-algorithm") {
		t.Errorf("an unknown algorithm: exit %d, %s", r.code, r.stderr)
	}
}

func readCertFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertsQuiet: --quiet prints nothing but errors, for --all and for
// --kubeconfig-user alike (the lab writes its kubeconfigs so), and the
// files are still written; -o json still prints its report.
func TestCertsQuiet(t *testing.T) {
	dir := t.TempDir()
	certDir := filepath.Join(dir, "pki")
	r := run(t, "certs", "--all", "--cert-dir", certDir, "--kubeconfig-dir", dir, "--service-cidr", "172.24.0.0/16",
		"--node-name", "cp1", "--apiserver-advertise-address", "10.0.0.10", "--quiet")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("certs --all --quiet: exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(dir, "kube-proxy.conf")
	r = run(t, "certs", "--cert-dir", certDir, "--kubeconfig-user", "system:kube-proxy", "--kubeconfig-out", out,
		"--control-plane-endpoint", "k8s-api.internal:6443", "--quiet")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Errorf("certs --kubeconfig-user --quiet: exit %d, stdout %q, stderr %q; want 0 and nothing", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("certs --kubeconfig-user --quiet wrote no kubeconfig: %v", err)
	}
	r = run(t, "certs", "--cert-dir", certDir, "--kubeconfig-user", "system:kube-proxy", "--kubeconfig-out", out,
		"--control-plane-endpoint", "k8s-api.internal:6443", "--quiet", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"kind": "CertsResultList"`) {
		t.Errorf("certs --quiet -o json: exit %d, stdout %q; want its JSON report", r.code, r.stdout)
	}
}

// TestCertsRefusesBeforeItSaysItWrites: a mode missing what it needs is
// refused in one line, before the note on how files are written (which
// told a reader that writing had begun).
func TestCertsRefusesBeforeItSaysItWrites(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"certs", "--renew", "apiserver", "--cert-dir", dir, "--service-cidr", newSvc}, "snapshift: renewing the apiserver certificate: --old-service-cidr is required"},
		{[]string{"certs", "--all", "--cert-dir", filepath.Join(dir, "pki")}, "snapshift: generating a new PKI: --service-cidr is required"},
	} {
		r := run(t, c.args...)
		if r.code != ExitUsage || r.stderr != c.want+"\n" {
			t.Errorf("snapshift %s: exit %d, stderr %q; want exit %d and the one line %q", strings.Join(c.args, " "), r.code, r.stderr, ExitUsage, c.want)
		}
	}
}
