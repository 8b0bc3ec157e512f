package bundle

import (
	"fmt"
	"slices"
)

// CNIHostState is the host network state a CNI leaves on a node that holds
// the old pod range: interfaces with old-range addresses, routes to the old
// blocks, and files it reads back at start. `snapshift node apply` removes
// it on the control-plane nodes (executing Actions); the runbook gives the
// same actions as shell commands for the workers (Commands).
type CNIHostState struct {
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

// CNIHostStateOf is the host state of a CNI by state.DetectCNI's name.
// Sources: flannel keeps FLANNEL_SUBNET in /run/flannel/subnet.env and
// reads it back at start (flannel-io/flannel main.go), its bridge cni0
// holds the old subnet's gateway and flannel.1 the old VTEP address;
// host-local IPAM keeps its reservations in /var/lib/cni/networks/<network>;
// Calico's BIRD installs routes with proto bird to the old blocks and puts
// tunnel addresses on vxlan.calico and tunl0; Cilium puts its router
// address on cilium_host (cilium_net is its peer) and restores endpoints
// from /run/cilium/state; Weave's bridge and its persisted IPAM ring are
// in /var/lib/weave.
func CNIHostStateOf(cni string) (CNIHostState, bool) {
	st, ok := cniHostStates()[cni]
	return st, ok
}

// KnownCNIs are the CNIs whose host state the table knows, sorted.
func KnownCNIs() []string {
	var out []string
	for k := range cniHostStates() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func cniHostStates() map[string]CNIHostState {
	return map[string]CNIHostState{
		"flannel": {Agents: []string{"kube-flannel"}, Links: []string{"cni0", "flannel.1", "flannel-v6.1"}, Paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/cbr0"}},
		"canal":   {Agents: []string{"calico-node", "kube-flannel"}, Links: []string{"cni0", "flannel.1"}, Paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/k8s-pod-network"}},
		"calico":  {Agents: []string{"calico-node"}, Links: []string{"vxlan.calico", "vxlan-v6.calico"}, Flush: []string{"tunl0"}, RouteProtos: []string{"bird"}},
		"cilium":  {Agents: []string{"cilium-agent"}, Links: []string{"cilium_host", "cilium_net", "cilium_vxlan", "cilium_geneve"}, Paths: []string{"/run/cilium/state"}},
		"weave":   {Agents: []string{"weave"}, Links: []string{"weave", "datapath", "vethwe-bridge", "vxlan-6784"}, Paths: []string{"/var/lib/weave"}},
	}
}

// CNIActionKind is what one cleanup action does.
type CNIActionKind int

// The cleanup actions, in the order Actions lists them.
const (
	// StopAgent stops the running containers named Arg (crictl).
	StopAgent CNIActionKind = iota
	// DeleteLink deletes interface Arg if it exists.
	DeleteLink
	// FlushAddresses flushes interface Arg's addresses if it exists.
	FlushAddresses
	// FlushRoutes flushes the routes of protocol Arg.
	FlushRoutes
	// RemovePath removes host path Arg (and everything under it).
	RemovePath
)

// CNIAction is one step of a CNI host-state cleanup; each is safe when
// there is nothing to remove.
type CNIAction struct {
	Kind CNIActionKind
	Arg  string
}

// Actions are the steps that remove the state, in order.
func (s CNIHostState) Actions() []CNIAction {
	var out []CNIAction
	add := func(k CNIActionKind, args []string) {
		for _, a := range args {
			out = append(out, CNIAction{Kind: k, Arg: a})
		}
	}
	add(StopAgent, s.Agents)
	add(DeleteLink, s.Links)
	add(FlushAddresses, s.Flush)
	add(FlushRoutes, s.RouteProtos)
	add(RemovePath, s.Paths)
	return out
}

// Shell is the action as a shell command (what the runbook prints).
func (a CNIAction) Shell() string {
	switch a.Kind {
	case StopAgent:
		return fmt.Sprintf("crictl ps -q --name '^%s$' | xargs -r crictl --timeout 60s stop", a.Arg)
	case DeleteLink:
		return fmt.Sprintf("ip link show %s >/dev/null 2>&1 && ip link delete %s", a.Arg, a.Arg)
	case FlushAddresses:
		return fmt.Sprintf("ip link show %s >/dev/null 2>&1 && ip addr flush dev %s", a.Arg, a.Arg)
	case FlushRoutes:
		return "ip route flush proto " + a.Arg
	default:
		return "rm -rf " + a.Arg
	}
}

// Commands are the shell commands of Actions, in order.
func (s CNIHostState) Commands() []string {
	var out []string
	for _, a := range s.Actions() {
		out = append(out, a.Shell())
	}
	return out
}
