// Package crashtest is the crash suite of docs/DESIGN.md decision 23 (`make
// crash`; its tests build only with -tags crash). It runs the snapshift
// binary built with etcd's gofail failpoints (`make failpoints`) and kills it
// at every step a writing command takes (SIGKILL from the failpoint, and a Go
// panic), at random times on a larger generated snapshot, and on a full disk
// (RLIMIT_FSIZE, as the bad-input table does); then it checks that the input
// is unchanged, that each output is absent, as it was before, or complete (the
// same checks the commands promise: verify, bbolt's Tx.Check, a real etcd
// started on each restored member serving the reference revision and keys,
// every bundle file parsing), that the next run leaves no file of the killed
// run, and that it succeeds or refuses in one line.
//
// TestNodeCrash does the same for the node side: `node apply` killed at
// every step (the failpoint nodeopsStepDone between each step and its
// record in backup.json, and the fsutil failpoints inside them), then a
// second apply must leave the bundle in place and a rollback the node as
// it was; `node rollback` killed at every step, then a second rollback
// must leave the node as it was. TestNodeFsyncAudit audits both as
// TestFsyncAudit does the other commands.
//
// TestFsyncAudit runs each command under strace and replays the trace: every
// file and directory under a published path must be fsynced after its last
// write and before the publishing rename, and the parent after it.
package crashtest
