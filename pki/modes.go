package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/option"
)

// Operation names, as in Result.Operation.
const (
	OpGenerateAll    = "generate-all"
	OpRenewAPIServer = "renew-apiserver"
	OpRenewEtcd      = "renew-etcd"
	OpKubeconfigs    = "kubeconfigs"
)

// etcdLeaves are the certificates RenewEtcd reissues with the etcd CA.
var etcdLeaves = []string{"etcd-server", "etcd-peer", "etcd-healthcheck-client", "apiserver-etcd-client"}

// doing names an operation in an error's words ("renewing the apiserver
// certificate: ..."): its Op name is for Result, not for the operator.
func doing(op string) string {
	if w, ok := map[string]string{
		OpGenerateAll:    "generating a new PKI",
		OpRenewAPIServer: "renewing the apiserver certificate",
		OpRenewEtcd:      "renewing the etcd certificates",
		OpKubeconfigs:    "writing kubeconfigs",
		OpIssueNode:      "issuing a node's certificates",
	}[op]; ok {
		return w
	}
	return op
}

// requires is what each operation needs set, beyond CertDir.
var requires = map[string][]string{
	OpGenerateAll:    {"ServiceCIDR", "NodeName", "AdvertiseAddress"},
	OpRenewAPIServer: {"ServiceCIDR", "OldServiceCIDR"},
	OpRenewEtcd:      {"NodeName"},
	OpIssueNode:      {"NodeName", "AdvertiseAddress"},
}

// Check validates cfg for operation op (one of the Op names but
// OpKubeconfigs) as the operation itself will, writing nothing: a caller
// checks before it says anything about writing.
func (c Config) Check(op string) error {
	return prepare(&c, op, requires[op]...)
}

// prepare applies defaults, validates, and checks the fields op requires.
func prepare(cfg *Config, op string, required ...string) error {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", doing(op), err)
	}
	return cfg.require(op, required...)
}

// GenerateAll writes a whole new PKI into cfg.CertDir: the three CAs, every
// certificate of Certs and the service-account key pair sa.key/sa.pub.
// CertDir must be empty or missing unless cfg.Force (then every replaced
// file is kept as .bak). It requires ServiceCIDR, NodeName and
// AdvertiseAddress. Everything is built in memory before the first write.
//
// A new CA invalidates every kubeconfig, every node's kubelet client
// certificate and every ServiceAccount token: this is disaster recovery.
func GenerateAll(cfg Config) (Result, error) {
	res := Result{Operation: OpGenerateAll, Dir: cfg.CertDir}
	if err := prepare(&cfg, OpGenerateAll, requires[OpGenerateAll]...); err != nil {
		return res, err
	}
	if !cfg.Force {
		empty, err := fsutil.IsEmptyOrMissingDir(cfg.CertDir)
		if err != nil {
			return res, fmt.Errorf("%s: %w", doing(OpGenerateAll), err)
		}
		if !empty {
			return res, fmt.Errorf("%s: %w", doing(OpGenerateAll), option.Errorf("Force",
				"%s is not empty: a new PKI goes into an empty directory (use {} to replace the files in it; they are kept as .bak): %w", cfg.CertDir, fsutil.ErrExists))
		}
	}
	outs, err := buildAll(cfg)
	if err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpGenerateAll), err)
	}
	if err := mkdirs(cfg.CertDir); err != nil {
		return res, err
	}
	if err := commit(cfg.CertDir, outs, &res, cfg.NoBackup); err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpGenerateAll), err)
	}
	return res, nil
}

