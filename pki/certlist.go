package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"slices"

	certutil "k8s.io/client-go/util/cert"
)

// Names and subjects, as kubeadm's constants.
const (
	CACertAndKeyBaseName                     = "ca"
	APIServerCertAndKeyBaseName              = "apiserver"
	APIServerKubeletClientCertAndKeyBaseName = "apiserver-kubelet-client"
	FrontProxyCACertAndKeyBaseName           = "front-proxy-ca"
	FrontProxyClientCertAndKeyBaseName       = "front-proxy-client"
	EtcdCACertAndKeyBaseName                 = "etcd/ca"
	EtcdServerCertAndKeyBaseName             = "etcd/server"
	EtcdPeerCertAndKeyBaseName               = "etcd/peer"
	EtcdHealthcheckClientCertAndKeyBaseName  = "etcd/healthcheck-client"
	APIServerEtcdClientCertAndKeyBaseName    = "apiserver-etcd-client"
	// ServiceAccountKeyBaseName is the service-account signing key pair:
	// sa.key (private, PEM) and sa.pub (PKIX public key, PEM).
	ServiceAccountKeyBaseName = "sa"
)

// CertSpec declares one certificate of kubeadm's PKI.
type CertSpec struct {
	// Name is kubeadm's name for the certificate ("apiserver", "etcd-ca").
	Name string
	// LongName says what it is for.
	LongName string
	// BaseName is the path under the cert dir without extension:
	// "etcd/server" is etcd/server.crt and etcd/server.key.
	BaseName string
	// CAName is the Name of the CA that signs it; empty for a self-signed CA.
	CAName string
	// CommonName is the subject CN. Ignored when CommonNameIsNodeName.
	CommonName string
	// CommonNameIsNodeName: the CN is Config.NodeName (etcd server and peer).
	CommonNameIsNodeName bool
	// Organization is the subject O (none for kubeadm's PKI certificates).
	Organization []string
	// Usages are the extended key usages (none for a CA).
	Usages []x509.ExtKeyUsage
	// AltNames computes the SANs from the configuration; nil for none. A CA
	// gets its CN as its only DNS SAN, as kubeadm's.
	AltNames func(Config) (certutil.AltNames, error)
}

// IsCA reports whether the spec is a self-signed CA.
func (s CertSpec) IsCA() bool { return s.CAName == "" }

// Subject returns the CN and O of the certificate for cfg.
func (s CertSpec) Subject(cfg Config) (cn string, org []string) {
	if s.CommonNameIsNodeName {
		return cfg.NodeName, s.Organization
	}
	return s.CommonName, s.Organization
}

var (
	serverAuth       = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth       = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverClientAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
)

// Certs is kubeadm's certificate list (GetDefaultCertList), in kubeadm's
// order: each CA before the certificates it signs.
func Certs() []CertSpec {
	return append(append(kubernetesCerts(), frontProxyCerts()...), etcdCerts()...)
}

// kubernetesCerts are the Kubernetes CA and the certificates it signs.
func kubernetesCerts() []CertSpec {
	return []CertSpec{
		{
			Name:       "ca",
			LongName:   "self-signed Kubernetes CA to provision identities for other Kubernetes components",
			BaseName:   CACertAndKeyBaseName,
			CommonName: "kubernetes",
		},
		{
			Name:       "apiserver",
			LongName:   "certificate for serving the Kubernetes API",
			BaseName:   APIServerCertAndKeyBaseName,
			CAName:     "ca",
			CommonName: "kube-apiserver",
			Usages:     serverAuth,
			AltNames:   APIServerAltNames,
		},
		{
			Name:       "apiserver-kubelet-client",
			LongName:   "certificate for the API server to connect to kubelet",
			BaseName:   APIServerKubeletClientCertAndKeyBaseName,
			CAName:     "ca",
			CommonName: "kube-apiserver-kubelet-client",
			Usages:     clientAuth,
		},
	}
}

