package fsutil

import (
	"fmt"
	"os"
	"syscall"
)

// Failpoints (etcd's gofail): the comments below become code only in the
// binary `make failpoints` builds; in every other build these functions
// are empty. Each is triggered by name, with gofail's terms:
//
//	GOFAIL_FAILPOINTS='fsutilBeforeRename=panic("crash")'         a panic (deferred cleanups run)
//	GOFAIL_FAILPOINTS='fsutilBeforeRename=2*off->return("kill")'  SIGKILL at the third hit
//	GOFAIL_FAILPOINTS='fsutilBeforeRename=return("count")'        log each hit to $SNAPSHIFT_FAILPOINT_LOG

// failpointTempCreated runs after each temporary file or directory is
// created.
func failpointTempCreated() {
	// gofail: var fsutilTempCreated string
	// Crash("fsutilTempCreated", fsutilTempCreated)
}

// FailpointBeforeFsync and FailpointAfterFsync run around each fsync of a
// file or directory about to be published.
func FailpointBeforeFsync() {
	// gofail: var fsutilBeforeFsync string
	// Crash("fsutilBeforeFsync", fsutilBeforeFsync)
}

func FailpointAfterFsync() {
	// gofail: var fsutilAfterFsync string
	// Crash("fsutilAfterFsync", fsutilAfterFsync)
}

// failpointBeforeRename runs before each publishing rename.
func failpointBeforeRename() {
	// gofail: var fsutilBeforeRename string
	// Crash("fsutilBeforeRename", fsutilBeforeRename)
}

// failpointBeforeParentSync and failpointAfterParentSync run around the
// fsync of a published path's parent, after the rename.
func failpointBeforeParentSync() {
	// gofail: var fsutilBeforeParentSync string
	// Crash("fsutilBeforeParentSync", fsutilBeforeParentSync)
}

func failpointAfterParentSync() {
	// gofail: var fsutilAfterParentSync string
	// Crash("fsutilAfterParentSync", fsutilAfterParentSync)
}

// FailpointBetweenRenames runs between two renames of a staged set
// (certificates, manifests, a WAL dir and its data dir).
func FailpointBetweenRenames() {
	// gofail: var fsutilBetweenRenames string
	// Crash("fsutilBetweenRenames", fsutilBetweenRenames)
}

// FailpointBetweenMembers runs between the publishing of two members of a
// multi-member restore (rebuild's data dirs).
func FailpointBetweenMembers() {
	// gofail: var fsutilBetweenMembers string
	// Crash("fsutilBetweenMembers", fsutilBetweenMembers)
}

// Crash is what a failpoint does when its gofail term returns v: "kill"
// sends this process SIGKILL (nothing more runs: no deferred cleanup, no
// buffered write), "count" appends name to the file
// $SNAPSHIFT_FAILPOINT_LOG (the crash suite's map of the steps a command
// takes), anything else panics. Called only from failpoint builds.
func Crash(name, v string) {
	switch v {
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	case "count":
		if log := os.Getenv("SNAPSHIFT_FAILPOINT_LOG"); log != "" {
			f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				fmt.Fprintln(f, name)
				f.Close()
			}
		}
	default:
		panic("failpoint " + name + ": " + v)
	}
}
