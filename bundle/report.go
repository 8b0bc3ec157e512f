package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/restart"
)

// APIVersion and Kind of report.json.
const (
	APIVersion = "snapshift.io/v1alpha1"
	Kind       = "BundleReport"
)

// Report is the part of report.json a node reads. The engine's report
// (package rebuild) embeds it and adds what it did; readers ignore that.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Members are the restored etcd members, one data dir each.
	Members []Member `json:"members"`
	// Nodes are the control-plane nodes, one bundle directory each.
	Nodes []Node `json:"nodes"`
	// Operation is what the node-side commands need to act.
	Operation *Operation `json:"operation,omitempty"`
	// Etcd are the restored cluster's IDs and the old cluster's: node
	// apply's and cluster check's gates compare the live members with them.
	Etcd *EtcdIdentities `json:"etcd,omitempty"`
}

// NewReport is an empty report of this version.
func NewReport() Report { return Report{APIVersion: APIVersion, Kind: Kind} }

// Member is one restored etcd member.
type Member struct {
	Name    string `json:"name"`
	DataDir string `json:"dataDir"` // inside the bundle
}

// Node is one control-plane node's part of the bundle.
type Node struct {
	Name             string `json:"name"`
	EtcdMember       string `json:"etcdMember"`
	AdvertiseAddress string `json:"advertiseAddress"`
	// Dir is kubernetes/<name>, inside the bundle: what goes to the node's
	// /etc/kubernetes.
	Dir string `json:"dir"`
	// Files are extra files the node needs outside the kubeconfigs, PKI
	// and manifests (the encryption configuration), with their host path.
	Files []HostFile `json:"files,omitempty"`
}

// HostFile is a file of the bundle and where it goes on the node.
type HostFile struct {
	Bundle string `json:"bundle"` // relative to the bundle
	Host   string `json:"host"`
}

// Operation is what `snapshift node apply|rollback` needs to put one
// node's part of the bundle in place: where the etcd data dir goes,
// whether the CA changed (old kubelet client certificates must go), the
// CNIs whose host state is cleaned, and the sha256 of every file of the
// bundle, checked before anything is touched; and what a cluster-wide
// restart needs: the workloads to restart and the webhooks in the way.
type Operation struct {
	// EtcdDataDir is the etcd data dir on every node (etcd.dataDir).
	EtcdDataDir string `json:"etcdDataDir"`
	// CAChanged is true when the bundle holds a new cluster CA.
	CAChanged bool `json:"caChanged"`
	// Recovery is true when the control plane was lost (the rebuild
	// file's recovery): apply accepts a node without /etc/kubernetes, its
	// static pods or an etcd data dir.
	Recovery bool `json:"recovery,omitempty"`
	// CNI are the CNIs the snapshot shows (the names of CNIHostStateOf).
	CNI []string `json:"cni,omitempty"`
	// Restart are the DaemonSets and Deployments to restart, in order
	// (RUNBOOK.md's staged restart).
	Restart []Workload `json:"restart,omitempty"`
	// ClusterDNS is the kubelets' new clusterDNS address when the service
	// range moved ("" otherwise): apply writes it into the node's
	// /var/lib/kubelet/config.yaml.
	ClusterDNS string `json:"clusterDNS,omitempty"`
	// Webhooks are the admission webhooks that would block the restart;
	// those Ignored were Fail and the runbook's last step sets them back.
	Webhooks []Webhook `json:"webhooks,omitempty"`
	// Cluster is what `snapshift cluster restart|check` and RUNBOOK.md's
	// staged restart are computed from (restart.Plan).
	Cluster *restart.Input `json:"cluster,omitempty"`
	// Checksums are the sha256 of every regular file under kubernetes/ and
	// etcd/, by path relative to the bundle (slash-separated).
	Checksums map[string]string `json:"checksums"`
}

// Workload is a DaemonSet, Deployment or StatefulSet the staged restart
// restarts.
type Workload struct {
	Kind      string `json:"kind"` // DaemonSet, Deployment or StatefulSet
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Selector is spec.selector.matchLabels as kubectl's -l (sorted).
	Selector string `json:"selector"`
	// Stage orders the restart: lower first.
	Stage int `json:"stage"`
	// Role says what it is ("cilium-operator", "calico-node", "kube-proxy",
	// "cluster DNS", ""...).
	Role string `json:"role,omitempty"`
}