// buildAll computes every file of a new PKI.
func buildAll(cfg Config) ([]output, error) {
	start := cfg.Now()
	cas := map[string]*CA{}
	var outs []output
	for _, spec := range Certs() {
		if spec.IsCA() {
			ca, err := newCA(cfg, spec, start)
			if err != nil {
				return nil, err
			}
			cas[spec.Name] = ca
			o, err := certOutputs(spec, ca.Cert, ca.Key)
			if err != nil {
				return nil, err
			}
			outs = append(outs, o...)
			continue
		}
		ca, ok := cas[spec.CAName]
		if !ok {
			return nil, fmt.Errorf("internal error: %s is signed by %q, which is not listed before it", spec.Name, spec.CAName)
		}
		o, _, err := issue(cfg, spec, ca, start)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o...)
	}
	sa, err := serviceAccountOutputs(cfg)
	if err != nil {
		return nil, err
	}
	return append(outs, sa...), nil
}

// issue creates spec's key and certificate signed by ca, with the SANs
// from spec.AltNames, and checks the chain.
func issue(cfg Config, spec CertSpec, ca *CA, start time.Time) ([]output, *x509.Certificate, error) {
	var alt certutil.AltNames
	if spec.AltNames != nil {
		var err error
		if alt, err = spec.AltNames(cfg); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	return issueWith(cfg, spec, alt, ca, start)
}

// reissue is issue for a certificate that may replace one in cfg.CertDir:
// how their SANs differ goes into res.Changes.
func reissue(cfg Config, spec CertSpec, ca *CA, start time.Time, res *Result) ([]output, error) {
	o, cert, err := issue(cfg, spec, ca, start)
	if err != nil {
		return nil, err
	}
	if old, err := loadCert(cfg.CertDir, spec.BaseName); err == nil {
		res.Changes = append(res.Changes, sanDiff(spec.Name, old, cert)...)
	}
	return o, nil
}

func issueWith(cfg Config, spec CertSpec, alt certutil.AltNames, ca *CA, start time.Time) ([]output, *x509.Certificate, error) {
	cert, key, err := newLeaf(cfg, spec, alt, ca, start)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSigned(cert, ca.Cert, spec.Usages, start); err != nil {
		return nil, nil, fmt.Errorf("internal error: new %s certificate does not verify: %w", spec.Name, err)
	}
	o, err := certOutputs(spec, cert, key)
	return o, cert, err
}

// serviceAccountOutputs are sa.key and sa.pub (both 0600, as kubeadm
// writes them).
func serviceAccountOutputs(cfg Config) ([]output, error) {
	key, err := newKey(cfg, ServiceAccountKeyBaseName)
	if err != nil {
		return nil, err
	}
	priv, err := encodeKeyPEM(key)
	if err != nil {
		return nil, fmt.Errorf("sa: %w", err)
	}
	pub, err := encodePublicKeyPEM(key.Public())
	if err != nil {
		return nil, fmt.Errorf("sa: %w", err)
	}
	return []output{
		{rel: ServiceAccountKeyBaseName + ".key", data: priv, perm: KeyPerm, info: File{Kind: KindPrivateKey, Name: ServiceAccountKeyBaseName}},
		{rel: ServiceAccountKeyBaseName + ".pub", data: pub, perm: KeyPerm, info: File{Kind: KindPublicKey, Name: ServiceAccountKeyBaseName}},
	}, nil
}

// RenewAPIServer reissues apiserver.crt and apiserver.key after a Service
// CIDR change, signed by the existing ca.crt/ca.key (left untouched).
//
// The SANs are the existing certificate's, with the first address of each
// OldServiceCIDR range replaced by the first address of the ServiceCIDR
// range of the same family, plus APIServerCertSANs (see
// RenewedAPIServerAltNames). It requires ServiceCIDR and OldServiceCIDR.
// The replaced files are kept as .bak.
func RenewAPIServer(cfg Config) (Result, error) {
	res := Result{Operation: OpRenewAPIServer, Dir: cfg.CertDir}
	if err := prepare(&cfg, OpRenewAPIServer, requires[OpRenewAPIServer]...); err != nil {
		return res, err
	}
	spec, err := CertByName("apiserver")
	if err != nil {
		return res, err
	}
	ca, err := LoadCA(cfg.CertDir, CACertAndKeyBaseName)
	if err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewAPIServer), err)
	}
	old, err := loadCert(cfg.CertDir, spec.BaseName)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w (the SANs are carried over from the existing certificate)", err)
		}
		return res, fmt.Errorf("%s: %w", doing(OpRenewAPIServer), err)
	}
	alt, err := RenewedAPIServerAltNames(old, cfg)
	if err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewAPIServer), err)
	}
	outs, cert, err := issueWith(cfg, spec, alt, ca, cfg.Now())
	if err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewAPIServer), err)
	}
	res.Reused = caFiles(cfg.CertDir, CACertAndKeyBaseName)
	res.Changes = sanDiff(spec.Name, old, cert)
	if old.CheckSignatureFrom(ca.Cert) != nil {
		res.Changes = append(res.Changes, "apiserver: the replaced certificate was not signed by ca.crt; the new one is")
	}
	if err := commit(cfg.CertDir, outs, &res, cfg.NoBackup); err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewAPIServer), err)
	}
	return res, nil
}

