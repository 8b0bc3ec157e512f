package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/inspect"
	"github.com/snapshift/snapshift/state"
)

// printDistribution says who wrote the snapshot and how that was found.
func printDistribution(out io.Writer, d *state.Distribution) {
	if d == nil {
		return
	}
	fmt.Fprintf(out, "\nDistribution: %s\n", d.Name)
	for _, f := range d.FoundBy {
		fmt.Fprintf(out, "  found by: %s\n", f)
	}
	if !d.IsK3sFamily() {
		return
	}
	var servers []string
	for _, s := range d.Servers {
		servers = append(servers, s.Node)
	}
	if len(servers) > 0 {
		fmt.Fprintf(out, "  servers: %s\n", strings.Join(servers, ", "))
	}
	if len(d.Agents) > 0 {
		fmt.Fprintf(out, "  agents: %s\n", strings.Join(d.Agents, ", "))
	}
	if len(d.KeysOutsideRegistry) > 0 {
		fmt.Fprintf(out, "  keys outside /registry (copied byte for byte): %s\n", strings.Join(d.KeysOutsideRegistry, ", "))
	}
}

// refuseK3sSnapshot is the answer of the kubeadm-only commands (certs,
// manifests) to a positional argument: when it is a k3s or RKE2 snapshot,
// one sentence on what k3s does instead (exit 4); otherwise nil, and the
// command's own usage check says it takes no arguments.
func (o *common) refuseK3sSnapshot(ctx context.Context, c *cli.Context, what string) error {
	if c.NArg() != 1 {
		return nil
	}
	path := c.Args().First()
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	defer o.cleanup()
	quiet := o.quiet
	o.quiet = true // a refusal is one line
	err := o.unpack(&path)
	o.quiet = quiet
	if err != nil {
		return nil // not a snapshot we can read: the usage error says enough
	}
	r, err := inspect.Run(ctx, inspect.Config{Path: path, SkipHashCheck: true})
	if err != nil || r.Distribution == nil || !r.Distribution.IsK3sFamily() {
		return nil
	}
	prog := r.Distribution.Program
	return refusedf("%s is a %s snapshot, and %s: %s does that itself (its certificates under /var/lib/rancher/%s/server/tls, "+
		"renewed at start, the serving certificate re-issued when server/tls/dynamic-cert-regenerate exists; its control plane from its config file), "+
		"so follow the %s runbook that `snapshift plan` prints instead",
		o.in.original, r.Distribution.Name, what, r.Distribution.Name, prog, r.Distribution.Name)
}