// Webhook is an admission webhook that would block the restart.
type Webhook struct {
	// Kind is ValidatingWebhookConfiguration or MutatingWebhookConfiguration.
	Kind string `json:"kind"`
	// Configuration and Webhook name it; Index is its place in webhooks[].
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Index         int    `json:"index"`
	// Why it would block.
	Why string `json:"why"`
	// Deadlock is true when it intercepts pod creation: its own backend's
	// pods cannot be created while it fails closed and cannot answer.
	Deadlock bool `json:"deadlock,omitempty"`
	// Ignored is true when the rebuild set its failurePolicy to Ignore
	// (the original was Fail).
	Ignored bool `json:"ignored"`
}

// Opened is a bundle read from disk.
type Opened struct {
	// Dir is the bundle directory.
	Dir    string
	Report Report
	// SHA256 is report.json's sha256: the bundle's identity.
	SHA256 string
}

// Open reads dir's report.json and checks its version. A report.json
// written before the version was recorded (no apiVersion, no kind) has
// the same shape and is read as this version.
func Open(dir string) (*Opened, error) {
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bundle %s: %s: %w", dir, ReportFile, parseerr.Explain(err))
	}
	if (r.APIVersion != "" || r.Kind != "") && (r.APIVersion != APIVersion || r.Kind != Kind) {
		return nil, fmt.Errorf("bundle %s: %s is %s %s; this snapshift reads %s %s: use the snapshift that made the bundle, or rebuild it with this one", dir, ReportFile, r.APIVersion, r.Kind, APIVersion, Kind)
	}
	r.APIVersion, r.Kind = APIVersion, Kind
	if r.Operation == nil || len(r.Operation.Checksums) == 0 {
		return nil, fmt.Errorf("bundle %s: %s has no operation block (made by an older snapshift rebuild): rebuild it", dir, ReportFile)
	}
	sum := sha256.Sum256(b)
	return &Opened{Dir: dir, Report: r, SHA256: hex.EncodeToString(sum[:])}, nil
}

// Node is the node named name.
func (o *Opened) Node(name string) (Node, error) {
	var names []string
	for _, n := range o.Report.Nodes {
		if n.Name == name {
			return n, nil
		}
		names = append(names, n.Name)
	}
	return Node{}, fmt.Errorf("bundle %s has no node %q (it has %s)", o.Dir, name, strings.Join(names, ", "))
}

// Resource is kubectl's name for it (ds/<name>, deploy/<name>,
// sts/<name>).
func (w Workload) Resource() string {
	return restart.Workload{Kind: w.Kind, Name: w.Name}.Ref()
}

// EtcdIdentities are the etcd clusters of a bundle: the restored one, which
// every restored member must belong to, and the one the snapshot was saved
// from, which none may.
type EtcdIdentities struct {
	New EtcdCluster `json:"new"`
	Old EtcdCluster `json:"old"`
}

// EtcdCluster is an etcd cluster as its peers know it: its cluster ID and
// its members' IDs, in etcd's hex form (`etcdctl member list -w table`).
// The old cluster's ID is empty when the snapshot does not tell it (etcd
// keeps it in the WAL, not in the database).
type EtcdCluster struct {
	ClusterID string `json:"clusterID,omitempty"`
	// Token is the cluster token its members' IDs were derived with.
	Token   string       `json:"initialClusterToken,omitempty"`
	Members []EtcdMember `json:"members"`
}

// EtcdMember is one member of an EtcdCluster.
type EtcdMember struct {
	Name     string   `json:"name"`
	ID       string   `json:"id"`
	PeerURLs []string `json:"peerURLs"`
	// ClientURLs are the restored members' (the old ones': none).
	ClientURLs []string `json:"clientURLs,omitempty"`
}

// Differs says, in one sentence, how a live member list (the cluster ID it
// came with and its members, IDs in etcd's hex form) differs from c: a
// cluster ID other than c's (when known), or a member c does not list.
// nil: the same cluster.
func (c EtcdCluster) Differs(clusterID string, live []EtcdMember) error {
	if c.ClusterID != "" && clusterID != c.ClusterID {
		return fmt.Errorf("it answers as etcd cluster %s, not as the cluster %s report.json records: another cluster's member runs there", clusterID, c.ClusterID)
	}
	known := map[string]bool{}
	for _, m := range c.Members {
		known[m.ID] = true
	}
	for _, m := range live {
		if !known[m.ID] {
			return fmt.Errorf("it lists member %s (ID %s, peer URLs %s), which report.json does not record: another cluster's member has joined",
				m.Name, m.ID, strings.Join(m.PeerURLs, ","))
		}
	}
	return nil
}

// Member is the member named name, or false.
func (c EtcdCluster) Member(name string) (EtcdMember, bool) {
	for _, m := range c.Members {
		if m.Name == name {
			return m, true
		}
	}
	return EtcdMember{}, false
}
