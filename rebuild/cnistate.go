package rebuild

import (
	"fmt"
	"strings"
)

// CNIHostState is the host network state a CNI leaves on a node that holds
// the old pod range: interfaces with old-range addresses, routes to the old
// blocks, and files it reads back at start. `snapshift node apply` removes
// it on the control-plane nodes; the runbook gives the same commands for
// the workers.
type CNIHostState struct {
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

// CNIHostStates by state.DetectCNI name. Sources: flannel keeps
// FLANNEL_SUBNET in /run/flannel/subnet.env and reads it back at start
// (flannel-io/flannel main.go), its bridge cni0 holds the old subnet's
// gateway and flannel.1 the old VTEP address; host-local IPAM keeps its
// reservations in /var/lib/cni/networks/<network>; Calico's BIRD installs
// routes with proto bird to the old blocks and puts tunnel addresses on
// vxlan.calico and tunl0; Cilium puts its router address on cilium_host
// (cilium_net is its peer) and restores endpoints from /run/cilium/state;
// Weave's bridge and its persisted IPAM ring are in /var/lib/weave.
var CNIHostStates = map[string]CNIHostState{
	"flannel": {Links: []string{"cni0", "flannel.1", "flannel-v6.1"}, Paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/cbr0"}},
	"canal":   {Links: []string{"cni0", "flannel.1"}, Paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/k8s-pod-network"}},
	"calico":  {Links: []string{"vxlan.calico", "vxlan-v6.calico"}, Flush: []string{"tunl0"}, RouteProtos: []string{"bird"}},
	"cilium":  {Links: []string{"cilium_host", "cilium_net", "cilium_vxlan", "cilium_geneve"}, Paths: []string{"/run/cilium/state"}},
	"weave":   {Links: []string{"weave", "datapath", "vethwe-bridge", "vxlan-6784"}, Paths: []string{"/var/lib/weave"}},
}

// Commands are the shell commands that remove the state (each one safe
// when there is nothing to remove).
func (s CNIHostState) Commands() []string {
	var out []string
	for _, l := range s.Links {
		out = append(out, fmt.Sprintf("ip link show %s >/dev/null 2>&1 && ip link delete %s", l, l))
	}
	for _, l := range s.Flush {
		out = append(out, fmt.Sprintf("ip link show %s >/dev/null 2>&1 && ip addr flush dev %s", l, l))
	}
	for _, p := range s.RouteProtos {
		out = append(out, "ip route flush proto "+p)
	}
	if len(s.Paths) > 0 {
		out = append(out, "rm -rf "+strings.Join(s.Paths, " "))
	}
	return out
}
