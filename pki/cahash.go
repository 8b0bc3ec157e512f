package pki

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	certutil "k8s.io/client-go/util/cert"
)

// CAHash is the value of kubeadm join's --discovery-token-ca-cert-hash for
// a CA certificate (the first one of caCertPEM): "sha256:" and the hex
// SHA-256 of its DER SubjectPublicKeyInfo (kubeadm's pubkeypin.Hash).
func CAHash(caCertPEM []byte) (string, error) {
	certs, err := certutil.ParseCertsPEM(caCertPEM)
	if err != nil {
		return "", fmt.Errorf("CA certificate: %w", err)
	}
	sum := sha256.Sum256(certs[0].RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
