package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig file names, users and groups, as kubeadm's constants.
const (
	AdminKubeConfigFileName             = "admin.conf"
	SuperAdminKubeConfigFileName        = "super-admin.conf"
	KubeletKubeConfigFileName           = "kubelet.conf"
	ControllerManagerKubeConfigFileName = "controller-manager.conf"
	SchedulerKubeConfigFileName         = "scheduler.conf"

	ClusterAdminsGroup    = "kubeadm:cluster-admins"
	SystemPrivilegedGroup = "system:masters"
	NodesGroup            = "system:nodes"
	NodesUserPrefix       = "system:node:"
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
)

// Endpoint says which API server URL a kubeconfig points to.
type Endpoint string

const (
	// EndpointControlPlane is https://<ControlPlaneEndpoint> when set (port:
	// its own, else APIServerBindPort), else the local endpoint.
	EndpointControlPlane Endpoint = "control-plane"
	// EndpointLocal is https://<AdvertiseAddress>:<APIServerBindPort>.
	EndpointLocal Endpoint = "local"
)

// KubeconfigSpec declares one kubeconfig file with a client certificate
// signed by the cluster CA.
type KubeconfigSpec struct {
	// FileName is the file name in the kubeconfig directory.
	FileName string
	// ClientName is the user name: the client certificate's CN. Ignored
	// when NodeUser.
	ClientName string
	// NodeUser: the user is system:node:<NodeName> (kubelet.conf).
	NodeUser bool
	// Organization is the client certificate's O (its groups).
	Organization []string
	// Endpoint is the API server URL it points to.
	Endpoint Endpoint
}

// User is the spec's user name for cfg.
func (s KubeconfigSpec) User(cfg Config) string {
	if s.NodeUser {
		return NodesUserPrefix + cfg.NodeName
	}
	return s.ClientName
}

// Kubeconfigs are the kubeconfig files kubeadm init writes
// (phases/kubeconfig getKubeConfigSpecsBase), in its order. As in kubeadm
// v1.36, admin.conf and super-admin.conf use the control-plane endpoint;
// kubelet.conf, controller-manager.conf and scheduler.conf the local API
// endpoint of the node.
func Kubeconfigs() []KubeconfigSpec {
	return []KubeconfigSpec{
		{FileName: AdminKubeConfigFileName, ClientName: "kubernetes-admin", Organization: []string{ClusterAdminsGroup}, Endpoint: EndpointControlPlane},
		{FileName: SuperAdminKubeConfigFileName, ClientName: "kubernetes-super-admin", Organization: []string{SystemPrivilegedGroup}, Endpoint: EndpointControlPlane},
		{FileName: KubeletKubeConfigFileName, NodeUser: true, Organization: []string{NodesGroup}, Endpoint: EndpointLocal},
		{FileName: ControllerManagerKubeConfigFileName, ClientName: ControllerManagerUser, Endpoint: EndpointLocal},
		{FileName: SchedulerKubeConfigFileName, ClientName: SchedulerUser, Endpoint: EndpointLocal},
	}
}

// ServerURL is the API server URL for endpoint e, as kubeadm's
// GetControlPlaneEndpoint / GetLocalAPIEndpoint.
func ServerURL(cfg Config, e Endpoint) (string, error) {
	cfg.SetDefaults()
	port := strconv.Itoa(cfg.APIServerBindPort)
	if e == EndpointControlPlane && cfg.ControlPlaneEndpoint != "" {
		host, p, err := splitEndpoint(cfg.ControlPlaneEndpoint)
		if err != nil {
			return "", fmt.Errorf("control-plane endpoint: %w", err)
		}
		if p != "" {
			port = p
		}
		return (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, port)}).String(), nil
	}
	if cfg.AdvertiseAddress == "" {
		return "", fmt.Errorf("the local API endpoint needs AdvertiseAddress")
	}
	adv, err := parseIP(cfg.AdvertiseAddress)
	if err != nil {
		return "", fmt.Errorf("advertise address: %w", err)
	}
	return (&url.URL{Scheme: "https", Host: net.JoinHostPort(adv.String(), port)}).String(), nil
}

// BuildKubeconfig builds the kubeconfig of spec with a new client
// certificate signed by ca: cluster cfg.ClusterName with the CA data
// embedded, user spec.User(cfg), context "<user>@<cluster>" (kubeadm's
// names). The client certificate starts at the CA's NotBefore, as
// kubeadm's, and is valid for cfg.CertValidity from now.
func BuildKubeconfig(cfg Config, spec KubeconfigSpec, ca *CA) (*clientcmdapi.Config, *x509.Certificate, error) {
	cfg.SetDefaults()
	user := spec.User(cfg)
	if user == "" || user == NodesUserPrefix {
		return nil, nil, fmt.Errorf("%s: the user name is empty (NodeName is required)", spec.FileName)
	}
	server, err := ServerURL(cfg, spec.Endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.FileName, err)
	}
	key, err := newKey(cfg, spec.FileName)
	if err != nil {
		return nil, nil, err
	}
	cert, err := createCert(cfg, certRequest{
		CommonName:   user,
		Organization: spec.Organization,
		Usages:       clientAuth,
		NotBefore:    ca.Cert.NotBefore,
		NotAfter:     cfg.Now().Add(cfg.CertValidity),
	}, key, ca)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: client certificate: %w", spec.FileName, err)
	}
	keyPEM, err := encodeKeyPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", spec.FileName, err)
	}
	contextName := fmt.Sprintf("%s@%s", user, cfg.ClusterName)
	kc := &clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{
			cfg.ClusterName: {Server: server, CertificateAuthorityData: EncodeCertPEM(ca.Cert)},
		},
		Contexts: map[string]*clientcmdapi.Context{
			contextName: {Cluster: cfg.ClusterName, AuthInfo: user},
		},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{
			user: {ClientCertificateData: EncodeCertPEM(cert), ClientKeyData: keyPEM},
		},
		CurrentContext: contextName,
	}
	return kc, cert, nil
}

