package app

import (
	"fmt"
	"io"
	"strings"

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
