// Package cni is the one table of the CNIs snapshift knows. Per CNI it
// holds how a snapshot shows it (its ConfigMaps, DaemonSets and custom
// resources), where it keeps IPAM state in etcd, its restart roles (the pod
// labels of its controllers and the phase each restarts in), the host
// network state it leaves on a node, what the leftover scan treats as its
// own (namespaces, per-pod resources, policy groups), and whether its IPAM
// state may be left at the old range by hand (the rule that moves it, the
// instructions). Everything that names a CNI is derived from it: the
// detection (package state) and the well-known keys (wellknown), the
// restart stages (restart), the host-state cleanup (bundle, which `node
// apply` and the runbook execute), the leftover scan (leftovers), the cni
// rule and the shell completion. A CNI missing from one of them cannot be
// silently skipped on a node: there is no other list to miss it from.
//
// The package imports nothing, so that the node side (bundle, nodeops)
// and the leaf restart can use it as well as the engine.
package cni

import (
	"slices"
	"strings"
)

// The CNIs' names, as state.DetectCNI, report.json and --leave-cni-state
// give them.
const (
	Flannel = "flannel"
	Canal   = "canal"
	Calico  = "calico"
	Cilium  = "cilium"
	Weave   = "weave"
)

// The custom resources the table names, as `kubectl api-resources` names
// them (plural.group). With the Kubernetes datastore every Calico object is
// a cluster-scoped custom resource of crd.projectcalico.org/v1; the
// operator's Installation is operator.tigera.io/v1.
const (
	CalicoIPPools         = "ippools.crd.projectcalico.org"
	CalicoIPAMBlocks      = "ipamblocks.crd.projectcalico.org"
	CalicoBlockAffinities = "blockaffinities.crd.projectcalico.org"
	CalicoIPAMHandles     = "ipamhandles.crd.projectcalico.org"
	TigeraInstallations   = "installations.operator.tigera.io"
	CiliumNodes           = "ciliumnodes.cilium.io"
	CiliumPodIPPools      = "ciliumpodippools.cilium.io"
	CiliumEndpoints       = "ciliumendpoints.cilium.io"
)

// Object names a namespaced object.
type Object struct {
	Namespace, Name string
}

// String is namespace/name.
func (o Object) String() string { return o.Namespace + "/" + o.Name }

// Phase is when a restart role's controller restarts, relative to the
// other CNI controllers (package restart gives each phase its stage).
type Phase int

// The phases, in order: Cilium's operator before the agents (the agents
// wait for the CiliumNode the operator allocates: docs.cilium.io, upgrade
// guide), the node agents, then the controllers that need them
// (calico-kube-controllers: the node agent programs the routes new pods
// need).
const (
	PhaseOperator Phase = iota + 1
	PhaseAgent
	PhaseControl
)

// Role is one controller of a CNI the staged restart recognises by its pod
// labels, as the upstream manifests label them.
type Role struct {
	// Name is the role (restart.Workload.Role).
	Name string
	// Kind is the controller's kind ("DaemonSet", "Deployment"); "" for
	// any (a pod's labels match whatever its controller).
	Kind string
	// Label and Value are the pod label that says it.
	Label, Value string
	Phase        Phase
}

// HostState is the host network state a CNI leaves on a node that holds
// the old pod range: interfaces with old-range addresses, routes to the old
// blocks, and files it reads back at start (package bundle turns it into
// the actions `node apply` executes and the commands the runbook prints).
type HostState struct {
	// Agents are the CNI agent's container names: their running containers
	// are stopped first (`crictl stop`), as a running agent recreates what
	// is removed under it: flannel's vxlan device watcher recreated
	// flannel.1 with the old subnet's address at once, and the new agent
	// then adds its own beside it (flannel's EnsureV4AddressOnLink removes
	// only addresses inside the new network), so host-to-pod traffic
	// across nodes (NodePorts) left from the old address, seen by the lab.
	// The kubelet starts them again, with the new cluster's configuration.
	Agents []string
	// Links are deleted (`ip link delete`) when they exist.
	Links []string
	// Flush are interfaces whose addresses are flushed (the kernel's
	// fallback tunnel devices cannot be deleted).
	Flush []string
	// RouteProtos are routing protocols whose routes are flushed.
	RouteProtos []string
	// Paths are removed.
	Paths []string
}

// Empty says whether there is nothing to clean.
func (h HostState) Empty() bool {
	return len(h.Agents)+len(h.Links)+len(h.Flush)+len(h.RouteProtos)+len(h.Paths) == 0
}