// frontProxyCerts are the front proxy's CA and client certificate.
func frontProxyCerts() []CertSpec {
	return []CertSpec{
		{
			Name:       "front-proxy-ca",
			LongName:   "self-signed CA to provision identities for front proxy",
			BaseName:   FrontProxyCACertAndKeyBaseName,
			CommonName: "front-proxy-ca",
		},
		{
			Name:       "front-proxy-client",
			LongName:   "certificate for the front proxy client",
			BaseName:   FrontProxyClientCertAndKeyBaseName,
			CAName:     "front-proxy-ca",
			CommonName: "front-proxy-client",
			Usages:     clientAuth,
		},
	}
}

// etcdCerts are etcd's CA and the certificates it signs.
func etcdCerts() []CertSpec {
	return []CertSpec{
		{
			Name:       "etcd-ca",
			LongName:   "self-signed CA to provision identities for etcd",
			BaseName:   EtcdCACertAndKeyBaseName,
			CommonName: "etcd-ca",
		},
		{
			Name:                 "etcd-server",
			LongName:             "certificate for serving etcd",
			BaseName:             EtcdServerCertAndKeyBaseName,
			CAName:               "etcd-ca",
			CommonNameIsNodeName: true,
			// etcd also uses its serving certificate as a client (kubeadm's
			// TODO about etcd-io/etcd#9785), hence clientAuth.
			Usages:   serverClientAuth,
			AltNames: EtcdServerAltNames,
		},
		{
			Name:                 "etcd-peer",
			LongName:             "certificate for etcd nodes to communicate with each other",
			BaseName:             EtcdPeerCertAndKeyBaseName,
			CAName:               "etcd-ca",
			CommonNameIsNodeName: true,
			Usages:               serverClientAuth,
			AltNames:             EtcdPeerAltNames,
		},
		{
			Name:       "etcd-healthcheck-client",
			LongName:   "certificate for liveness probes to healthcheck etcd",
			BaseName:   EtcdHealthcheckClientCertAndKeyBaseName,
			CAName:     "etcd-ca",
			CommonName: "kube-etcd-healthcheck-client",
			Usages:     clientAuth,
		},
		{
			Name:       "apiserver-etcd-client",
			LongName:   "certificate the apiserver uses to access etcd",
			BaseName:   APIServerEtcdClientCertAndKeyBaseName,
			CAName:     "etcd-ca",
			CommonName: "kube-apiserver-etcd-client",
			Usages:     clientAuth,
		},
	}
}

// CertByName returns the spec named name from Certs.
func CertByName(name string) (CertSpec, error) {
	for _, s := range Certs() {
		if s.Name == name {
			return s, nil
		}
	}
	return CertSpec{}, fmt.Errorf("no certificate named %q", name)
}

// APIServerAltNames are the apiserver certificate's SANs, as kubeadm's
// GetAPIServerAltNames: DNS node name, kubernetes, kubernetes.default,
// kubernetes.default.svc, kubernetes.default.svc.<DNSDomain>; IP the first
// Service IP and the advertise address; then the control-plane endpoint's
// host and APIServerCertSANs. DNS names are sorted and duplicates dropped
// (kubeadm's RemoveDuplicateAltNames); IPs keep their order.
func APIServerAltNames(cfg Config) (certutil.AltNames, error) {
	cfg.SetDefaults()
	if err := cfg.require("apiserver SANs", "ServiceCIDR", "AdvertiseAddress"); err != nil {
		return certutil.AltNames{}, err
	}
	adv, err := parseIP(cfg.AdvertiseAddress)
	if err != nil {
		return certutil.AltNames{}, fmt.Errorf("advertise address: %w", err)
	}
	vip, err := APIServerVirtualIP(cfg.ServiceCIDR)
	if err != nil {
		return certutil.AltNames{}, fmt.Errorf("service CIDR: %w", err)
	}
	var alt certutil.AltNames
	if cfg.NodeName != "" {
		alt.DNSNames = append(alt.DNSNames, cfg.NodeName)
	}
	alt.DNSNames = append(alt.DNSNames, "kubernetes", "kubernetes.default", "kubernetes.default.svc")
	if cfg.DNSDomain != "" {
		alt.DNSNames = append(alt.DNSNames, "kubernetes.default.svc."+cfg.DNSDomain)
	}
	alt.IPs = []net.IP{ipOf(vip), ipOf(adv)}
	if cfg.ControlPlaneEndpoint != "" {
		host, _, err := splitEndpoint(cfg.ControlPlaneEndpoint)
		if err != nil {
			return certutil.AltNames{}, fmt.Errorf("control-plane endpoint: %w", err)
		}
		appendSANs(&alt, []string{host})
	}
	appendSANs(&alt, cfg.APIServerCertSANs)
	return normalizeAltNames(alt), nil
}

