// Package crashtest is the crash suite of docs/DESIGN decision 23 (`make
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
// TestFsyncAudit runs each command under strace and replays the trace: every
// file and directory under a published path must be fsynced after its last
// write and before the publishing rename, and the parent after it.
package crashtest