// CNI is one row of the table.
type CNI struct {
	// Name is one of the name constants; Display is how prose names it
	// ("Calico").
	Name, Display string

	// ConfigMaps are the ConfigMaps its manifests create, in each
	// install's namespace; the first is the one whose settings detection
	// and the rules read.
	ConfigMaps []Object
	// DaemonSets are its node agents' DaemonSets, in each install's
	// namespace; with DaemonSetPrefix their names are prefixes (flannel's
	// DaemonSet had -amd64 style names).
	DaemonSets      []Object
	DaemonSetPrefix bool
	// IPAM are the custom resources in which it keeps IPAM state in etcd,
	// counted by detection.
	IPAM []string
	// Markers are custom resources whose presence also shows it (the
	// operator's Installation).
	Markers []string
	// HelmCharts show it as RKE2's packaged CNI (no ConfigMap or DaemonSet
	// in etcd), NodeAnnotation as k3s's embedded one (the annotation its
	// kube subnet manager sets to "true" on the Nodes).
	HelmCharts     []Object
	NodeAnnotation string

	// Roles are its controllers in the staged restart.
	Roles []Role

	// HostState is what `node apply` and the runbook remove on a node.
	HostState HostState

	// Namespaces are the namespaces of its own installs besides
	// kube-system: their pods are recreated first (leftovers' order).
	Namespaces []string
	// PodState are the custom resources holding its per-pod addresses,
	// which its agents recreate with the pods (leftovers' pod-level state).
	PodState []string
	// PolicyGroups are the API groups of its objects that select traffic
	// by CIDR, where a CIDR covering an old range still means it.
	PolicyGroups []string

	// IPAMRule is the rule that moves its IPAM state ("" when none needs
	// to): only such a CNI's state can be left by hand (--leave-cni-state),
	// and ByHand says how, a format of the state's description (%[1]s) and
	// the new pod range (%[2]s).
	IPAMRule, ByHand string
}

