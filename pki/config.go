package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/option"
)

// Defaults, as kubeadm's (cmd/kubeadm/app/constants, apis/kubeadm/v1beta4/defaults.go).
const (
	// DefaultDNSDomain is the cluster DNS domain (networking.dnsDomain).
	DefaultDNSDomain = "cluster.local"
	// DefaultClusterName names the cluster entry of every kubeconfig.
	DefaultClusterName = "kubernetes"
	// DefaultAPIServerBindPort is kube-apiserver's secure port.
	DefaultAPIServerBindPort = 6443
	// DefaultCertValidity is the lifetime of a leaf certificate (one year).
	DefaultCertValidity = 365 * 24 * time.Hour
	// DefaultCAValidity is the lifetime of a CA certificate (ten years).
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
	// CertificateBackdate is subtracted from the start time for NotBefore,
	// to tolerate small clock differences between nodes.
	CertificateBackdate = 5 * time.Minute
	// EtcdClientPort and EtcdPeerPort are the ports kubeadm's etcd listens on.
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
)

// KeyAlgorithm is a private-key type, spelled as kubeadm's
// ClusterConfiguration.encryptionAlgorithm.
type KeyAlgorithm string

// The key algorithms kubeadm supports.
const (
	RSA2048   KeyAlgorithm = "RSA-2048"
	RSA3072   KeyAlgorithm = "RSA-3072"
	RSA4096   KeyAlgorithm = "RSA-4096"
	ECDSAP256 KeyAlgorithm = "ECDSA-P256"
	ECDSAP384 KeyAlgorithm = "ECDSA-P384"
)

// KeyAlgorithms lists the valid values of [Config.KeyAlgorithm].
func KeyAlgorithms() []KeyAlgorithm {
	return []KeyAlgorithm{RSA2048, RSA3072, RSA4096, ECDSAP256, ECDSAP384}
}

// KeySource supplies the private key of one output. name is the spec's name
// ("ca", "apiserver", "etcd-server", "sa", "admin.conf", ...). The key must
// be of algorithm alg.
type KeySource interface {
	PrivateKey(name string, alg KeyAlgorithm) (crypto.Signer, error)
}

// KeySourceFunc adapts a function to [KeySource].
type KeySourceFunc func(name string, alg KeyAlgorithm) (crypto.Signer, error)

// PrivateKey calls f.
func (f KeySourceFunc) PrivateKey(name string, alg KeyAlgorithm) (crypto.Signer, error) {
	return f(name, alg)
}

// GeneratedKeys is the default [KeySource]: a fresh key from crypto/rand
// for every request.
var GeneratedKeys KeySource = KeySourceFunc(func(_ string, alg KeyAlgorithm) (crypto.Signer, error) {
	return GenerateKey(alg)
})

// GenerateKey returns a new private key of algorithm alg.
func GenerateKey(alg KeyAlgorithm) (crypto.Signer, error) {
	switch alg {
	case RSA2048, "":
		return rsa.GenerateKey(cryptorand.Reader, 2048)
	case RSA3072:
		return rsa.GenerateKey(cryptorand.Reader, 3072)
	case RSA4096:
		return rsa.GenerateKey(cryptorand.Reader, 4096)
	case ECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	case ECDSAP384:
		return ecdsa.GenerateKey(elliptic.P384(), cryptorand.Reader)
	}
	return nil, fmt.Errorf("unknown key algorithm %q (valid: %s)", alg, joinAlgs())
}

// KeyAlgorithmOf is the algorithm of key, false when it is none of
// KeyAlgorithms.
func KeyAlgorithmOf(key crypto.Signer) (KeyAlgorithm, bool) {
	for _, alg := range KeyAlgorithms() {
		if keyMatches(key, alg) {
			return alg, true
		}
	}
	return "", false
}

// keyMatches reports whether key is of algorithm alg.
func keyMatches(key crypto.Signer, alg KeyAlgorithm) bool {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		bits := k.N.BitLen()
		return (alg == RSA2048 && bits == 2048) || (alg == RSA3072 && bits == 3072) || (alg == RSA4096 && bits == 4096)
	case *ecdsa.PrivateKey:
		return (alg == ECDSAP256 && k.Curve == elliptic.P256()) || (alg == ECDSAP384 && k.Curve == elliptic.P384())
	}
	return false
}

