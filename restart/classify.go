package restart

// The restart stages a workload's role puts it in, in order. Each CNI's
// documented order: Cilium's operator before the agents (the agents wait
// for the CiliumNode the operator allocates: docs.cilium.io, upgrade
// guide), calico-node before calico-kube-controllers and every pod (the
// node agent programs the routes new pods need); then kube-proxy, the
// cluster DNS, NodeLocal DNSCache (its Corefile and args name the DNS
// Service's address), and everything else.
const (
	StageCNIOperator = 1
	StageCNIAgent    = 2
	StageCNIControl  = 3
	StageKubeProxy   = 4
	StageDNS         = 5
	StageNodeLocal   = 6
	StageRest        = 7
)

// Role names of the workloads the restart orders (Classify).
const (
	RoleClusterDNS    = "cluster DNS"
	RoleNodeLocalDNS  = "node-local-dns"
	RoleKubeProxy     = "kube-proxy"
	RoleCiliumOp      = "cilium-operator"
	RoleCalicoControl = "calico-kube-controllers"
)

// Classify gives a workload (or a pod, kind "Pod") its stage and role by
// its pod labels, as the upstream manifests label them: flannel
// app=flannel; calico.yaml k8s-app=calico-node and
// k8s-app=calico-kube-controllers; cilium k8s-app=cilium and
// io.cilium/app=operator; kube-proxy, CoreDNS and NodeLocal DNSCache as
// kubeadm and the upstream addon install them (kubespray's nodelocaldns
// DaemonSet keeps k8s-app=nodelocaldns).
func Classify(kind string, labels map[string]string) (int, string) {
	for _, r := range roles {
		if (r.kind == "" || r.kind == kind || kind == "Pod") && labels[r.label] == r.value {
			return r.stage, r.name
		}
	}
	return StageRest, ""
}

// roles are Classify's table, first match wins: the kind ("" for any),
// the pod label and its value, the stage and the role.
var roles = []struct {
	kind, label, value string
	stage              int
	name               string
}{
	{"", "io.cilium/app", "operator", StageCNIOperator, RoleCiliumOp},
	{"DaemonSet", "k8s-app", "cilium", StageCNIAgent, "cilium"},
	{"DaemonSet", "k8s-app", "calico-node", StageCNIAgent, "calico-node"},
	{"DaemonSet", "k8s-app", "canal", StageCNIAgent, "canal"},
	{"DaemonSet", "app", "flannel", StageCNIAgent, "flannel"},
	{"DaemonSet", "name", "weave-net", StageCNIAgent, "weave-net"},
	{"", "k8s-app", "calico-kube-controllers", StageCNIControl, RoleCalicoControl},
	{"DaemonSet", "k8s-app", "kube-proxy", StageKubeProxy, RoleKubeProxy},
	{"Deployment", "k8s-app", "kube-dns", StageDNS, RoleClusterDNS},
	{"DaemonSet", "k8s-app", "node-local-dns", StageNodeLocal, RoleNodeLocalDNS},
	{"DaemonSet", "k8s-app", "nodelocaldns", StageNodeLocal, RoleNodeLocalDNS},
}

// StageOf is the stage of a role (StageRest for "" or an unknown one).
func StageOf(role string) int {
	for _, r := range roles {
		if r.name == role {
			return r.stage
		}
	}
	return StageRest
}
