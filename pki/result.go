package pki

import (
	"crypto/x509"
	"fmt"
	"strings"
	"time"
)

// FileKind says what a written file holds.
type FileKind string

// File kinds.
const (
	KindCertificate FileKind = "certificate"
	KindPrivateKey  FileKind = "private-key"
	KindPublicKey   FileKind = "public-key"
	KindKubeconfig  FileKind = "kubeconfig"
)

// Result is what an operation did, for the report. It never holds key
// material.
type Result struct {
	// Operation is "generate-all", "renew-apiserver", "renew-etcd" or "kubeconfigs".
	Operation string `json:"operation"`
	// Dir is the directory written to (CertDir, or the kubeconfig dir).
	Dir string `json:"dir"`
	// Files are the files written, in order.
	Files []File `json:"files"`
	// Reused are existing files that were read and left unchanged (the CAs).
	Reused []string `json:"reused,omitempty"`
	// Changes describe, in words, what differs from the replaced files
	// (e.g. "apiserver: IP SAN 192.168.0.1 -> 172.24.0.1").
	Changes []string `json:"changes,omitempty"`
}

// File is one written file.
type File struct {
	Path string   `json:"path"`
	Kind FileKind `json:"kind"`
	// Mode is the permission bits, e.g. "0600".
	Mode string `json:"mode"`
	// Name is the certificate or kubeconfig spec name ("apiserver", "admin.conf").
	Name string `json:"name,omitempty"`
	// Backup is where the replaced file was kept; empty when the file is new.
	Backup string `json:"backup,omitempty"`
	// Cert describes the certificate (for a kubeconfig, its client certificate).
	Cert *CertInfo `json:"cert,omitempty"`
	// Server is a kubeconfig's API server URL.
	Server string `json:"server,omitempty"`
}

// CertInfo is the public description of a certificate.
type CertInfo struct {
	CommonName   string    `json:"commonName"`
	Organization []string  `json:"organization,omitempty"`
	Issuer       string    `json:"issuer"`
	Serial       string    `json:"serial"`
	IsCA         bool      `json:"isCA,omitempty"`
	DNSNames     []string  `json:"dnsNames,omitempty"`
	IPAddresses  []string  `json:"ipAddresses,omitempty"`
	Usages       []string  `json:"usages,omitempty"`
	NotBefore    time.Time `json:"notBefore"`
	NotAfter     time.Time `json:"notAfter"`
}

// DescribeCert is the CertInfo of cert.
func DescribeCert(cert *x509.Certificate) *CertInfo {
	ci := &CertInfo{
		CommonName:   cert.Subject.CommonName,
		Organization: cert.Subject.Organization,
		Issuer:       cert.Issuer.CommonName,
		Serial:       cert.SerialNumber.String(),
		IsCA:         cert.IsCA,
		DNSNames:     cert.DNSNames,
		NotBefore:    cert.NotBefore,
		NotAfter:     cert.NotAfter,
	}
	for _, ip := range cert.IPAddresses {
		ci.IPAddresses = append(ci.IPAddresses, ip.String())
	}
	for _, u := range cert.ExtKeyUsage {
		ci.Usages = append(ci.Usages, usageName(u))
	}
	return ci
}

func usageName(u x509.ExtKeyUsage) string {
	switch u {
	case x509.ExtKeyUsageServerAuth:
		return "server auth"
	case x509.ExtKeyUsageClientAuth:
		return "client auth"
	}
	return fmt.Sprintf("ext-key-usage-%d", u)
}

// sanDiff describes how SAN lists changed, for Result.Changes.
func sanDiff(name string, old, new *x509.Certificate) []string {
	var out []string
	diff := func(kind string, a, b []string) {
		in := func(s string, l []string) bool {
			for _, x := range l {
				if x == s {
					return true
				}
			}
			return false
		}
		var gone, added []string
		for _, s := range a {
			if !in(s, b) {
				gone = append(gone, s)
			}
		}
		for _, s := range b {
			if !in(s, a) {
				added = append(added, s)
			}
		}
		if len(gone) == 1 && len(added) == 1 {
			out = append(out, fmt.Sprintf("%s: %s SAN %s -> %s", name, kind, gone[0], added[0]))
			return
		}
		if len(gone) > 0 {
			out = append(out, fmt.Sprintf("%s: %s SANs removed: %s", name, kind, strings.Join(gone, ", ")))
		}
		if len(added) > 0 {
			out = append(out, fmt.Sprintf("%s: %s SANs added: %s", name, kind, strings.Join(added, ", ")))
		}
	}
	ips := func(c *x509.Certificate) []string {
		var s []string
		for _, ip := range c.IPAddresses {
			s = append(s, ip.String())
		}
		return s
	}
	diff("IP", ips(old), ips(new))
	diff("DNS", old.DNSNames, new.DNSNames)
	if old.Subject.CommonName != new.Subject.CommonName {
		out = append(out, fmt.Sprintf("%s: CN %s -> %s", name, old.Subject.CommonName, new.Subject.CommonName))
	}
	return out
}
