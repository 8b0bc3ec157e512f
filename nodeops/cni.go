package nodeops

import (
	"context"
	"os"
	"slices"
)

// cniState is the host network state a CNI leaves on a node that holds
// the old pod range: interfaces with old-range addresses, routes to the
// old blocks, and files it reads back at start.
type cniState struct {
	// links are deleted (with `ip link delete`) if they exist.
	links []string
	// flush are interfaces whose addresses are flushed (the kernel's
	// fallback tunnel devices cannot be deleted).
	flush []string
	// routeProtos are routing protocols whose routes are flushed.
	routeProtos []string
	// paths are removed (under the root).
	paths []string
}

// cniStates by state.DetectCNI name. Sources: flannel keeps FLANNEL_SUBNET
// in /run/flannel/subnet.env and reads it back at start
// (flannel-io/flannel main.go), its bridge cni0 holds the old subnet's
// gateway and flannel.1 the old VTEP address; host-local IPAM keeps its
// reservations in /var/lib/cni/networks/<network>; Calico's BIRD installs
// routes with proto bird to the old blocks and puts tunnel addresses on
// vxlan.calico / tunl0; Cilium puts the router address on cilium_host
// (cilium_net is its peer) and restores endpoints from /run/cilium/state.
var cniStates = map[string]cniState{
	"flannel": {links: []string{"cni0", "flannel.1", "flannel-v6.1"}, paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/cbr0"}},
	"canal":   {links: []string{"cni0", "flannel.1"}, paths: []string{"/run/flannel/subnet.env", "/var/lib/cni/networks/k8s-pod-network"}},
	"calico":  {links: []string{"vxlan.calico", "vxlan-v6.calico"}, flush: []string{"tunl0"}, routeProtos: []string{"bird"}},
	"cilium":  {links: []string{"cilium_host", "cilium_net", "cilium_vxlan", "cilium_geneve"}, paths: []string{"/run/cilium/state"}},
	"weave":   {links: []string{"weave", "datapath", "vethwe-bridge", "vxlan-6784"}, paths: []string{"/var/lib/weave"}},
}

// cleanCNI removes the host network state of the CNIs the snapshot shows
// (a link that does not exist is skipped: the step can run again).
func (h *host) cleanCNI(ctx context.Context, cnis []string) error {
	for _, name := range cnis {
		st, ok := cniStates[name]
		if !ok {
			h.logf("cni", "%s: no host state known to clean", name)
			continue
		}
		for _, l := range st.links {
			if _, err := h.run(ctx, "ip", "link", "show", l); err != nil {
				continue // absent
			}
			h.logf("cni", "%s: ip link delete %s", name, l)
			if _, err := h.run(ctx, "ip", "link", "delete", l); err != nil {
				return err
			}
		}
		for _, l := range st.flush {
			if _, err := h.run(ctx, "ip", "link", "show", l); err != nil {
				continue
			}
			h.logf("cni", "%s: ip addr flush dev %s", name, l)
			if _, err := h.run(ctx, "ip", "addr", "flush", "dev", l); err != nil {
				return err
			}
		}
		for _, p := range st.routeProtos {
			h.logf("cni", "%s: ip route flush proto %s", name, p)
			if _, err := h.run(ctx, "ip", "route", "flush", "proto", p); err != nil {
				return err
			}
		}
		for _, p := range st.paths {
			if ok, _ := exists(h.path(p)); ok {
				h.logf("cni", "%s: rm -rf %s", name, p)
				if err := os.RemoveAll(h.path(p)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// KnownCNIs are the CNIs whose host state cleanCNI knows.
func KnownCNIs() []string {
	var out []string
	for k := range cniStates {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
