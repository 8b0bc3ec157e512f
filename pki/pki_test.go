package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/keyutil"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// wantFiles is the layout GenerateAll writes, in order.
var wantFiles = []string{
	"ca.key", "ca.crt",
	"apiserver.key", "apiserver.crt",
	"apiserver-kubelet-client.key", "apiserver-kubelet-client.crt",
	"front-proxy-ca.key", "front-proxy-ca.crt",
	"front-proxy-client.key", "front-proxy-client.crt",
	"etcd/ca.key", "etcd/ca.crt",
	"etcd/server.key", "etcd/server.crt",
	"etcd/peer.key", "etcd/peer.crt",
	"etcd/healthcheck-client.key", "etcd/healthcheck-client.crt",
	"apiserver-etcd-client.key", "apiserver-etcd-client.crt",
	"sa.key", "sa.pub",
}

func TestCertsList(t *testing.T) {
	want := []struct {
		name, base, ca, cn string
		usages             []x509.ExtKeyUsage
	}{
		{"ca", "ca", "", "kubernetes", nil},
		{"apiserver", "apiserver", "ca", "kube-apiserver", serverAuth},
		{"apiserver-kubelet-client", "apiserver-kubelet-client", "ca", "kube-apiserver-kubelet-client", clientAuth},
		{"front-proxy-ca", "front-proxy-ca", "", "front-proxy-ca", nil},
		{"front-proxy-client", "front-proxy-client", "front-proxy-ca", "front-proxy-client", clientAuth},
		{"etcd-ca", "etcd/ca", "", "etcd-ca", nil},
		{"etcd-server", "etcd/server", "etcd-ca", "cp-1", serverClientAuth},
		{"etcd-peer", "etcd/peer", "etcd-ca", "cp-1", serverClientAuth},
		{"etcd-healthcheck-client", "etcd/healthcheck-client", "etcd-ca", "kube-etcd-healthcheck-client", clientAuth},
		{"apiserver-etcd-client", "apiserver-etcd-client", "etcd-ca", "kube-apiserver-etcd-client", clientAuth},
	}
	got := Certs()
	if len(got) != len(want) {
		t.Fatalf("%d certs, want %d", len(got), len(want))
	}
	seenCA := map[string]bool{}
	cfg := Config{NodeName: "cp-1"}
	for i, w := range want {
		s := got[i]
		cn, org := s.Subject(cfg)
		if s.Name != w.name || s.BaseName != w.base || s.CAName != w.ca || cn != w.cn || len(org) != 0 || !slices.Equal(s.Usages, w.usages) {
			t.Errorf("cert %d = %+v (cn %q), want %+v", i, s, cn, w)
		}
		if s.IsCA() {
			seenCA[s.Name] = true
		} else if !seenCA[s.CAName] {
			t.Errorf("%s is signed by %s, which is not listed before it", s.Name, s.CAName)
		}
	}
}

