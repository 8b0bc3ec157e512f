// Package nodeops puts one control-plane node's part of a rebuild bundle
// in place, and takes it out again: `snapshift node apply` and
// `snapshift node rollback` (docs/DESIGN.md decision 22: the operation is code,
// tested by running it).
//
// Apply, on the node named by the bundle: preflight (the right host, every
// file's sha256 against report.json, crictl, systemctl and ip present, a
// root with /etc/kubernetes's static pods and the etcd data dir the bundle
// names and no host etcd (a systemd etcd.service, kubespray's default),
// disk space for the backups: every check runs, a refusal names
// each failure, and a pass says what will be copied, moved and restored);
// a backup, made once, of exactly what it replaces
// (/etc/kubernetes, the kubelet's config.yaml and pki/ copied, the etcd
// data dir moved, or its contents when it is a mount point), recorded in
// backup.json; the static pods stopped and
// the kubelet stopped, waiting until crictl shows no etcd and no
// kube-apiserver; the node's files installed with their owners and modes;
// the kubelet's old-CA client certificates moved aside when the CA
// changed; the CNI's host state removed; the kubelet started; health gates
// (etcd member list and health with the bundle's healthcheck-client
// certificate, kube-apiserver /readyz with admin.conf). Rollback puts back
// every path backup.json records, byte for byte, and restarts the old
// control plane.
//
// With Config.RollbackAfter, apply arms a transient systemd timer right
// after its backup; unless Confirm records the node healthy before it, the
// timer runs RollbackIfUnconfirmed (deadline.go). Preflight refuses it when
// no systemd can hold the timer (no systemd-run, or systemctl reaching no
// manager).
//
// Apply is a list of typed steps (steps.go); after each one backup.json,
// published like every output (fsutil.WriteFile), records it, so that a
// second apply, or a rollback, finishes from wherever a killed run
// stopped (the crash suite's TestNodeCrash proves it). The bundle is read
// through package bundle, its versioned contract: nodeops imports nothing
// of the engine that wrote it (docs/DESIGN.md decision 31).
//
// Every host path is under Config.Root (default /), and the host's service
// manager and container runtime are reached through PATH (systemctl,
// crictl, ip), so a test runs both in a directory with recorders first in
// PATH and real etcd and kube-apiserver processes started from the files
// apply installed.
//
// Why a Go command and not generated shell scripts: the gates speak etcd's
// and the apiserver's protocols with the bundle's certificates (kubeadm
// nodes have no etcdctl on the host; it lives in the etcd image), the same
// code is tested in-process and end to end, and there is no second
// language to lint. The price is one static binary copied to each node,
// which the runbook's first step does.
package nodeops
