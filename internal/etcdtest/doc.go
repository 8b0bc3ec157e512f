// Package etcdtest runs a real etcd server in-process (go.etcd.io/etcd/server/v3/embed) for tests and
// development tools.
//
// Every server listens on 127.0.0.1 only, on free ports picked at start, logs nothing below error
// level, and keeps its data in a directory of its own. Functions return errors so that commands can
// use them; the ...T variants wrap them for tests, fail the test on error and register cleanup.
//
// Ways to start a server:
//
//   - Start: a new single-member cluster in an empty data dir.
//   - StartCluster: a new cluster of several members bootstrapped together (etcd's default token
//     unless one is given).
//   - StartRestored: one member on a data dir produced by `etcdutl snapshot restore`
//     (or by the restore package this repository builds on the same library).
//   - StartRestoredCluster: several restored members started together so that they can elect a leader.
//   - LaunchRestored: one restored member started without waiting for it (WaitReady waits), for a
//     rolling replacement in which a member runs alone before its peers start.
//
// A restored data dir already holds a WAL, so etcd boots from it: the initial cluster, the cluster
// state and the token given at start are ignored, and the membership (member IDs and peer URLs) is the
// one written at restore time. The member must therefore listen on exactly the peer URL it was restored
// with; StartRestored checks that after start. See RestoredConfig.
package etcdtest
