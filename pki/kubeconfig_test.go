package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

func TestWriteKubeconfigs(t *testing.T) {
	root := t.TempDir()
	certDir := filepath.Join(root, "pki")
	cfg := testConfig(t, certDir)
	cfg.ControlPlaneEndpoint = "lb.example.com"
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	res, err := WriteKubeconfigs(cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := snapshot(t, certDir)["ca.crt"]
	ca := readPEMCert(t, filepath.Join(certDir, "ca.crt"))
	api := readPEMCert(t, filepath.Join(certDir, "apiserver.crt"))

	want := []struct {
		file, user, server string
		org                []string
	}{
		{"admin.conf", "kubernetes-admin", "https://lb.example.com:6443", []string{"kubeadm:cluster-admins"}},
		{"super-admin.conf", "kubernetes-super-admin", "https://lb.example.com:6443", []string{"system:masters"}},
		{"kubelet.conf", "system:node:cp-1", "https://10.0.0.10:6443", []string{"system:nodes"}},
		{"controller-manager.conf", "system:kube-controller-manager", "https://10.0.0.10:6443", nil},
		{"scheduler.conf", "system:kube-scheduler", "https://10.0.0.10:6443", nil},
	}
	if len(res.Files) != len(want) {
		t.Fatalf("%d files written", len(res.Files))
	}
	for i, w := range want {
		path := filepath.Join(root, w.file)
		f := res.Files[i]
		if f.Path != path || f.Kind != KindKubeconfig || f.Server != w.server || f.Cert == nil || f.Cert.CommonName != w.user {
			t.Errorf("result %+v", f)
		}
		if m := mode(t, path); m != 0o600 {
			t.Errorf("%s mode %o", w.file, m)
		}
		kc, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatalf("%s: %v", w.file, err)
		}
		if err := clientcmd.Validate(*kc); err != nil {
			t.Errorf("%s: %v", w.file, err)
		}
		ctxName := w.user + "@kubernetes"
		ctx := kc.Contexts[ctxName]
		if kc.CurrentContext != ctxName || ctx == nil || ctx.Cluster != "kubernetes" || ctx.AuthInfo != w.user ||
			len(kc.Clusters) != 1 || len(kc.AuthInfos) != 1 || len(kc.Contexts) != 1 {
			t.Errorf("%s: names: current %q contexts %v", w.file, kc.CurrentContext, kc.Contexts)
			continue
		}
		cluster := kc.Clusters["kubernetes"]
		if cluster.Server != w.server || !bytes.Equal(cluster.CertificateAuthorityData, caPEM) {
			t.Errorf("%s: server %s, CA data equal %v", w.file, cluster.Server, bytes.Equal(cluster.CertificateAuthorityData, caPEM))
		}
		auth := kc.AuthInfos[w.user]
		certs, err := certutil.ParseCertsPEM(auth.ClientCertificateData)
		if err != nil {
			t.Fatal(err)
		}
		cert := certs[0]
		if cert.Subject.CommonName != w.user || !slices.Equal(cert.Subject.Organization, w.org) {
			t.Errorf("%s: subject %v, want CN=%s O=%v", w.file, cert.Subject, w.user, w.org)
		}
		if !slices.Equal(cert.ExtKeyUsage, clientAuth) || cert.IsCA {
			t.Errorf("%s: usages %v", w.file, cert.ExtKeyUsage)
		}
		if !cert.NotBefore.Equal(ca.NotBefore) || !cert.NotAfter.Equal(testNow.Add(DefaultCertValidity)) {
			t.Errorf("%s: valid %s to %s", w.file, cert.NotBefore, cert.NotAfter)
		}
		// The apiserver (client CA = ca.crt) accepts the client certificate.
		verify(t, cert, ca, clientAuth, "")
		if _, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData); err != nil {
			t.Errorf("%s: key pair: %v", w.file, err)
		}

		// The client side: client-go builds a TLS config that presents the
		// certificate and trusts the apiserver's serving certificate.
		rc, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			t.Fatalf("%s: %v", w.file, err)
		}
		if rc.Host != w.server {
			t.Errorf("%s: rest host %s", w.file, rc.Host)
		}
		tc, err := rest.TLSConfigFor(rc)
		if err != nil {
			t.Fatalf("%s: %v", w.file, err)
		}
		if tc.GetClientCertificate == nil && len(tc.Certificates) == 0 {
			t.Errorf("%s: no client certificate in the TLS config", w.file)
		}
		host := "kubernetes.default.svc"
		if _, err := api.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: host, KeyUsages: serverAuth, CurrentTime: testNow}); err != nil {
			t.Errorf("%s: does not trust apiserver.crt: %v", w.file, err)
		}
	}

	// Rewriting keeps the previous files as .bak.
	before := snapshot(t, root)
	res, err = WriteKubeconfigs(cfg, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Backups()) != len(want) {
		t.Errorf("backups %v", res.Backups())
	}
	after := snapshot(t, root)
	if !bytes.Equal(after["admin.conf.bak"], before["admin.conf"]) {
		t.Errorf("admin.conf.bak is not the replaced file")
	}
}

func TestServerURL(t *testing.T) {
	for _, tc := range []struct {
		cpe, adv string
		port     int
		e        Endpoint
		want     string
	}{
		{"", "10.0.0.10", 0, EndpointControlPlane, "https://10.0.0.10:6443"},
		{"lb.example.com:8443", "10.0.0.10", 0, EndpointControlPlane, "https://lb.example.com:8443"},
		{"lb.example.com", "10.0.0.10", 7443, EndpointControlPlane, "https://lb.example.com:7443"},
		{"lb.example.com", "10.0.0.10", 0, EndpointLocal, "https://10.0.0.10:6443"},
		{"[fd00::100]:6443", "fd00::10", 0, EndpointControlPlane, "https://[fd00::100]:6443"},
		{"", "fd00::10", 0, EndpointLocal, "https://[fd00::10]:6443"},
	} {
		got, err := ServerURL(Config{ControlPlaneEndpoint: tc.cpe, AdvertiseAddress: tc.adv, APIServerBindPort: tc.port}, tc.e)
		if err != nil || got != tc.want {
			t.Errorf("ServerURL(%q, %q, %d, %s) = %q, %v; want %q", tc.cpe, tc.adv, tc.port, tc.e, got, err, tc.want)
		}
	}
}

func TestWriteKubeconfigsNeedsCA(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	if _, err := WriteKubeconfigs(cfg, t.TempDir()); err == nil {
		t.Fatal("no error without a CA")
	}
}
