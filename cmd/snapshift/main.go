// Command snapshift rewrites Kubernetes cluster state offline, in etcd
// snapshot files. See `snapshift --help`.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"time"

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
// the whole command, for `make bench` investigations (go tool pprof); and
// SNAPSHIFT_HEAPPROFILE=FILE: the heap profile (inuse_space) at the largest
// live heap the collector saw, rewritten each time it grows.
func run() int {
	if path := os.Getenv("SNAPSHIFT_HEAPPROFILE"); path != "" {
		stop := make(chan struct{})
		done := make(chan struct{})
		go heapProfiles(path, stop, done)
		defer func() { close(stop); <-done }()
	}
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

// heapProfiles writes the heap profile to path whenever the live heap after
// a collection is a new high (sampled every 100ms), until stop is closed.
func heapProfiles(path string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live <= peak+peak/50 {
			continue
		}
		peak = live
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "snapshift: SNAPSHIFT_HEAPPROFILE: %v\n", err)
			return
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "snapshift: SNAPSHIFT_HEAPPROFILE: %v\n", err)
		}
		f.Close()
	}
}
