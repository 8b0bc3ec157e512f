package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/snapshift/snapshift/snapshot"
)

// ChildCommand is the hidden first argument under which a benchmark binary runs the floor copy and
// etcd's restore as measured child processes (see ChildMain).
const ChildCommand = "__bench-child"

// ChildMain runs one child case and returns its exit code:
//
//	floor IN OUT            FloorCopy of IN to OUT
//	floor-bbolt IN OUT      BboltFloorCopy of IN to OUT
//	etcdutl-restore IN DIR  etcd's own restore of IN into the new data dir DIR
//	measure ARGV...         run ARGV with MeasureDirect and print the Measurement as JSON
//	measure --cgroup DIR ARGV...
//	                        the same from inside the memory cgroup DIR (joined before ARGV starts);
//	                        a failure of ARGV is printed in the Measurement (Failure), exit code 0
//
// The benchmark's binary calls it when its first argument is ChildCommand.
func ChildMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 3 && args[0] == "measure" && args[1] == "--cgroup" {
		return measureInCgroup(args[2], args[3:], stdout, stderr)
	}
	if len(args) > 1 && args[0] == "measure" {
		m, err := MeasureDirect(context.Background(), args[1:])
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if err := json.NewEncoder(stdout).Encode(m); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	if err := child(args); err != nil {
		fmt.Fprintf(stderr, "bench child %v: %v\n", args, err)
		return 1
	}
	return 0
}

// measureInCgroup joins the memory cgroup dir, runs argv there and prints its Measurement with
// what the cgroup recorded and, if it failed, why.
func measureInCgroup(dir string, argv []string, stdout, stderr io.Writer) int {
	if err := joinCgroup(dir); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	m, err := MeasureDirect(context.Background(), argv)
	u, uerr := readCgroupUsage(dir)
	if uerr != nil {
		fmt.Fprintln(stderr, uerr)
		return 1
	}
	m.Cgroup = u
	if err != nil {
		m.Failure = classifyFailure(m, err)
	}
	if err := json.NewEncoder(stdout).Encode(m); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func child(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want CASE IN OUT, got %d arguments", len(args))
	}
	switch args[0] {
	case "floor":
		_, err := FloorCopy(context.Background(), args[1], args[2], DefaultTxBytes)
		return err
	case "floor-bbolt":
		_, err := BboltFloorCopy(context.Background(), args[1], args[2], BboltFloorTxBytes)
		return err
	case "etcdutl-restore":
		return EtcdutlRestore(args[1], args[2])
	}
	return fmt.Errorf("unknown case %q", args[0])
}

// EtcdutlRestore restores snap into the new data dir dir with etcd's own code and the settings
// `snapshift restore` uses by default: member "default" at http://localhost:2380, token
// etcd-cluster, revision bump snapshot.DefaultRevisionBump, marked compacted.
func EtcdutlRestore(snap, dir string) error {
	const peer = "http://localhost:2380"
	return etcdsnapshot.NewV3(zap.NewNop()).Restore(etcdsnapshot.RestoreConfig{
		SnapshotPath: snap, Name: "default", OutputDataDir: dir, PeerURLs: []string{peer},
		InitialCluster: "default=" + peer, InitialClusterToken: "etcd-cluster",
		RevisionBump: snapshot.DefaultRevisionBump, MarkCompacted: true,
	})
}