func joinAlgs() string {
	var s []string
	for _, a := range KeyAlgorithms() {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}

// EtcdMember is one member of the (new) etcd cluster, as given to
// `etcdutl snapshot restore` (--name, --initial-advertise-peer-urls) and
// to etcd's --advertise-client-urls.
type EtcdMember struct {
	// Name is the member name; kubeadm names members after their node.
	Name string `json:"name"`
	// PeerURL is the member's peer URL, e.g. https://10.0.0.5:2380.
	// Optional: its host is added to the etcd certificates' SANs.
	PeerURL string `json:"peerURL,omitempty"`
	// ClientURL is the member's client URL, e.g. https://10.0.0.5:2379.
	// Optional: its host is added to the etcd certificates' SANs.
	ClientURL string `json:"clientURL,omitempty"`
}

// Config describes the PKI to build. Each operation states which fields it
// requires; [Config.Validate] checks the format of every field that is set.
type Config struct {
	// CertDir is the certificate directory (kubeadm's --cert-dir,
	// /etc/kubernetes/pki on a node). Required.
	CertDir string

	// ServiceCIDR is the (new) Service CIDR (kubeadm's --service-cidr),
	// comma-separated for dual stack, primary family first. Its first
	// address (network+1) is the "kubernetes" Service address and an IP SAN
	// of the apiserver certificate; as in kubeadm only the primary range's
	// is used. Required by GenerateAll and RenewAPIServer.
	ServiceCIDR string
	// OldServiceCIDR is the Service CIDR the existing apiserver certificate
	// was issued for. RenewAPIServer replaces the first address of each of
	// its ranges by the first address of the ServiceCIDR range at the same
	// position. It cannot be guessed reliably from the certificate (any IP
	// SAN could be a network's .1), so RenewAPIServer requires it.
	OldServiceCIDR string
	// DNSDomain is the cluster DNS domain. Default "cluster.local".
	DNSDomain string
	// ClusterName names the cluster in the kubeconfig files. Default "kubernetes".
	ClusterName string

	// NodeName is this control-plane node's name: a DNS SAN of the apiserver
	// and etcd certificates, the CN of etcd/server and etcd/peer, and the
	// user of kubelet.conf (system:node:<NodeName>). Required by
	// GenerateAll, RenewEtcd and WriteKubeconfigs.
	NodeName string
	// AdvertiseAddress is this node's API server address (kubeadm's
	// --apiserver-advertise-address): an IP SAN of the apiserver and etcd
	// certificates and the host of the local API endpoint. Required by
	// GenerateAll and WriteKubeconfigs; RenewEtcd needs it unless the local
	// etcd member has URLs.
	AdvertiseAddress string
	// APIServerBindPort is the API server's port. Default 6443.
	APIServerBindPort int
	// ControlPlaneEndpoint is the shared endpoint "host" or "host:port"
	// (kubeadm's --control-plane-endpoint). Optional: when set its host is
	// a SAN of the apiserver certificate and admin.conf/super-admin.conf
	// point to it (port: its own, else APIServerBindPort).
	ControlPlaneEndpoint string
	// APIServerCertSANs are extra SANs of the apiserver certificate, IPs or
	// DNS names (wildcards allowed), as kubeadm's --apiserver-cert-extra-sans.
	APIServerCertSANs []string

	// EtcdMembers are the members of the etcd cluster. This node's member is
	// the one named NodeName (or the only one); the hosts of its URLs are
	// SANs of etcd/server and etcd/peer. When empty, the local member is
	// NodeName at AdvertiseAddress, as kubeadm's stacked etcd.
	EtcdMembers []EtcdMember
	// EtcdServerCertSANs and EtcdPeerCertSANs are extra SANs of etcd/server
	// and etcd/peer (kubeadm's etcd.local.serverCertSANs / peerCertSANs).
	EtcdServerCertSANs []string
	EtcdPeerCertSANs   []string

	// CertValidity is the lifetime of leaf certificates. Default one year.
	CertValidity time.Duration
	// CAValidity is the lifetime of CA certificates. Default ten years.
	CAValidity time.Duration
	// KeyAlgorithm is the type of every new private key. Default RSA-2048.
	KeyAlgorithm KeyAlgorithm

	// Keys supplies private keys. Default: GeneratedKeys (fresh keys).
	Keys KeySource
	// Rand is the randomness for serial numbers and signatures. Default crypto/rand.
	Rand io.Reader
	// Now is the clock. Default time.Now.
	Now func() time.Time

	// Force lets GenerateAll write into a non-empty CertDir (replaced files
	// are still kept as .bak).
	Force bool
	// NoBackup replaces files without keeping a .bak: for a directory that
	// is itself a copy (a rebuild bundle, whose old files stay on the node
	// and in the node's backup), where a .bak would put an old private key
	// where it does not belong.
	NoBackup bool
}

// SetDefaults fills the defaulted fields that are zero.
func (c *Config) SetDefaults() {
	if c.DNSDomain == "" {
		c.DNSDomain = DefaultDNSDomain
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	if c.APIServerBindPort == 0 {
		c.APIServerBindPort = DefaultAPIServerBindPort
	}
	if c.CertValidity == 0 {
		c.CertValidity = DefaultCertValidity
	}
	if c.CAValidity == 0 {
		c.CAValidity = DefaultCAValidity
	}
	if c.KeyAlgorithm == "" {
		c.KeyAlgorithm = RSA2048
	}
	if c.Keys == nil {
		c.Keys = GeneratedKeys
	}
	if c.Rand == nil {
		c.Rand = cryptorand.Reader
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate checks CertDir and the format of every field that is set
// (defaults applied first). The operations also check the fields they
// require, before writing anything.
func (c Config) Validate() error {
	c.SetDefaults()
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if strings.TrimSpace(c.CertDir) == "" {
		add(option.Errorf("CertDir", "{} is required"))
	}
	if c.ServiceCIDR != "" {
		_, err := ServiceCIDRs(c.ServiceCIDR)
		if err == nil {
			_, err = cidr.ParseUsable(c.ServiceCIDR) // the new range: one a cluster can use
		}
		add(wrapField("ServiceCIDR", err))
	}
	if c.OldServiceCIDR != "" {
		_, err := ServiceCIDRs(c.OldServiceCIDR)
		add(wrapField("OldServiceCIDR", err))
	}
	add(wrapField("DNSDomain", dnsName(c.DNSDomain, false)))
	if c.NodeName != "" {
		add(wrapField("NodeName", dnsName(c.NodeName, false)))
	}
	if c.AdvertiseAddress != "" {
		_, err := parseIP(c.AdvertiseAddress)
		add(wrapField("AdvertiseAddress", err))
	}
	if c.APIServerBindPort < 1 || c.APIServerBindPort > 65535 {
		add(option.Errorf("APIServerBindPort", "{} %d is not in 1-65535", c.APIServerBindPort))
	}
	if c.ControlPlaneEndpoint != "" {
		_, _, err := splitEndpoint(c.ControlPlaneEndpoint)
		add(wrapField("ControlPlaneEndpoint", err))
	}
	add(validateSANs("APIServerCertSANs", c.APIServerCertSANs))
	add(validateSANs("EtcdServerCertSANs", c.EtcdServerCertSANs))
	add(validateSANs("EtcdPeerCertSANs", c.EtcdPeerCertSANs))
	seen := map[string]bool{}
	for i, m := range c.EtcdMembers {
		if m.Name == "" {
			add(option.Errorf("EtcdMembers", "{}: member %d has no name", i))
		} else if seen[m.Name] {
			add(option.Errorf("EtcdMembers", "{}: member %q is listed twice", m.Name))
		}
		seen[m.Name] = true
		for _, u := range []string{m.PeerURL, m.ClientURL} {
			if u != "" {
				if _, err := urlHost(u); err != nil {
					add(option.Errorf("EtcdMembers", "{}: member %q: %w", m.Name, err))
				}
			}
		}
	}
	if c.CertValidity < 0 || c.CAValidity < 0 {
		add(option.Errorf("CertValidity", "{} must be positive"))
	}
	if _, ok := map[KeyAlgorithm]bool{RSA2048: true, RSA3072: true, RSA4096: true, ECDSAP256: true, ECDSAP384: true}[c.KeyAlgorithm]; !ok {
		add(option.Errorf("KeyAlgorithm", "unknown {} %q (valid: %s)", c.KeyAlgorithm, joinAlgs()))
	}
	if len(errs) > 0 {
		return errs[0] // one sentence, naming its option
	}
	return nil
}

// require fails naming the first empty field a mode needs.
func (c Config) require(mode string, fields ...string) error {
	for _, f := range fields {
		var empty bool
		switch f {
		case "ServiceCIDR":
			empty = c.ServiceCIDR == ""
		case "OldServiceCIDR":
			empty = c.OldServiceCIDR == ""
		case "NodeName":
			empty = c.NodeName == ""
		case "AdvertiseAddress":
			empty = c.AdvertiseAddress == ""
		default:
			panic("pki: require: unknown field " + f)
		}
		if empty {
			return option.Errorf(f, "%s: {} is required", doing(mode))
		}
	}
	return nil
}

// wrapField names the option (a Config field) that err is about.
func wrapField(field string, err error) error {
	if err == nil {
		return nil
	}
	return option.Errorf(field, "{}: %w", err)
}

// FirstServiceIPs returns the first address (network+1) of each range of a
// Service CIDR list, in order. The first one is the address kube-apiserver
// gives the "kubernetes" Service.
func FirstServiceIPs(serviceCIDR string) ([]netip.Addr, error) {
	ps, err := ServiceCIDRs(serviceCIDR)
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, p := range ps {
		out = append(out, p.Masked().Addr().Next())
	}
	return out, nil
}

// APIServerVirtualIP is the "kubernetes" Service address: the first address
// of the primary Service CIDR, as kubeadm's GetAPIServerVirtualIP.
func APIServerVirtualIP(serviceCIDR string) (netip.Addr, error) {
	ips, err := FirstServiceIPs(serviceCIDR)
	if err != nil {
		return netip.Addr{}, err
	}
	return ips[0], nil
}

func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q is not %s", s, parseerr.IP)
	}
	return a.Unmap(), nil
}

// dnsName checks a DNS-1123 subdomain (or, with wildcard, *.subdomain).
func dnsName(s string, wildcard bool) error {
	if len(validation.IsDNS1123Subdomain(s)) == 0 {
		return nil
	}
	if wildcard && len(validation.IsWildcardDNS1123Subdomain(s)) == 0 {
		return nil
	}
	return fmt.Errorf("%q is not a valid DNS name", s)
}

func validateSANs(what string, sans []string) error {
	for _, s := range sans {
		if _, err := parseIP(s); err == nil {
			continue
		}
		if err := dnsName(s, true); err != nil {
			return option.Errorf(what, "{}: %q is neither an IP address nor a DNS name", s)
		}
	}
	return nil
}

// splitEndpoint parses an endpoint (cidr.SplitHostPort) whose host is an
// IP address or a DNS name.
func splitEndpoint(ep string) (host, port string, err error) {
	host, port, err = cidr.SplitHostPort(ep)
	if err != nil {
		return "", "", err
	}
	if _, err := parseIP(host); err != nil {
		if err := dnsName(host, false); err != nil {
			return "", "", fmt.Errorf("%q: host %q is neither an IP address nor a DNS name", ep, host)
		}
	}
	return host, port, nil
}

// urlHost returns the host of an etcd URL (scheme http or https).
func urlHost(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return "", fmt.Errorf("%q is not a URL like https://10.0.0.5:2380", s)
	}
	return u.Hostname(), nil
}

// localEtcdMember is this node's member: the one named NodeName, the only
// one, or (no members given) NodeName at AdvertiseAddress.
func (c Config) localEtcdMember() (EtcdMember, error) {
	if len(c.EtcdMembers) == 0 {
		if c.AdvertiseAddress == "" {
			return EtcdMember{}, errors.New("etcd: AdvertiseAddress or an etcd member with URLs is required")
		}
		hp := func(port int) string {
			return "https://" + net.JoinHostPort(c.AdvertiseAddress, strconv.Itoa(port))
		}
		return EtcdMember{Name: c.NodeName, PeerURL: hp(EtcdPeerPort), ClientURL: hp(EtcdClientPort)}, nil
	}
	var names []string
	for _, m := range c.EtcdMembers {
		if m.Name == c.NodeName {
			return m, nil
		}
		names = append(names, m.Name)
	}
	if len(c.EtcdMembers) == 1 {
		return c.EtcdMembers[0], nil
	}
	return EtcdMember{}, fmt.Errorf("etcd: no member is named after node %q (members: %s); the local member's name must be the node name",
		c.NodeName, strings.Join(names, ", "))
}

// ServiceCIDRs parses a Service CIDR list with cidr.ParseList (one CIDR,
// or two of different families) and refuses a range with no address after
// its network address.
func ServiceCIDRs(s string) ([]netip.Prefix, error) {
	out, err := cidr.ParseList(s)
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		if p.Bits() >= p.Addr().BitLen() {
			return nil, fmt.Errorf("%q: %s has no address after its network address", s, p)
		}
	}
	return out, nil
}
