package nodeops

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/snapshift/snapshift/bundle"
)

// Host paths apply replaces (besides the etcd data dir, which report.json
// names).
const (
	KubernetesDir = bundle.KubernetesDir
	ManifestsDir  = KubernetesDir + "/manifests"
	KubeletConfig = "/var/lib/kubelet/config.yaml"
	KubeletPKI    = "/var/lib/kubelet/pki"
	// BackupRoot holds one directory per applied bundle.
	BackupRoot = bundle.BackupRoot
)

// nodeBundle is the part of a rebuild bundle one node needs.
type nodeBundle struct {
	dir    string
	report *bundle.Report
	// reportSum is report.json's sha256: the bundle's identity.
	reportSum string
	node      bundle.Node
	op        *bundle.Operation
}

// openBundle checks cfg (filling in its defaults) and loads the node's
// part of its bundle: where apply and rollback start.
func openBundle(cfg *Config) (*nodeBundle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := bundle.Open(cfg.Bundle)
	if err != nil {
		return nil, err
	}
	n, err := o.Node(cfg.Node)
	if err != nil {
		return nil, err
	}
	return &nodeBundle{dir: o.Dir, report: &o.Report, reportSum: o.SHA256, node: n, op: o.Report.Operation}, nil
}

// files are the node's files outside the etcd member.
func (b *nodeBundle) files() []bundle.File { return b.op.Files(b.node) }

// memberDir is the node's etcd member in the bundle (a path on this host).
func (b *nodeBundle) memberDir() string {
	return filepath.Join(b.dir, filepath.FromSlash(bundle.MemberDir(b.node.EtcdMember)))
}

// verify checks every file of the node's part of the bundle against
// report.json: none missing, none changed, none added.
func (b *nodeBundle) verify() error { return b.op.Verify(b.dir, b.node) }

// newCluster is the restored etcd cluster report.json records, or nil.
func (b *nodeBundle) newCluster() *bundle.EtcdCluster {
	if b.report.Etcd == nil {
		return nil
	}
	return &b.report.Etcd.New
}

// oldCluster is the old etcd cluster report.json records (its members as
// the snapshot lists them), or nil.
func (b *nodeBundle) oldCluster() *bundle.EtcdCluster {
	if b.report.Etcd == nil || len(b.report.Etcd.Old.Members) == 0 {
		return nil
	}
	return &b.report.Etcd.Old
}

// checkRunbook: a runbook.json beside report.json is the one rebuild
// wrote with it, unedited (bundle.CheckRunbook); found reports whether
// there is one (a copy of the bundle made by hand may hold only
// report.json and the node's files).
func (b *nodeBundle) checkRunbook() (found bool, err error) {
	rb, err := bundle.ReadRunbook(filepath.Join(b.dir, bundle.RunbookJSONFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, bundle.CheckRunbook(rb, b.reportSum, b.report.Nodes)
}
