package bundle

import (
	"fmt"
	"strings"
)

// NodeStep is one step of `snapshift node apply` as the operator reads it:
// the ID backup.json records it by (nodeops' Step), the phase its lines
// and timings carry, and what it does. node apply --help and the runbook's
// apply step are rendered from ApplySteps, and nodeops' test holds its
// steps to the same list, so the three never disagree.
type NodeStep struct {
	ID    string
	Phase string
	Does  string
}

// ApplySteps are node apply's steps, in order.
var ApplySteps = []NodeStep{
	{"preflight", "preflight", "checks everything before the first change: the host has the node's address, every file's sha256 matches report.json (and runbook.json is the one written with it), systemctl, crictl and ip are there, the root holds the node's static pods and the etcd data dir report.json names and no etcd run by systemd from the host, and there is disk space for the backups; a refusal (exit 4) names every check that failed"},
	{"backup", "backup", "backs up /etc/kubernetes, /var/lib/kubelet/config.yaml and /var/lib/kubelet/pki (copies) into its backup directory, recorded in backup.json, once"},
	{"rollback-armed", "deadline", "with --rollback-after, arms a systemd timer that rolls the node back at the deadline unless snapshift node confirm runs first"},
	{"static-pods-stopped", "stop", "moves the static-pod manifests out, waits until crictl shows no etcd and no kube-apiserver, and stops the kubelet; with a new CA it then stops every other container still running (each trusts the old CA in memory; the kubelet starts them again)"},
	{"etcd-moved", "stop", "moves the old etcd data dir into the backup (--stop-only ends here: the first of the two phases)"},
	{"etcd-installed", "install", "installs the restored etcd member as the etcd data dir"},
	{"installed", "install", "installs the node's files (root-owned; keys and kubeconfigs 0600) and, when the CA changed, moves the kubelet's old-CA client certificates aside"},
	{"cni-cleaned", "cni", "removes the host network state the detected CNIs left (interfaces, their state files)"},
	{"peers-checked", "peers", "asks every other etcd peer URL of the bundle who it is, and refuses while one answers as a member of another cluster (the old one)"},
	{"kubelet-started", "start", "starts the kubelet"},
	{"healthy", "health", "waits for etcd (every member listed, this one healthy, the cluster and member IDs report.json records) and for this node's kube-apiserver (/readyz)"},
}

// ApplyStepsText is ApplySteps as numbered lines, each prefixed by indent.
func ApplyStepsText(indent string) string {
	var b strings.Builder
	for i, s := range ApplySteps {
		fmt.Fprintf(&b, "%s%d. %s (%s): %s\n", indent, i+1, s.ID, s.Phase, s.Does)
	}
	return b.String()
}