// WriteKubeconfigs writes the files of Kubeconfigs into dir (on a node,
// /etc/kubernetes), with client certificates signed by the existing
// ca.crt/ca.key of cfg.CertDir. Files are 0600; replaced files are kept as
// .bak. It requires NodeName and AdvertiseAddress.
func WriteKubeconfigs(cfg Config, dir string) (Result, error) {
	return writeKubeconfigs(cfg, dir, Kubeconfigs())
}

// WriteJoinedKubeconfigs is WriteKubeconfigs for a further control-plane
// node, as `kubeadm join --control-plane` writes: no super-admin.conf (a
// system:masters credential exists only on the first node).
func WriteJoinedKubeconfigs(cfg Config, dir string) (Result, error) {
	var specs []KubeconfigSpec
	for _, s := range Kubeconfigs() {
		if s.FileName != SuperAdminKubeConfigFileName {
			specs = append(specs, s)
		}
	}
	return writeKubeconfigs(cfg, dir, specs)
}

// WriteUserKubeconfig writes one kubeconfig, dir/fileName, for any named
// identity (user, groups) with a client certificate signed by the existing
// ca.crt/ca.key of cfg.CertDir, pointing at the control-plane endpoint (or
// the advertise address): for hosts outside the control plane that run
// with their own kubeconfigs (kube-proxy, a CNI agent) after a new CA.
func WriteUserKubeconfig(cfg Config, dir, fileName, user string, groups []string) (Result, error) {
	if user == "" || fileName == "" {
		return Result{Operation: OpKubeconfigs, Dir: dir}, fmt.Errorf("%s: a user name and a file name are required", doing(OpKubeconfigs))
	}
	spec := KubeconfigSpec{FileName: fileName, ClientName: user, Organization: groups, Endpoint: EndpointControlPlane}
	var required []string // the server: the endpoint, else this node's address
	if cfg.ControlPlaneEndpoint == "" {
		required = []string{"AdvertiseAddress"}
	}
	return writeKubeconfigsFor(cfg, dir, []KubeconfigSpec{spec}, required...)
}

func writeKubeconfigs(cfg Config, dir string, specs []KubeconfigSpec) (Result, error) {
	return writeKubeconfigsFor(cfg, dir, specs, "NodeName", "AdvertiseAddress")
}

func writeKubeconfigsFor(cfg Config, dir string, specs []KubeconfigSpec, required ...string) (Result, error) {
	res := Result{Operation: OpKubeconfigs, Dir: dir}
	if err := prepare(&cfg, OpKubeconfigs, required...); err != nil {
		return res, err
	}
	if dir == "" {
		return res, fmt.Errorf("%s: the kubeconfig directory is required", doing(OpKubeconfigs))
	}
	ca, err := LoadCA(cfg.CertDir, CACertAndKeyBaseName)
	if err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpKubeconfigs), err)
	}
	now := cfg.Now()
	var outs []output
	for _, spec := range specs {
		kc, cert, err := BuildKubeconfig(cfg, spec, ca)
		if err != nil {
			return res, fmt.Errorf("%s: %w", doing(OpKubeconfigs), err)
		}
		if err := checkSigned(cert, ca.Cert, clientAuth, now); err != nil {
			return res, fmt.Errorf("%s: internal error: %s client certificate does not verify: %w", doing(OpKubeconfigs), spec.FileName, err)
		}
		data, err := clientcmd.Write(*kc)
		if err != nil {
			return res, fmt.Errorf("%s: %s: %w", doing(OpKubeconfigs), spec.FileName, err)
		}
		outs = append(outs, output{
			rel: spec.FileName, data: data, perm: KeyPerm,
			info: File{Kind: KindKubeconfig, Name: spec.FileName, Cert: DescribeCert(cert), Server: kc.Clusters[cfg.ClusterName].Server},
		})
	}
	res.Reused = caFiles(cfg.CertDir, CACertAndKeyBaseName)
	if err := mkdirs(dir); err != nil {
		return res, err
	}
	if err := commit(dir, outs, &res, cfg.NoBackup); err != nil {
		return res, fmt.Errorf("%s: %w", doing(OpKubeconfigs), err)
	}
	return res, nil
}