// RenewedAPIServerAltNames computes the SANs of a renewed apiserver
// certificate from the existing one: every DNS and IP SAN is kept, except
// that the first address of each OldServiceCIDR range becomes the first
// address of the ServiceCIDR range of the same family; APIServerCertSANs
// are added. It fails when the result would not hold the new "kubernetes"
// Service IP (the first address of the primary ServiceCIDR range): then
// OldServiceCIDR does not match the certificate.
func RenewedAPIServerAltNames(existing *x509.Certificate, cfg Config) (certutil.AltNames, error) {
	cfg.SetDefaults()
	if err := cfg.require("apiserver SANs", "ServiceCIDR", "OldServiceCIDR"); err != nil {
		return certutil.AltNames{}, err
	}
	// A family ServiceCIDR does not name keeps its old range (one family of
	// a dual-stack cluster moves): the primary stays the old list's first.
	if named, err := ServiceCIDRs(cfg.ServiceCIDR); err == nil {
		if old, err := ServiceCIDRs(cfg.OldServiceCIDR); err == nil {
			cfg.ServiceCIDR = cidr.Join(cidr.Complete(named, old))
		}
	}
	oldFirst, err := FirstServiceIPs(cfg.OldServiceCIDR)
	if err != nil {
		return certutil.AltNames{}, fmt.Errorf("old service CIDR: %w", err)
	}
	newFirst, err := FirstServiceIPs(cfg.ServiceCIDR)
	if err != nil {
		return certutil.AltNames{}, fmt.Errorf("service CIDR: %w", err)
	}
	replace := map[netip.Addr]netip.Addr{}
	for _, o := range oldFirst {
		for _, n := range newFirst {
			if o.Is4() == n.Is4() {
				replace[o] = n
			}
		}
	}
	alt := certutil.AltNames{DNSNames: append([]string(nil), existing.DNSNames...)}
	var have []string
	found := false
	for _, ip := range existing.IPAddresses {
		a, ok := addrOf(ip)
		if !ok {
			continue
		}
		have = append(have, a.String())
		if n, ok := replace[a]; ok {
			a = n
		}
		if a == newFirst[0] {
			found = true
		}
		alt.IPs = append(alt.IPs, ipOf(a))
	}
	if !found {
		var olds []string
		for _, o := range oldFirst {
			olds = append(olds, o.String())
		}
		return certutil.AltNames{}, fmt.Errorf("the existing apiserver certificate has no IP SAN %s (first address of the old service CIDR %s) nor %s; its IP SANs are [%s]: check the old service CIDR",
			strings.Join(olds, ", "), cfg.OldServiceCIDR, newFirst[0], strings.Join(have, ", "))
	}
	appendSANs(&alt, cfg.APIServerCertSANs)
	return normalizeAltNames(alt), nil
}

