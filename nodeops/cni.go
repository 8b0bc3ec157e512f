package nodeops

import (
	"context"
	"os"
	"slices"

	"github.com/snapshift/snapshift/rebuild"
)

// cleanCNI removes the host network state of the CNIs the snapshot shows
// (a link that does not exist is skipped: the step can run again).
func (h *host) cleanCNI(ctx context.Context, cnis []string) error {
	for _, name := range cnis {
		st, ok := rebuild.CNIHostStates[name]
		if !ok {
			h.logf("cni", "%s: no host state known to clean", name)
			continue
		}
		for _, l := range st.Links {
			if _, err := h.run(ctx, "ip", "link", "show", l); err != nil {
				continue // absent
			}
			h.logf("cni", "%s: ip link delete %s", name, l)
			if _, err := h.run(ctx, "ip", "link", "delete", l); err != nil {
				return err
			}
		}
		for _, l := range st.Flush {
			if _, err := h.run(ctx, "ip", "link", "show", l); err != nil {
				continue
			}
			h.logf("cni", "%s: ip addr flush dev %s", name, l)
			if _, err := h.run(ctx, "ip", "addr", "flush", "dev", l); err != nil {
				return err
			}
		}
		for _, p := range st.RouteProtos {
			h.logf("cni", "%s: ip route flush proto %s", name, p)
			if _, err := h.run(ctx, "ip", "route", "flush", "proto", p); err != nil {
				return err
			}
		}
		for _, p := range st.Paths {
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
	for k := range rebuild.CNIHostStates {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