// table is the one list, in the order detection names the CNIs. Sources:
// the upstream manifests (flannel-io/flannel Documentation/kube-flannel.yml,
// projectcalico manifests/calico.yaml and canal.yaml and the tigera
// operator, cilium's install/kubernetes templates, weaveworks' weave-net
// DaemonSet); flannel keeps FLANNEL_SUBNET in /run/flannel/subnet.env and
// reads it back at start (flannel-io/flannel main.go), its bridge cni0
// holds the old subnet's gateway and flannel.1 the old VTEP address;
// host-local IPAM keeps its reservations in /var/lib/cni/networks/<network>;
// Calico's BIRD installs routes with proto bird to the old blocks and puts
// tunnel addresses on vxlan.calico and tunl0; Cilium puts its router
// address on cilium_host (cilium_net is its peer) and restores endpoints
// from /run/cilium/state; Weave's bridge and its persisted IPAM ring are
// in /var/lib/weave. A function, so that no caller can change the table.
func table() []CNI {
	return []CNI{
		{
			Name: Flannel, Display: "flannel",
			ConfigMaps:      []Object{{"kube-flannel", "kube-flannel-cfg"}, {"kube-system", "kube-flannel-cfg"}},
			DaemonSets:      []Object{{"kube-flannel", "kube-flannel-ds"}, {"kube-system", "kube-flannel-ds"}},
			DaemonSetPrefix: true,
			NodeAnnotation:  "flannel.alpha.coreos.com/kube-subnet-manager",
			Roles:           []Role{{Name: "flannel", Kind: "DaemonSet", Label: "app", Value: "flannel", Phase: PhaseAgent}},
			HostState:       HostState{Agents: []string{"kube-flannel"}, Links: []string{"cni0", "flannel.1", "flannel-v6.1"}, Paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/cbr0"}},
			Namespaces:      []string{"kube-flannel"},
		},
		{
			Name: Canal, Display: "Canal",
			ConfigMaps: []Object{{"kube-system", "canal-config"}},
			DaemonSets: []Object{{"kube-system", "canal"}},
			HelmCharts: []Object{{"kube-system", "rke2-canal"}},
			Roles:      []Role{{Name: "canal", Kind: "DaemonSet", Label: "k8s-app", Value: "canal", Phase: PhaseAgent}},
			HostState:  HostState{Agents: []string{"calico-node", "kube-flannel"}, Links: []string{"cni0", "flannel.1"}, Paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/k8s-pod-network"}},
		},
		{
			Name: Calico, Display: "Calico",
			ConfigMaps:      []Object{{"kube-system", "calico-config"}},
			DaemonSets:      []Object{{"kube-system", "calico-node"}, {"calico-system", "calico-node"}},
			DaemonSetPrefix: true,
			IPAM:            []string{CalicoIPPools, CalicoIPAMBlocks, CalicoBlockAffinities, CalicoIPAMHandles},
			Markers:         []string{TigeraInstallations},
			Roles: []Role{
				{Name: "calico-node", Kind: "DaemonSet", Label: "k8s-app", Value: "calico-node", Phase: PhaseAgent},
				{Name: "calico-kube-controllers", Label: "k8s-app", Value: "calico-kube-controllers", Phase: PhaseControl},
			},
			HostState:    HostState{Agents: []string{"calico-node"}, Links: []string{"vxlan.calico", "vxlan-v6.calico"}, Flush: []string{"tunl0"}, RouteProtos: []string{"bird"}},
			Namespaces:   []string{"tigera-operator", "calico-system"},
			PolicyGroups: []string{"crd.projectcalico.org"},
			IPAMRule:     "calico",
			ByHand: "Calico IPAM state left at the old range (--leave-cni-state calico: %[1]s): after the restore, create an IPPool for %[2]s with the old pool's blockSize, ipipMode/vxlanMode and natOutgoing, " +
				"disable the old pool, recreate every pod that is not on the host network so it takes an address from the new pool, then delete the old pool (its IPAM blocks and affinities go with it)",
		},
		{
			Name: Cilium, Display: "Cilium",
			ConfigMaps: []Object{{"kube-system", "cilium-config"}},
			DaemonSets: []Object{{"kube-system", "cilium"}},
			IPAM:       []string{CiliumNodes, CiliumPodIPPools},
			Roles: []Role{
				{Name: "cilium-operator", Label: "io.cilium/app", Value: "operator", Phase: PhaseOperator},
				{Name: "cilium", Kind: "DaemonSet", Label: "k8s-app", Value: "cilium", Phase: PhaseAgent},
			},
			HostState:    HostState{Agents: []string{"cilium-agent"}, Links: []string{"cilium_host", "cilium_net", "cilium_vxlan", "cilium_geneve"}, Paths: []string{"/run/cilium/state"}},
			Namespaces:   []string{"cilium"},
			PodState:     []string{CiliumEndpoints},
			PolicyGroups: []string{"cilium.io"},
			IPAMRule:     "cilium",
			ByHand: "Cilium IPAM state left at the old range (--leave-cni-state cilium: %[1]s): after the restore, set the pool in cilium-config to %[2]s, delete every CiliumNode, " +
				"restart cilium-operator and then the cilium DaemonSet (each agent recreates its CiliumNode and the operator gives it a CIDR of the new pool), then recreate every pod that is not on the host network",
		},
		{
			Name: Weave, Display: "Weave",
			DaemonSets: []Object{{"kube-system", "weave-net"}},
			Roles:      []Role{{Name: "weave-net", Kind: "DaemonSet", Label: "name", Value: "weave-net", Phase: PhaseAgent}},
			HostState:  HostState{Agents: []string{"weave"}, Links: []string{"weave", "datapath", "vethwe-bridge", "vxlan-6784"}, Paths: []string{"/var/lib/weave"}},
		},
	}
}

// All is the table, in detection order.
func All() []CNI { return table() }

// Names are the CNIs' names, in detection order.
func Names() []string {
	var out []string
	for _, c := range table() {
		out = append(out, c.Name)
	}
	return out
}

// Lookup is the row of a CNI by name.
func Lookup(name string) (CNI, bool) {
	i := slices.IndexFunc(table(), func(c CNI) bool { return c.Name == name })
	if i < 0 {
		return CNI{}, false
	}
	return table()[i], true
}

// MustLookup is Lookup for a name constant of this package; another name
// panics (a programming error, caught by any test that loads the caller).
func MustLookup(name string) CNI {
	c, ok := Lookup(name)
	if !ok {
		panic("cni: no CNI " + name)
	}
	return c
}

// Leavable are the CNIs whose IPAM state --leave-cni-state may leave at
// the old range (those with an IPAMRule), in table order.
func Leavable() []string {
	var out []string
	for _, c := range table() {
		if c.IPAMRule != "" {
			out = append(out, c.Name)
		}
	}
	return out
}

// DisplayList names every CNI as prose does: "flannel, Canal, Calico,
// Cilium or Weave".
func DisplayList() string {
	var d []string
	for _, c := range table() {
		d = append(d, c.Display)
	}
	if len(d) < 2 {
		return strings.Join(d, "")
	}
	return strings.Join(d[:len(d)-1], ", ") + " or " + d[len(d)-1]
}

// Roles are every CNI's restart roles: those of PhaseOperator first, then
// PhaseAgent, then PhaseControl, each in table order.
func Roles() []Role {
	var out []Role
	for _, c := range table() {
		out = append(out, c.Roles...)
	}
	slices.SortStableFunc(out, func(a, b Role) int { return int(a.Phase) - int(b.Phase) })
	return out
}

// Namespaces are the CNIs' own namespaces, in table order, each once.
func Namespaces() []string {
	var out []string
	for _, c := range table() {
		for _, ns := range c.Namespaces {
			if !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
	}
	return out
}

// PodState are the CNIs' per-pod resources, in table order.
func PodState() []string {
	var out []string
	for _, c := range table() {
		out = append(out, c.PodState...)
	}
	return out
}

// PolicyGroups are the CNIs' policy API groups, in table order.
func PolicyGroups() []string {
	var out []string
	for _, c := range table() {
		out = append(out, c.PolicyGroups...)
	}
	return out
}

// Groups are the API groups of the CNIs' IPAM resources (with markers:
// also those of the marker resources), in table order, each once.
func Groups(markers bool) []string {
	var out []string
	for _, c := range table() {
		res := c.IPAM
		if markers {
			res = slices.Concat(c.IPAM, c.Markers)
		}
		for _, r := range res {
			if _, g, ok := strings.Cut(r, "."); ok && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}