func TestFirstServiceIPs(t *testing.T) {
	for in, want := range map[string]string{
		"172.24.0.0/16":                    "172.24.0.1",
		"10.96.0.0/12":                     "10.96.0.1",
		"fd00:10:96::/108":                 "fd00:10:96::1",
		"192.168.0.0/16,fd00:10:96::/112":  "192.168.0.1 fd00:10:96::1",
		"fd00:10:96::/112, 192.168.0.0/16": "fd00:10:96::1 192.168.0.1",
	} {
		ips, err := FirstServiceIPs(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var s []string
		for _, ip := range ips {
			s = append(s, ip.String())
		}
		if strings.Join(s, " ") != want {
			t.Errorf("FirstServiceIPs(%q) = %v, want %s", in, s, want)
		}
	}
	for _, bad := range []string{"", "10.96.0.1/12", "10.0.0.0/8,10.1.0.0/16", "10.0.0.1/32", "x"} {
		if _, err := FirstServiceIPs(bad); err == nil {
			t.Errorf("FirstServiceIPs(%q): no error", bad)
		}
	}
}

func TestAPIServerAltNames(t *testing.T) {
	base := testConfig(t, "unused")
	cases := []struct {
		name     string
		mod      func(*Config)
		dns, ips []string
	}{
		{
			name: "kubeadm defaults plus extras",
			mod:  func(*Config) {},
			dns:  []string{"api.example.com", "cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips:  []string{"172.24.0.1", "10.0.0.10", "203.0.113.7"},
		},
		{
			name: "no extras, other domain",
			mod:  func(c *Config) { c.APIServerCertSANs = nil; c.DNSDomain = "corp.internal" },
			dns:  []string{"cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.corp.internal"},
			ips:  []string{"172.24.0.1", "10.0.0.10"},
		},
		{
			name: "control-plane endpoint name and duplicate extras",
			mod: func(c *Config) {
				c.ControlPlaneEndpoint = "lb.example.com:8443"
				c.APIServerCertSANs = []string{"10.0.0.10", "kubernetes", "*.apps.example.com"}
			},
			dns: []string{"*.apps.example.com", "cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "lb.example.com"},
			ips: []string{"172.24.0.1", "10.0.0.10"},
		},
		{
			name: "control-plane endpoint IP",
			mod:  func(c *Config) { c.ControlPlaneEndpoint = "10.0.0.100"; c.APIServerCertSANs = nil },
			dns:  []string{"cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips:  []string{"172.24.0.1", "10.0.0.10", "10.0.0.100"},
		},
		{
			name: "dual stack: the primary range's first IP only, as kubeadm",
			mod: func(c *Config) {
				c.ServiceCIDR = "fd00:10:96::/108,172.24.0.0/16"
				c.AdvertiseAddress = "fd00::10"
				c.APIServerCertSANs = nil
			},
			dns: []string{"cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			ips: []string{"fd00:10:96::1", "fd00::10"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			alt, err := APIServerAltNames(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(alt.DNSNames, tc.dns) || !slices.Equal(ipStrings(alt.IPs), tc.ips) {
				t.Errorf("got DNS %q IP %q\nwant DNS %q IP %q", alt.DNSNames, ipStrings(alt.IPs), tc.dns, tc.ips)
			}
		})
	}
}

func TestEtcdAltNames(t *testing.T) {
	base := testConfig(t, "unused")
	cases := []struct {
		name     string
		mod      func(*Config)
		dns, ips []string
		err      string
	}{
		{
			name: "stacked etcd at the advertise address, as kubeadm",
			mod:  func(*Config) {},
			dns:  []string{"cp-1", "localhost"},
			ips:  []string{"10.0.0.10", "127.0.0.1", "::1"},
		},
		{
			name: "new members, local one by node name",
			mod: func(c *Config) {
				c.AdvertiseAddress = "10.1.0.10"
				c.EtcdMembers = []EtcdMember{
					{Name: "cp-0", PeerURL: "https://10.1.0.9:2380", ClientURL: "https://10.1.0.9:2379"},
					{Name: "cp-1", PeerURL: "https://10.1.0.10:2380", ClientURL: "https://10.1.0.10:2379"},
				}
			},
			dns: []string{"cp-1", "localhost"},
			ips: []string{"10.1.0.10", "127.0.0.1", "::1"},
		},
		{
			name: "single member with its own name and a DNS peer URL",
			mod: func(c *Config) {
				c.AdvertiseAddress = ""
				c.EtcdMembers = []EtcdMember{{Name: "etcd-a", PeerURL: "https://etcd-a.example.com:2380", ClientURL: "https://10.2.0.5:2379"}}
				c.EtcdServerCertSANs = []string{"etcd.example.com", "10.2.0.6"}
			},
			dns: []string{"cp-1", "etcd-a", "etcd-a.example.com", "etcd.example.com", "localhost"},
			ips: []string{"10.2.0.5", "127.0.0.1", "::1", "10.2.0.6"},
		},
		{
			name: "several members, none is the node",
			mod: func(c *Config) {
				c.EtcdMembers = []EtcdMember{{Name: "a"}, {Name: "b"}}
			},
			err: `no member is named after node "cp-1"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			alt, err := EtcdServerAltNames(cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(alt.DNSNames, tc.dns) || !slices.Equal(ipStrings(alt.IPs), tc.ips) {
				t.Errorf("got DNS %q IP %q\nwant DNS %q IP %q", alt.DNSNames, ipStrings(alt.IPs), tc.dns, tc.ips)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := testConfig(t, "/etc/kubernetes/pki")
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no cert dir":         func(c *Config) { c.CertDir = "" },
		"bad service CIDR":    func(c *Config) { c.ServiceCIDR = "172.24.0.1/16" },
		"two IPv4 CIDRs":      func(c *Config) { c.ServiceCIDR = "10.0.0.0/16,10.1.0.0/16" },
		"bad old CIDR":        func(c *Config) { c.OldServiceCIDR = "nope" },
		"bad advertise":       func(c *Config) { c.AdvertiseAddress = "10.0.0" },
		"bad node name":       func(c *Config) { c.NodeName = "CP_1" },
		"bad extra SAN":       func(c *Config) { c.APIServerCertSANs = []string{"not a name"} },
		"bad endpoint port":   func(c *Config) { c.ControlPlaneEndpoint = "lb:99999" },
		"bad etcd URL":        func(c *Config) { c.EtcdMembers = []EtcdMember{{Name: "a", PeerURL: "10.0.0.1:2380"}} },
		"duplicate member":    func(c *Config) { c.EtcdMembers = []EtcdMember{{Name: "a"}, {Name: "a"}} },
		"unknown algorithm":   func(c *Config) { c.KeyAlgorithm = "DSA" },
		"negative validity":   func(c *Config) { c.CertValidity = -1 },
		"bad bind port":       func(c *Config) { c.APIServerBindPort = 70000 },
		"bad etcd extra SANs": func(c *Config) { c.EtcdPeerCertSANs = []string{"a b"} },
	} {
		c := ok
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

// readPEMCert reads a certificate file.
func readPEMCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	dir, base := filepath.Split(path)
	c, err := loadCert(dir, strings.TrimSuffix(base, ".crt"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verify checks cert chains to ca for usages (and host, when not "").
func verify(t *testing.T, cert, ca *x509.Certificate, usages []x509.ExtKeyUsage, host string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: usages, DNSName: host, CurrentTime: testNow}); err != nil {
		t.Errorf("%s does not verify against %s for %v %q: %v", cert.Subject.CommonName, ca.Subject.CommonName, usages, host, err)
	}
}

// snapshot reads every regular file under dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestGenerateAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	cfg := testConfig(t, dir)
	res, err := GenerateAll(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// Layout, order, modes.
	var got []string
	for _, f := range res.Files {
		rel, _ := filepath.Rel(dir, f.Path)
		got = append(got, rel)
		if f.Backup != "" {
			t.Errorf("%s: backup %s in an empty dir", rel, f.Backup)
		}
	}
	if !slices.Equal(got, wantFiles) {
		t.Fatalf("files %q\nwant %q", got, wantFiles)
	}
	files := snapshot(t, dir)
	if len(files) != len(wantFiles) {
		t.Errorf("dir holds %d files (temporary files left?): %v", len(files), slices.Sorted(func(yield func(string) bool) {
			for k := range files {
				if !yield(k) {
					return
				}
			}
		}))
	}
	for _, rel := range wantFiles {
		want := os.FileMode(0o644)
		if strings.HasSuffix(rel, ".key") || rel == "sa.pub" {
			want = 0o600
		}
		if m := mode(t, filepath.Join(dir, rel)); m != want {
			t.Errorf("%s mode %o, want %o", rel, m, want)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, "etcd")} {
		if m := mode(t, d); m != 0o700 {
			t.Errorf("%s mode %o, want 0700", d, m)
		}
	}

	// Every certificate: subject, CA flag, validity, key pair, chain.
	cas := map[string]*x509.Certificate{}
	for _, spec := range Certs() {
		cert := readPEMCert(t, filepath.Join(dir, spec.BaseName+".crt"))
		cn, _ := spec.Subject(cfg)
		if cert.Subject.CommonName != cn || len(cert.Subject.Organization) != 0 {
			t.Errorf("%s: subject %v, want CN=%s", spec.Name, cert.Subject, cn)
		}
		if cert.IsCA != spec.IsCA() {
			t.Errorf("%s: IsCA %v", spec.Name, cert.IsCA)
		}
		if !slices.Equal(cert.ExtKeyUsage, spec.Usages) {
			t.Errorf("%s: usages %v, want %v", spec.Name, cert.ExtKeyUsage, spec.Usages)
		}
		validity := DefaultCertValidity
		if spec.IsCA() {
			validity = DefaultCAValidity
			cas[spec.Name] = cert
			if !slices.Equal(cert.DNSNames, []string{cn}) || len(cert.IPAddresses) != 0 {
				t.Errorf("%s: CA SANs %v %v, want DNS %s", spec.Name, cert.DNSNames, cert.IPAddresses, cn)
			}
			if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
				t.Errorf("%s: no certSign", spec.Name)
			}
		}
		if !cert.NotBefore.Equal(testNow.Add(-CertificateBackdate)) || !cert.NotAfter.Equal(testNow.Add(validity)) {
			t.Errorf("%s: valid %s to %s", spec.Name, cert.NotBefore, cert.NotAfter)
		}
		if _, err := tls.LoadX509KeyPair(filepath.Join(dir, spec.BaseName+".crt"), filepath.Join(dir, spec.BaseName+".key")); err != nil {
			t.Errorf("%s: key pair: %v", spec.Name, err)
		}
		if spec.IsCA() {
			verify(t, cert, cert, nil, "")
			continue
		}
		ca := cas[spec.CAName]
		for _, u := range spec.Usages {
			verify(t, cert, ca, []x509.ExtKeyUsage{u}, "")
		}
		// And not by another CA.
		for name, other := range cas {
			if name != spec.CAName {
				if err := checkSigned(cert, other, spec.Usages, testNow); err == nil {
					t.Errorf("%s verifies against %s", spec.Name, name)
				}
			}
		}
	}

	// SANs, exactly.
	api := readPEMCert(t, filepath.Join(dir, "apiserver.crt"))
	wantSANs(t, "apiserver", api,
		[]string{"api.example.com", "cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]string{"172.24.0.1", "10.0.0.10", "203.0.113.7"})
	for _, host := range []string{"kubernetes.default.svc", "172.24.0.1", "10.0.0.10", "cp-1"} {
		verify(t, api, cas["ca"], serverAuth, host)
	}
	for _, base := range []string{"etcd/server", "etcd/peer"} {
		c := readPEMCert(t, filepath.Join(dir, base+".crt"))
		wantSANs(t, base, c, []string{"cp-1", "localhost"}, []string{"10.0.0.10", "127.0.0.1", "::1"})
		verify(t, c, cas["etcd-ca"], serverAuth, "localhost")
	}
	for _, base := range []string{"apiserver-kubelet-client", "front-proxy-client", "etcd/healthcheck-client", "apiserver-etcd-client"} {
		wantSANs(t, base, readPEMCert(t, filepath.Join(dir, base+".crt")), nil, nil)
	}

	// sa.pub is sa.key's public key.
	saKey, err := loadKey(dir, "sa")
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := keyutil.PublicKeysFromFile(filepath.Join(dir, "sa.pub"))
	if err != nil || len(pubs) != 1 || !publicKeysEqual(pubs[0], saKey.Public()) {
		t.Errorf("sa.pub does not match sa.key (%v)", err)
	}
	if _, ok := saKey.(*rsa.PrivateKey); !ok {
		t.Errorf("sa.key is %T", saKey)
	}

	// The result describes certificates without key material.
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte("PRIVATE")) || bytes.Contains(js, []byte("BEGIN")) {
		t.Errorf("result holds PEM data: %s", js)
	}
	for _, f := range res.Files {
		if f.Kind == KindCertificate && (f.Cert == nil || f.Cert.NotAfter.IsZero()) {
			t.Errorf("%s: no certificate description", f.Path)
		}
	}
	if res.Files[3].Cert == nil || !slices.Equal(res.Files[3].Cert.IPAddresses, []string{"172.24.0.1", "10.0.0.10", "203.0.113.7"}) {
		t.Errorf("apiserver result: %+v", res.Files[3].Cert)
	}
	if !res.Expiry().Equal(testNow.Add(DefaultCertValidity)) {
		t.Errorf("expiry %s", res.Expiry())
	}
}

func wantSANs(t *testing.T, name string, c *x509.Certificate, dns, ips []string) {
	t.Helper()
	if !slices.Equal(c.DNSNames, dns) || !slices.Equal(ipStrings(c.IPAddresses), ips) {
		t.Errorf("%s SANs: DNS %q IP %q\nwant DNS %q IP %q", name, c.DNSNames, ipStrings(c.IPAddresses), dns, ips)
	}
}

func TestGenerateAllECDSA(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.KeyAlgorithm = ECDSAP256
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	for _, spec := range Certs() {
		key, err := loadKey(dir, spec.BaseName)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := key.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("%s: key %T", spec.Name, key)
		}
		if spec.IsCA() {
			continue
		}
		ca := readPEMCert(t, filepath.Join(dir, mustSpec(t, spec.CAName).BaseName+".crt"))
		verify(t, readPEMCert(t, filepath.Join(dir, spec.BaseName+".crt")), ca, spec.Usages[:1], "")
	}
	if k, err := loadKey(dir, "sa"); err != nil || k.Public().(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Errorf("sa.key: %T %v", k, err)
	}
}

func mustSpec(t *testing.T, name string) CertSpec {
	t.Helper()
	s, err := CertByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKeySourceMismatch(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	rsaKeys := cfg.Keys
	cfg.KeyAlgorithm = ECDSAP256
	cfg.Keys = KeySourceFunc(func(name string, _ KeyAlgorithm) (crypto.Signer, error) {
		return rsaKeys.PrivateKey(name, RSA2048)
	})
	if _, err := GenerateAll(cfg); err == nil || !strings.Contains(err.Error(), "not ECDSA-P256") {
		t.Fatalf("error %v, want a key type mismatch", err)
	}
	if files := snapshot(t, cfg.CertDir); len(files) != 0 {
		t.Errorf("files written after a failure: %v", files)
	}
}

func TestGenerateAllRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir)
	_, err := GenerateAll(cfg)
	if !errors.Is(err, fsutil.ErrExists) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("error %v, want a refusal", err)
	}
	if files := snapshot(t, dir); len(files) != 1 {
		t.Fatalf("refusal wrote files: %v", files)
	}

	cfg.Force = true
	res, err := GenerateAll(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ca.crt.bak")); string(b) != "old" {
		t.Errorf("ca.crt.bak = %q", b)
	}
	if got := res.Backups(); !slices.Equal(got, []string{filepath.Join(dir, "ca.crt.bak")}) {
		t.Errorf("backups %v", got)
	}

	// Again: every file is backed up, the first backup is never overwritten.
	before := snapshot(t, dir)
	res, err = GenerateAll(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Backups()) != len(wantFiles) {
		t.Errorf("%d backups, want %d", len(res.Backups()), len(wantFiles))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ca.crt.bak")); string(b) != "old" {
		t.Errorf("ca.crt.bak overwritten: %q", b)
	}
	b1, _ := os.ReadFile(filepath.Join(dir, "ca.crt.bak.1"))
	if !bytes.Equal(b1, before["ca.crt"]) {
		t.Errorf("ca.crt.bak.1 is not the previous ca.crt")
	}
	if m := mode(t, filepath.Join(dir, "etcd/ca.key.bak")); m != 0o600 {
		t.Errorf("key backup mode %o", m)
	}
}

func TestRenewAPIServer(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.ServiceCIDR = "192.168.0.0/16"
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	old := readPEMCert(t, filepath.Join(dir, "apiserver.crt"))
	wantSANs(t, "apiserver (old)", old,
		[]string{"api.example.com", "cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]string{"192.168.0.1", "10.0.0.10", "203.0.113.7"})

	renew := cfg
	renew.ServiceCIDR = "172.24.0.0/16"
	renew.OldServiceCIDR = "192.168.0.0/16"
	renew.APIServerCertSANs = nil // keep exactly the existing SANs
	res, err := RenewAPIServer(renew)
	if err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, dir)

	// Exactly the 192.168.0.1 SAN changed.
	cert := readPEMCert(t, filepath.Join(dir, "apiserver.crt"))
	wantSANs(t, "apiserver (renewed)", cert, old.DNSNames, []string{"172.24.0.1", "10.0.0.10", "203.0.113.7"})
	if !slices.Equal(res.Changes, []string{"apiserver: IP SAN 192.168.0.1 -> 172.24.0.1"}) {
		t.Errorf("changes %q", res.Changes)
	}
	if cert.Subject.String() != old.Subject.String() || !slices.Equal(cert.ExtKeyUsage, old.ExtKeyUsage) || cert.SerialNumber.Cmp(old.SerialNumber) == 0 {
		t.Errorf("renewed subject/usages/serial: %v %v %v", cert.Subject, cert.ExtKeyUsage, cert.SerialNumber)
	}
	ca := readPEMCert(t, filepath.Join(dir, "ca.crt"))
	verify(t, cert, ca, serverAuth, "172.24.0.1")
	verify(t, cert, ca, serverAuth, "kubernetes.default.svc.cluster.local")
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")); err != nil {
		t.Errorf("renewed key pair: %v", err)
	}
	if bytes.Equal(after["apiserver.key"], before["apiserver.key"]) {
		t.Errorf("apiserver.key was not renewed")
	}

	// The CA and every other file are byte-identical; the old pair is kept.
	for rel, b := range before {
		if rel == "apiserver.crt" || rel == "apiserver.key" {
			if !bytes.Equal(after[rel+".bak"], b) {
				t.Errorf("%s.bak is not the replaced file", rel)
			}
			continue
		}
		if !bytes.Equal(after[rel], b) {
			t.Errorf("%s changed", rel)
		}
	}
	if len(after) != len(before)+2 {
		t.Errorf("%d files after, want %d", len(after), len(before)+2)
	}
	if m := mode(t, filepath.Join(dir, "apiserver.key")); m != 0o600 {
		t.Errorf("apiserver.key mode %o", m)
	}
	if m := mode(t, filepath.Join(dir, "apiserver.key.bak")); m != 0o600 {
		t.Errorf("apiserver.key.bak mode %o", m)
	}
	if !slices.Equal(res.Reused, []string{filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")}) {
		t.Errorf("reused %v", res.Reused)
	}
	if !slices.Equal(res.Backups(), []string{filepath.Join(dir, "apiserver.key.bak"), filepath.Join(dir, "apiserver.crt.bak")}) {
		t.Errorf("backups %v", res.Backups())
	}

	// Running it again is harmless (the new IP is there already), adds the
	// extra SANs and keeps the first backup.
	renew.APIServerCertSANs = []string{"api2.example.com", "198.51.100.1"}
	res, err = RenewAPIServer(renew)
	if err != nil {
		t.Fatal(err)
	}
	again := readPEMCert(t, filepath.Join(dir, "apiserver.crt"))
	wantSANs(t, "apiserver (again)", again,
		[]string{"api.example.com", "api2.example.com", "cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]string{"172.24.0.1", "10.0.0.10", "203.0.113.7", "198.51.100.1"})
	if b, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt.bak")); !bytes.Equal(b, before["apiserver.crt"]) {
		t.Errorf("apiserver.crt.bak was overwritten")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "apiserver.crt.bak.1")); !bytes.Equal(b, after["apiserver.crt"]) {
		t.Errorf("apiserver.crt.bak.1 is not the previous certificate")
	}
	if !bytes.Equal(snapshot(t, dir)["ca.crt"], before["ca.crt"]) {
		t.Errorf("ca.crt changed")
	}
}

func TestRenewAPIServerDualStack(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.ServiceCIDR = "10.96.0.0/12,fd00:10:96::/112"
	cfg.APIServerCertSANs = []string{"fd00:10:96::1"} // an operator's extra SAN for the IPv6 Service IP
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	renew := cfg
	renew.OldServiceCIDR = cfg.ServiceCIDR
	renew.ServiceCIDR = "172.24.0.0/16,fd00:24::/112"
	renew.APIServerCertSANs = nil
	if _, err := RenewAPIServer(renew); err != nil {
		t.Fatal(err)
	}
	c := readPEMCert(t, filepath.Join(dir, "apiserver.crt"))
	if got := ipStrings(c.IPAddresses); !slices.Equal(got, []string{"172.24.0.1", "10.0.0.10", "fd00:24::1"}) {
		t.Errorf("IP SANs %v", got)
	}
}

// Only one family moves: the other family's Service IP stays in the
// certificate, and an IPv6-only move of an IPv4-primary cluster keeps the
// IPv4 "kubernetes" address (issue 25).
func TestRenewAPIServerOneFamily(t *testing.T) {
	for _, c := range []struct{ named, want string }{
		{"172.24.0.0/16", "172.24.0.1 10.0.0.10 fd00:10:96::1"},
		{"fd00:24::/112", "10.96.0.1 10.0.0.10 fd00:24::1"},
	} {
		dir := t.TempDir()
		cfg := testConfig(t, dir)
		cfg.ServiceCIDR = "10.96.0.0/12,fd00:10:96::/112"
		cfg.APIServerCertSANs = []string{"fd00:10:96::1"}
		if _, err := GenerateAll(cfg); err != nil {
			t.Fatal(err)
		}
		renew := cfg
		renew.OldServiceCIDR, renew.ServiceCIDR, renew.APIServerCertSANs = cfg.ServiceCIDR, c.named, nil
		if _, err := RenewAPIServer(renew); err != nil {
			t.Fatalf("%s: %v", c.named, err)
		}
		crt := readPEMCert(t, filepath.Join(dir, "apiserver.crt"))
		if got := strings.Join(ipStrings(crt.IPAddresses), " "); got != c.want {
			t.Errorf("%s: IP SANs %s, want %s", c.named, got, c.want)
		}
	}
}

func TestRenewAPIServerErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.ServiceCIDR = "192.168.0.0/16"
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string
	}{
		"old CIDR required": {func(c *Config) { c.ServiceCIDR = "172.24.0.0/16" }, "OldServiceCIDR is required"},
		"old CIDR does not match the certificate": {
			func(c *Config) { c.ServiceCIDR = "172.24.0.0/16"; c.OldServiceCIDR = "10.96.0.0/12" },
			"has no IP SAN 10.96.0.1",
		},
		"no CA": {
			func(c *Config) {
				c.CertDir = t.TempDir()
				c.ServiceCIDR = "172.24.0.0/16"
				c.OldServiceCIDR = "192.168.0.0/16"
			},
			"reuses the CA in CertDir",
		},
	} {
		c := cfg
		tc.mod(&c)
		if _, err := RenewAPIServer(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
	after := snapshot(t, dir)
	if len(after) != len(before) {
		t.Errorf("failed renewals wrote files")
	}
}

func TestRenewEtcd(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	if _, err := GenerateAll(cfg); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	renew := cfg
	renew.NodeName = "cp-1"
	renew.AdvertiseAddress = "10.1.0.10"
	renew.EtcdMembers = []EtcdMember{
		{Name: "cp-1", PeerURL: "https://10.1.0.10:2380", ClientURL: "https://10.1.0.10:2379"},
		{Name: "cp-2", PeerURL: "https://10.1.0.11:2380", ClientURL: "https://10.1.0.11:2379"},
	}
	res, err := RenewEtcd(renew)
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, f := range res.Files {
		rel, _ := filepath.Rel(dir, f.Path)
		written = append(written, rel)
	}
	wantWritten := []string{
		"etcd/server.key", "etcd/server.crt", "etcd/peer.key", "etcd/peer.crt",
		"etcd/healthcheck-client.key", "etcd/healthcheck-client.crt",
		"apiserver-etcd-client.key", "apiserver-etcd-client.crt",
	}
	if !slices.Equal(written, wantWritten) {
		t.Errorf("written %q", written)
	}
	after := snapshot(t, dir)
	for rel, b := range before {
		if slices.Contains(wantWritten, rel) {
			if !bytes.Equal(after[rel+".bak"], b) {
				t.Errorf("%s.bak is not the replaced file", rel)
			}
		} else if !bytes.Equal(after[rel], b) {
			t.Errorf("%s changed", rel)
		}
	}
	etcdCA := readPEMCert(t, filepath.Join(dir, "etcd/ca.crt"))
	for _, base := range []string{"etcd/server", "etcd/peer"} {
		c := readPEMCert(t, filepath.Join(dir, base+".crt"))
		wantSANs(t, base, c, []string{"cp-1", "localhost"}, []string{"10.1.0.10", "127.0.0.1", "::1"})
		if c.Subject.CommonName != "cp-1" {
			t.Errorf("%s CN %s", base, c.Subject.CommonName)
		}
		verify(t, c, etcdCA, serverAuth, "10.1.0.10")
		verify(t, c, etcdCA, clientAuth, "")
	}
	for _, base := range []string{"etcd/healthcheck-client", "apiserver-etcd-client"} {
		verify(t, readPEMCert(t, filepath.Join(dir, base+".crt")), etcdCA, clientAuth, "")
	}
	for _, want := range []string{"etcd-server: IP SAN 10.0.0.10 -> 10.1.0.10", "etcd-peer: IP SAN 10.0.0.10 -> 10.1.0.10"} {
		if !slices.Contains(res.Changes, want) {
			t.Errorf("changes %q lack %q", res.Changes, want)
		}
	}

	// A node that is not a member is refused before anything is written.
	bad := renew
	bad.NodeName = "cp-9"
	if _, err := RenewEtcd(bad); err == nil || !strings.Contains(err.Error(), "cp-9") {
		t.Errorf("error %v", err)
	}
	if len(snapshot(t, dir)) != len(after) {
		t.Errorf("refused renewal wrote files")
	}
}

func TestCAHash(t *testing.T) {
	dir := t.TempDir()
	if _, err := GenerateAll(testConfig(t, dir)); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := CAHash(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	// Independently: the SPKI of the CA's private key.
	key, err := loadKey(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
		t.Errorf("CAHash = %s, want %s", got, want)
	}
	if _, err := CAHash([]byte("not a certificate")); err == nil {
		t.Error("CAHash accepted garbage")
	}
}

// ipStrings renders IPs for comparisons.
func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}
