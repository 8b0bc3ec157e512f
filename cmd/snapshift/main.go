// Command snapshift rewrites Kubernetes cluster state offline, in etcd
// snapshot files. See `snapshift --help`.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"

	"github.com/snapshift/snapshift/cmd/snapshift/app"
)

func main() {
	if os.Getenv("GOGC") == "" {
		// A collection at 1.5x the live heap instead of 2x keeps the
		// commands that index a whole snapshot (verify, inspect) smaller at
		// little cost; a migration then sizes the collector to its input
		// (app.SizeGC).
		debug.SetGCPercent(50)
		app.SizeGC = os.Getenv("GOMEMLIMIT") == ""
	}
	os.Exit(run())
}

// run is main with SNAPSHIFT_CPUPROFILE=FILE honoured: a CPU profile of
// the whole command, for `make bench` investigations (go tool pprof).
func run() int {
	if path := os.Getenv("SNAPSHIFT_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "snapshift: SNAPSHIFT_CPUPROFILE: %v\n", err)
			return app.ExitUsage
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "snapshift: SNAPSHIFT_CPUPROFILE: %v\n", err)
			return app.ExitUsage
		}
		defer pprof.StopCPUProfile()
	}
	return app.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)
}
