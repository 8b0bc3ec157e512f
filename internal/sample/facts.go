package sample

import corev1 "k8s.io/api/core/v1"

// The networks and addresses of the sample cluster, as kubeadm would have set them up.
const (
	// ServiceCIDR is the Service network (kube-apiserver --service-cluster-ip-range, kubeadm serviceSubnet).
	ServiceCIDR = "192.168.0.0/16"
	// PodCIDR is the Pod network (kube-controller-manager --cluster-cidr, kubeadm podSubnet, flannel Network).
	PodCIDR = "10.244.0.0/16"
	// KubernetesServiceIP is the clusterIP of default/kubernetes: index 1 of ServiceCIDR.
	KubernetesServiceIP = "192.168.0.1"
	// DNSServiceIP is the clusterIP of kube-system/kube-dns: index 10 of ServiceCIDR, and kubelet's clusterDNS.
	DNSServiceIP = "192.168.0.10"
	// NodeLocalDNSIP is where NodeLocal DNSCache listens on every node.
	NodeLocalDNSIP = "169.254.20.10"
	// DualStackIPv6 is the IPv6 clusterIP of demo/dual-echo, the one dual-stack Service. The sample's
	// allocator state is single-stack (IPv4 only, as the brief for ServiceCIDR and kubeadm-config says):
	// no IPAddress object, bitmap or ServiceCIDR covers this address.
	DualStackIPv6 = "fd00:10:96::a"
	// NodePortRange is the NodePort range (/registry/ranges/servicenodeports).
	NodePortRange = "30000-32767"
	// NodePortBase is the first port of NodePortRange: bit i of the NodePort bitmap is port NodePortBase+i.
	NodePortBase = 30000
	// ControlPlaneIP is cp1's host address: the apiserver's advertise address and endpoint.
	ControlPlaneIP = "10.0.0.10"
	// KubernetesVersion is the version the sample cluster runs (ServiceCIDR and IPAddress stored as
	// networking.k8s.io/v1; the legacy bitmap kept from the dual-write years and still consistent).
	KubernetesVersion = "v1.34.2"
	// DNSDomain is the cluster DNS domain.
	DNSDomain = "cluster.local"
)

// Service describes one Service of the sample's final state.
type Service struct {
	Namespace string
	Name      string
	Type      corev1.ServiceType
	// ClusterIPs is spec.clusterIPs: nil for ExternalName, ["None"] for headless, two entries for dual-stack.
	ClusterIPs []string
	// NodePorts are the allocated node ports (NodePort and LoadBalancer Services).
	NodePorts []int32
}

// Key returns the Service's etcd key.
func (s Service) Key() string { return "/registry/services/specs/" + s.Namespace + "/" + s.Name }

// Services returns every Service live at the end of the sample (the one created and deleted in the
// history is not included), in creation order.
func Services() []Service {
	return []Service{
		{Namespace: "default", Name: "kubernetes", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{KubernetesServiceIP}},
		{Namespace: "kube-system", Name: "kube-dns", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{DNSServiceIP}},
		{Namespace: "kube-system", Name: "metrics-server", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"192.168.255.254"}},
		{Namespace: "demo", Name: "web", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"192.168.3.7"}},
		{Namespace: "demo", Name: "api", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"192.168.200.14"}},
		{Namespace: "demo", Name: "db-headless", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{corev1.ClusterIPNone}},
		{Namespace: "demo", Name: "web-nodeport", Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"192.168.17.33"}, NodePorts: []int32{30080}},
		{Namespace: "demo", Name: "external-db", Type: corev1.ServiceTypeExternalName},
		{Namespace: "demo", Name: "dual-echo", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"192.168.44.4", DualStackIPv6}},
		{Namespace: "ingress-nginx", Name: "ingress-nginx-controller", Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"192.168.101.50"}, NodePorts: []int32{31080, 31443}},
	}
}

// TempService is the Service the history creates and deletes again (with its IPAddress).
func TempService() Service {
	return Service{Namespace: "demo", Name: "temp-debug", Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"192.168.9.9"}}
}

// Node describes one Node of the sample.
type Node struct {
	Name string
	// PodCIDR is spec.podCIDR (and the only entry of spec.podCIDRs).
	PodCIDR string
	// InternalIP is the host address (status.addresses InternalIP and flannel's public-ip annotation).
	InternalIP string
	// Fake marks a host outside the cluster registered by hand so that flannel and kube-proxy run there
	// (no kubelet, a /28 pod range).
	Fake bool
}

// Key returns the Node's etcd key.
func (n Node) Key() string { return "/registry/minions/" + n.Name }

// Nodes returns the sample's Nodes: a control-plane node and a VM with a /24, a hardware worker with
// a /21 and a fake external node with a /28.
func Nodes() []Node {
	return []Node{
		{Name: "cp1", PodCIDR: "10.244.0.0/24", InternalIP: ControlPlaneIP},
		{Name: "worker-hw1", PodCIDR: "10.244.8.0/21", InternalIP: "10.0.0.21"},
		{Name: "worker-vm1", PodCIDR: "10.244.1.0/24", InternalIP: "10.0.0.31"},
		{Name: "ext-fake1", PodCIDR: "10.244.16.16/28", InternalIP: "10.0.1.50", Fake: true},
	}
}

// Recognisable fake secret material. Each is unique enough to grep for in any output.
const (
	tokenLegacyAdmin = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNhbXBsZSJ9.SAMPLE-SECRET-TOKEN-kube-system-legacy-admin.c2lnbmF0dXJlLTE"
	tokenCIDeployer  = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNhbXBsZSJ9.SAMPLE-SECRET-TOKEN-demo-ci-deployer.c2lnbmF0dXJlLTI"
	dbUser           = "SAMPLE-SECRET-DB-USER-app"
	dbPassword       = "SAMPLE-SECRET-DB-PASSWORD-7f3a9c"
	tlsKey           = "-----BEGIN PRIVATE KEY-----\nSAMPLE-SECRET-TLS-KEY-ingress-nginx-admission\n-----END PRIVATE KEY-----\n"
	bootstrapTokenID = "sample"
	// bootstrapTokenSecret follows the bootstrap token format [a-z0-9]{16}.
	bootstrapTokenSecret = "s4mplesecret0001"
	// appSettingsPassword is in demo/app-settings only until the second update of the history; the
	// ConfigMap is not a Secret, but a copy left in old revisions is exactly what a leak test looks for.
	appSettingsPassword = "SAMPLE-SECRET-IN-CONFIGMAP-HISTORY"
)

// SecretValues returns every sensitive value stored in the sample's Secrets (tokens, passwords, keys,
// the bootstrap token secret), plus the one that only lives in old revisions of a ConfigMap, so that a
// test can grep any output for leaks. Values that are not secret and would match everywhere (the
// `namespace` key of token Secrets, ca.crt, the bootstrap token ID and usage flags) are left out.
func SecretValues() []string {
	return []string{
		tokenLegacyAdmin,
		tokenCIDeployer,
		dbUser,
		dbPassword,
		tlsKey,
		bootstrapTokenSecret,
		appSettingsPassword,
	}
}
