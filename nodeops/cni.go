package nodeops

import (
	"context"
	"os"
	"strings"

	"github.com/snapshift/snapshift/bundle"
)

// cleanCNI removes the host network state of the CNIs the snapshot shows,
// by bundle's table (the runbook prints the same actions for the workers);
// a link that does not exist is skipped, so the step can run again.
func (h *host) cleanCNI(ctx context.Context, cnis []string) error {
	for _, name := range cnis {
		st, ok := bundle.CNIHostStateOf(name)
		if !ok {
			h.logf("cni", "%s: no host state known to clean", name)
			continue
		}
		for _, a := range st.Actions() {
			if err := h.cniAction(ctx, name, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// cniAction does one action of a CNI's cleanup.
func (h *host) cniAction(ctx context.Context, cni string, a bundle.CNIAction) error {
	switch a.Kind {
	case bundle.StopAgent:
		out, err := h.run(ctx, "crictl", "ps", "--quiet", "--name", "^"+a.Arg+"$")
		if err != nil {
			return err
		}
		ids := strings.Fields(out)
		if len(ids) == 0 {
			return nil
		}
		h.logf("cni", "%s: crictl stop %s (its agent %s, which would recreate what is removed next)", cni, strings.Join(ids, " "), a.Arg)
		// crictl's own deadline (2s by default) covers the stop itself: a
		// loaded node took longer (the lab saw DeadlineExceeded).
		_, err = h.run(ctx, "crictl", append([]string{"--timeout", "60s", "stop"}, ids...)...)
		return err
	case bundle.DeleteLink, bundle.FlushAddresses:
		if _, err := h.run(ctx, "ip", "link", "show", a.Arg); err != nil {
			return nil // absent
		}
		args := []string{"link", "delete", a.Arg}
		if a.Kind == bundle.FlushAddresses {
			args = []string{"addr", "flush", "dev", a.Arg}
		}
		h.logf("cni", "%s: ip %s", cni, strings.Join(args, " "))
		_, err := h.run(ctx, "ip", args...)
		return err
	case bundle.FlushRoutes:
		h.logf("cni", "%s: ip route flush proto %s", cni, a.Arg)
		_, err := h.run(ctx, "ip", "route", "flush", "proto", a.Arg)
		return err
	default:
		if ok, _ := exists(h.path(a.Arg)); !ok {
			return nil
		}
		h.logf("cni", "%s: rm -rf %s", cni, a.Arg)
		return os.RemoveAll(h.path(a.Arg))
	}
}