// EtcdServerAltNames are etcd/server's SANs, as kubeadm's GetEtcdAltNames:
// DNS node name (and the member name) and localhost; IP the advertise
// address (and the member URLs' hosts), 127.0.0.1 and ::1; then
// EtcdServerCertSANs.
func EtcdServerAltNames(cfg Config) (certutil.AltNames, error) {
	return etcdAltNames(cfg, cfg.EtcdServerCertSANs)
}

// EtcdPeerAltNames are etcd/peer's SANs: as EtcdServerAltNames, with
// EtcdPeerCertSANs as the extras.
func EtcdPeerAltNames(cfg Config) (certutil.AltNames, error) {
	return etcdAltNames(cfg, cfg.EtcdPeerCertSANs)
}

func etcdAltNames(cfg Config, extra []string) (certutil.AltNames, error) {
	cfg.SetDefaults()
	if err := cfg.require("etcd SANs", "NodeName"); err != nil {
		return certutil.AltNames{}, err
	}
	m, err := cfg.localEtcdMember()
	if err != nil {
		return certutil.AltNames{}, err
	}
	alt := certutil.AltNames{DNSNames: []string{cfg.NodeName}}
	if m.Name != "" {
		alt.DNSNames = append(alt.DNSNames, m.Name)
	}
	alt.DNSNames = append(alt.DNSNames, "localhost")
	var hosts []string
	if cfg.AdvertiseAddress != "" {
		hosts = append(hosts, cfg.AdvertiseAddress)
	}
	for _, u := range []string{m.ClientURL, m.PeerURL} {
		if u == "" {
			continue
		}
		h, err := urlHost(u)
		if err != nil {
			return certutil.AltNames{}, fmt.Errorf("etcd member %q: %w", m.Name, err)
		}
		hosts = append(hosts, h)
	}
	appendSANs(&alt, hosts)
	alt.IPs = append(alt.IPs, net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback)
	appendSANs(&alt, extra)
	return normalizeAltNames(alt), nil
}

// appendSANs adds each IP to IPs and each other name to DNSNames (names are
// validated by Config.Validate).
func appendSANs(alt *certutil.AltNames, sans []string) {
	for _, s := range sans {
		if a, err := parseIP(s); err == nil {
			alt.IPs = append(alt.IPs, ipOf(a))
		} else {
			alt.DNSNames = append(alt.DNSNames, s)
		}
	}
}

// normalizeAltNames is kubeadm's RemoveDuplicateAltNames: DNS names sorted
// and unique, IPs unique in their first-seen order.
func normalizeAltNames(alt certutil.AltNames) certutil.AltNames {
	var out certutil.AltNames
	if alt.DNSNames != nil {
		out.DNSNames = slices.Compact(slices.Sorted(slices.Values(alt.DNSNames)))
	}
	seen := map[netip.Addr]bool{}
	for _, ip := range alt.IPs {
		a, ok := addrOf(ip)
		if !ok || seen[a] {
			continue
		}
		seen[a] = true
		out.IPs = append(out.IPs, ipOf(a))
	}
	return out
}

// ipOf converts to net.IP, 4 bytes for IPv4.
func ipOf(a netip.Addr) net.IP { return net.IP(a.Unmap().AsSlice()) }

func addrOf(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}
