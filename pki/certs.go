package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	cryptorand "crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/snapshift/snapshift/option"
)

// CA is a certificate authority: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// certRequest is what a new certificate says.
type certRequest struct {
	CommonName   string
	Organization []string
	AltNames     certutil.AltNames
	Usages       []x509.ExtKeyUsage
	NotBefore    time.Time
	NotAfter     time.Time
	IsCA         bool
}

// newKey asks the key source for the key named name and checks its type.
func newKey(cfg Config, name string) (crypto.Signer, error) {
	key, err := cfg.Keys.PrivateKey(name, cfg.KeyAlgorithm)
	if err != nil {
		return nil, fmt.Errorf("%s: private key: %w", name, err)
	}
	if key == nil || !keyMatches(key, cfg.KeyAlgorithm) {
		return nil, fmt.Errorf("%s: the key source returned a key that is not %s", name, cfg.KeyAlgorithm)
	}
	return key, nil
}

// serial is a uniform random value in [1, MaxInt64), as kubeadm's.
func serial(cfg Config) (*big.Int, error) {
	n, err := cryptorand.Int(cfg.Rand, new(big.Int).SetInt64(math.MaxInt64-1))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// createCert signs r for pub with signer (self-signed when signer is nil),
// as kubeadm's NewSignedCert / NewSelfSignedCACert: key usages
// digitalSignature+keyEncipherment (+certSign for a CA), basic constraints.
func createCert(cfg Config, r certRequest, key crypto.Signer, signer *CA) (*x509.Certificate, error) {
	sn, err := serial(cfg)
	if err != nil {
		return nil, err
	}
	keyUsage := x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature
	if r.IsCA {
		keyUsage |= x509.KeyUsageCertSign
	}
	alt := normalizeAltNames(r.AltNames)
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: r.CommonName, Organization: r.Organization},
		DNSNames:              alt.DNSNames,
		IPAddresses:           alt.IPs,
		NotBefore:             r.NotBefore.UTC(),
		NotAfter:              r.NotAfter.UTC(),
		KeyUsage:              keyUsage,
		ExtKeyUsage:           r.Usages,
		BasicConstraintsValid: true,
		IsCA:                  r.IsCA,
	}
	parent, signKey := tmpl, key
	if signer != nil {
		parent, signKey = signer.Cert, signer.Key
	}
	der, err := x509.CreateCertificate(cfg.Rand, tmpl, parent, key.Public(), signKey)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// newCA creates the self-signed CA of spec.
func newCA(cfg Config, spec CertSpec, start time.Time) (*CA, error) {
	key, err := newKey(cfg, spec.Name)
	if err != nil {
		return nil, err
	}
	cn, org := spec.Subject(cfg)
	cert, err := createCert(cfg, certRequest{
		CommonName:   cn,
		Organization: org,
		AltNames:     certutil.AltNames{DNSNames: []string{cn}},
		NotBefore:    start.Add(-CertificateBackdate),
		NotAfter:     start.Add(cfg.CAValidity),
		IsCA:         true,
	}, key, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// newLeaf creates the certificate of spec with SANs alt, signed by ca.
func newLeaf(cfg Config, spec CertSpec, alt certutil.AltNames, ca *CA, start time.Time) (*x509.Certificate, crypto.Signer, error) {
	cn, org := spec.Subject(cfg)
	if cn == "" {
		return nil, nil, fmt.Errorf("%s: empty common name", spec.Name)
	}
	key, err := newKey(cfg, spec.Name)
	if err != nil {
		return nil, nil, err
	}
	cert, err := createCert(cfg, certRequest{
		CommonName:   cn,
		Organization: org,
		AltNames:     alt,
		Usages:       spec.Usages,
		NotBefore:    start.Add(-CertificateBackdate),
		NotAfter:     start.Add(cfg.CertValidity),
	}, key, ca)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	return cert, key, nil
}

// EncodeCertPEM is a certificate as a PEM block.
func EncodeCertPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: cert.Raw})
}

// encodeKeyPEM is keyutil's encoding: PKCS#1 "RSA PRIVATE KEY" or SEC 1
// "EC PRIVATE KEY", as kubeadm writes.
func encodeKeyPEM(key crypto.Signer) ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(key)
}

// encodePublicKeyPEM is a PKIX "PUBLIC KEY" block (sa.pub).
func encodePublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// loadCert reads the first certificate of <dir>/<base>.crt.
func loadCert(dir, base string) (*x509.Certificate, error) {
	certs, err := readPEM(filepath.Join(dir, base+".crt"), certutil.ParseCertsPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// loadKey reads <dir>/<base>.key (RSA or ECDSA).
func loadKey(dir, base string) (crypto.Signer, error) {
	path := filepath.Join(dir, base+".key")
	k, err := readPEM(path, keyutil.ParsePrivateKeyPEM)
	if err != nil {
		return nil, err
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("%s: the private key is neither RSA nor ECDSA", path)
}

// readPEM reads the file at path and parses it with parse; a parse error
// names the file.
func readPEM[T any](path string, parse func([]byte) (T, error)) (T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(data)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// LoadCA reads the CA <dir>/<base>.crt and .key and checks that the
// certificate is a CA and that the key belongs to it.
func LoadCA(dir, base string) (*CA, error) {
	cert, err := loadCert(dir, base)
	if err != nil {
		return nil, caErr(dir, base, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s.crt is not a CA certificate", filepath.Join(dir, base))
	}
	key, err := loadKey(dir, base)
	if err != nil {
		return nil, caErr(dir, base, err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("%s.key does not belong to %s.crt", filepath.Join(dir, base), filepath.Join(dir, base))
	}
	return &CA{Cert: cert, Key: key}, nil
}

func caErr(dir, base string, err error) error {
	if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		return option.Errorf("CertDir", "{} %s does not exist: give the directory that holds the cluster's ca.crt and ca.key (kubeadm's /etc/kubernetes/pki), or {GenerateAll} for a new PKI", dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return option.Errorf("CertDir", "%s.crt and %s.key: not both in %s: this operation reuses the CA in {} (kubeadm's /etc/kubernetes/pki); {GenerateAll} makes a new PKI", base, base, dir)
	}
	return fmt.Errorf("CA %q: %w", filepath.Join(dir, base), err)
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	da, err1 := x509.MarshalPKIXPublicKey(a)
	db, err2 := x509.MarshalPKIXPublicKey(b)
	return err1 == nil && err2 == nil && bytes.Equal(da, db)
}

// checkSigned verifies cert against ca for usages (a self-test before
// anything is written).
func checkSigned(cert *x509.Certificate, ca *x509.Certificate, usages []x509.ExtKeyUsage, at time.Time) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if len(usages) == 0 {
		usages = []x509.ExtKeyUsage{x509.ExtKeyUsageAny}
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: usages, CurrentTime: at})
	return err
}
