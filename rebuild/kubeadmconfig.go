package rebuild

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/pki"
)

// kubeadm's defaults for the cluster-wide values below
// (cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go).
const (
	defaultDNSDomain   = "cluster.local"
	defaultEtcdDataDir = "/var/lib/etcd"
	defaultCertDir     = "/etc/kubernetes/pki"
)

// kubeadmSettings are the cluster-wide values of kubeadm-config that shape
// every certificate and kubeconfig, resolved once (readConfig): what
// kubeadm itself would use on its next `init phase`, `join` or `certs
// renew`, so that the next kubeadm operation changes nothing.
type kubeadmSettings struct {
	clusterName  string
	keyAlgorithm pki.KeyAlgorithm
	certValidity time.Duration
	caValidity   time.Duration
}

// defaultKubeadmSettings are kubeadm's defaults.
func defaultKubeadmSettings() kubeadmSettings {
	return kubeadmSettings{clusterName: pki.DefaultClusterName, keyAlgorithm: pki.RSA2048,
		certValidity: pki.DefaultCertValidity, caValidity: pki.DefaultCAValidity}
}

// refusef is a refusal of a kubeadm-config value the rebuild cannot
// honour: one sentence naming the field.
func refusef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{migrate.ErrRefused}, args...)...)
}

// honourClusterConfiguration resolves networking.dnsDomain and
// etcd.dataDir (the rebuild file's, else kubeadm-config's, else kubeadm's
// default; a rebuild file that contradicts kubeadm-config is refused: the
// next `kubeadm upgrade` would render kubeadm-config's value) and the
// key algorithm, certificate lifetimes and cluster name kubeadm-config
// sets. A field that cannot be honoured is refused, by name.
func (r *run) honourClusterConfiguration(cc *ClusterConfiguration) error {
	c := r.cfg
	note := func(f string, a ...any) {
		r.report.ClusterConfiguration = append(r.report.ClusterConfiguration, fmt.Sprintf(f, a...))
	}
	var recDomain, recDataDir string
	if cc != nil {
		recDomain = cc.Networking.DNSDomain
		if cc.Etcd.Local != nil {
			recDataDir = cc.Etcd.Local.DataDir
		}
	}
	resolve := func(key string, given *string, recorded, def string) error {
		switch {
		case *given == "" && recorded != "":
			*given = recorded
			if recorded != def {
				note("%s %s kept from kubeadm-config", key, recorded)
			}
		case *given == "":
			*given = def
		case recorded != "" && filepath.Clean(*given) != filepath.Clean(recorded) && *given != recorded:
			return refusef("the rebuild file's %s %q differs from kubeadm-config's %q: snapshift does not change it, and the next kubeadm upgrade would render kubeadm-config's (leave it out of the rebuild file)",
				key, *given, recorded)
		}
		return nil
	}
	if err := resolve("networking.dnsDomain", &c.Networking.DNSDomain, recDomain, defaultDNSDomain); err != nil {
		return err
	}
	if err := resolve("etcd.dataDir", &c.Etcd.DataDir, recDataDir, defaultEtcdDataDir); err != nil {
		return err
	}
	if !filepath.IsAbs(c.Etcd.DataDir) {
		return refusef("etcd.dataDir %q is not an absolute path", c.Etcd.DataDir)
	}
	r.ks = defaultKubeadmSettings()
	if cc == nil {
		return nil
	}
	if d := cc.CertificatesDir; d != "" && filepath.Clean(d) != defaultCertDir {
		return refusef("kubeadm-config certificatesDir %s is not %s: the bundle's manifests and `node apply` use %s, so it cannot be honoured", d, defaultCertDir, defaultCertDir)
	}
	if cc.FeatureGates["RootlessControlPlane"] && c.Manifests.Source == "" {
		return refusef("kubeadm-config featureGates RootlessControlPlane: generated manifests run as root (give manifests.source, the nodes' own manifests, to keep theirs)")
	}
	if err := r.readKubeadmSettings(cc); err != nil {
		return err
	}
	if r.ks != defaultKubeadmSettings() {
		note("new keys %s, certificates valid %s (CAs %s), kubeconfig cluster %q: kubeadm-config's clusterName, encryptionAlgorithm, certificateValidityPeriod and caCertificateValidityPeriod",
			r.ks.keyAlgorithm, r.ks.certValidity, r.ks.caValidity, r.ks.clusterName)
	}
	return nil
}

// readKubeadmSettings reads kubeadm-config's clusterName, key algorithm
// and certificate lifetimes into r.ks.
func (r *run) readKubeadmSettings(cc *ClusterConfiguration) error {
	if cc.ClusterName != "" {
		r.ks.clusterName = cc.ClusterName
	}
	// kubeadm's ClusterConfiguration.EncryptionAlgorithmType: v1beta3's
	// PublicKeysECDSA feature gate, when set, decides; else the field.
	alg := pki.KeyAlgorithm(cc.EncryptionAlgorithm)
	if on, ok := cc.FeatureGates["PublicKeysECDSA"]; ok {
		alg = pki.RSA2048
		if on {
			alg = pki.ECDSAP256
		}
	}
	if alg != "" {
		if !slices.Contains(pki.KeyAlgorithms(), alg) {
			var valid []string
			for _, a := range pki.KeyAlgorithms() {
				valid = append(valid, string(a))
			}
			return refusef("kubeadm-config encryptionAlgorithm %q is not one of %s", alg, strings.Join(valid, ", "))
		}
		r.ks.keyAlgorithm = alg
	}
	if p := cc.CertificateValidityPeriod; p != nil {
		if p.Duration <= 0 {
			return refusef("kubeadm-config certificateValidityPeriod %s is not positive", p.Duration)
		}
		r.ks.certValidity = p.Duration
	}
	if p := cc.CACertificateValidityPeriod; p != nil {
		if p.Duration <= 0 {
			return refusef("kubeadm-config caCertificateValidityPeriod %s is not positive", p.Duration)
		}
		r.ks.caValidity = p.Duration
	}
	return nil
}