// RenewEtcd reissues etcd/server, etcd/peer, etcd/healthcheck-client and
// apiserver-etcd-client for this node's (new) etcd member, signed by the
// existing etcd/ca (left untouched). The SANs are computed from cfg as
// kubeadm does (EtcdServerAltNames, EtcdPeerAltNames). It requires
// NodeName, and AdvertiseAddress unless the local member has URLs. Call it
// once per control-plane node, with that node's CertDir and NodeName. The
// replaced files are kept as .bak.
func RenewEtcd(cfg Config) (Result, error) {
	res := Result{Operation: OpRenewEtcd, Dir: cfg.CertDir}
	if err := prepare(&cfg, OpRenewEtcd, requires[OpRenewEtcd]...); err != nil {
		return res, err
	}
	if _, err := cfg.localEtcdMember(); err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewEtcd), err)
	}
	ca, err := LoadCA(cfg.CertDir, EtcdCACertAndKeyBaseName)
	if err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewEtcd), err)
	}
	start := cfg.Now()
	var outs []output
	for _, name := range etcdLeaves {
		spec, err := CertByName(name)
		if err != nil {
			return res, err
		}
		o, err := reissue(cfg, spec, ca, start, &res)
		if err != nil {
			return res, fmt.Errorf("%s: %w", doing(OpRenewEtcd), err)
		}
		outs = append(outs, o...)
	}
	res.Reused = caFiles(cfg.CertDir, EtcdCACertAndKeyBaseName)
	if err := commit(cfg.CertDir, outs, &res, cfg.NoBackup); err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpRenewEtcd), err)
	}
	return res, nil
}

func caFiles(dir, base string) []string {
	p := filepath.Join(dir, base)
	return []string{p + ".crt", p + ".key"}
}

// OpIssueNode is IssueNode's operation name.
const OpIssueNode = "issue-node"

// NodeLeaves are the certificates kubeadm makes on each control-plane node
// (kubeadm join --control-plane copies only the CAs and sa.key): every leaf
// of Certs. The CAs and the service-account key are shared by all nodes.
func NodeLeaves() []string {
	var out []string
	for _, s := range Certs() {
		if !s.IsCA() {
			out = append(out, s.Name)
		}
	}
	return out
}

// IssueNode issues the named leaf certificates (all of NodeLeaves when none
// are named) for the node cfg describes — its NodeName, AdvertiseAddress
// and etcd member — with kubeadm's SANs, signed by the CAs already in
// cfg.CertDir (left untouched). This is how each further control-plane
// node of a rebuild gets its own identity from the shared CAs. It requires
// ServiceCIDR (for the apiserver certificate), NodeName and
// AdvertiseAddress. Replaced files are kept as .bak.
func IssueNode(cfg Config, names ...string) (Result, error) {
	res := Result{Operation: OpIssueNode, Dir: cfg.CertDir}
	if err := prepare(&cfg, OpIssueNode, requires[OpIssueNode]...); err != nil {
		return res, err
	}
	if len(names) == 0 {
		names = NodeLeaves()
	}
	cas := map[string]*CA{}
	start := cfg.Now()
	var outs []output
	for _, name := range names {
		spec, err := CertByName(name)
		if err != nil || spec.IsCA() {
			return res, fmt.Errorf("%s: %q is not a leaf certificate", doing(OpIssueNode), name)
		}
		ca, ok := cas[spec.CAName]
		if !ok {
			caSpec, _ := CertByName(spec.CAName)
			if ca, err = LoadCA(cfg.CertDir, caSpec.BaseName); err != nil {
				return res, fmt.Errorf("%s: %w", doing(OpIssueNode), err)
			}
			cas[spec.CAName] = ca
			res.Reused = append(res.Reused, caFiles(cfg.CertDir, caSpec.BaseName)...)
		}
		o, err := reissue(cfg, spec, ca, start, &res)
		if err != nil {
			return res, fmt.Errorf("%s: %w", doing(OpIssueNode), err)
		}
		outs = append(outs, o...)
	}
	if err := commit(cfg.CertDir, outs, &res, cfg.NoBackup); err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpIssueNode), err)
	}
	return res, nil
}
