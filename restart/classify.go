package restart

import (
	"fmt"
	"slices"

	"github.com/snapshift/snapshift/cni"
)

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

// Role names of the workloads the restart orders (Classify); the CNIs'
// roles are package cni's.
const (
	RoleClusterDNS    = "cluster DNS"
	RoleNodeLocalDNS  = "node-local-dns"
	RoleKubeProxy     = "kube-proxy"
	RoleCiliumOp      = "cilium-operator"
	RoleCalicoControl = "calico-kube-controllers"
)

// Classify gives a workload (or a pod, kind "Pod") its stage and role by
// its pod labels, as the upstream manifests label them: the CNIs' as
// package cni's table has them (flannel app=flannel; calico.yaml
// k8s-app=calico-node and k8s-app=calico-kube-controllers; cilium
// k8s-app=cilium and io.cilium/app=operator; ...); kube-proxy, CoreDNS and
// NodeLocal DNSCache as kubeadm and the upstream addon install them
// (kubespray's nodelocaldns DaemonSet keeps k8s-app=nodelocaldns).
func Classify(kind string, labels map[string]string) (int, string) {
	for _, r := range roles {
		if (r.kind == "" || r.kind == kind || kind == "Pod") && labels[r.label] == r.value {
			return r.stage, r.name
		}
	}
	return StageRest, ""
}

// role is one row of Classify's table.
type role struct {
	kind, label, value string
	stage              int
	name               string
}

// roles are Classify's table, first match wins: the kind ("" for any),
// the pod label and its value, the stage and the role. The CNIs' come
// first, by phase (cni.Roles).
var roles = slices.Concat(cniRoles(), []role{
	{"DaemonSet", "k8s-app", "kube-proxy", StageKubeProxy, RoleKubeProxy},
	{"Deployment", "k8s-app", "kube-dns", StageDNS, RoleClusterDNS},
	{"DaemonSet", "k8s-app", "node-local-dns", StageNodeLocal, RoleNodeLocalDNS},
	{"DaemonSet", "k8s-app", "nodelocaldns", StageNodeLocal, RoleNodeLocalDNS},
})

// cniStage is the stage of each CNI phase.
var cniStage = map[cni.Phase]int{cni.PhaseOperator: StageCNIOperator, cni.PhaseAgent: StageCNIAgent, cni.PhaseControl: StageCNIControl}

func cniRoles() []role {
	var out []role
	for _, r := range cni.Roles() {
		st, ok := cniStage[r.Phase]
		if !ok {
			panic(fmt.Sprintf("restart: CNI role %s has phase %d, which has no stage", r.Name, r.Phase))
		}
		out = append(out, role{r.Kind, r.Label, r.Value, st, r.Name})
	}
	return out
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
