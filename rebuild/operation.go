package rebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/snapshift/snapshift/internal/buildinfo"
	"github.com/snapshift/snapshift/restart"
	"github.com/snapshift/snapshift/rules"
)

// Provenance names the maker of a bundle (ARCHITECTURE.md, DESIGN decision
// 26): which snapshift, from which configuration file and which input.
type Provenance struct {
	Snapshift    buildinfo.Info `json:"snapshift"`
	ConfigFile   string         `json:"configFile,omitempty"`
	ConfigSHA256 string         `json:"configSHA256,omitempty"`
	Input        string         `json:"input"`
	// InputSHA256 is the whole input file's sha256, as sha256sum prints it
	// (the snapshot's own trailer hash, of the database without the
	// trailer, is transform.input.sha256).
	InputSHA256 string `json:"inputSHA256"`
}

// Operation is what `snapshift node apply|rollback` (package nodeops) needs
// from report.json to put one node's part of the bundle in place: where the
// etcd data dir goes, whether the CA changed (old kubelet client
// certificates must go), the CNI whose host state is cleaned, and the
// sha256 of every file of the bundle, checked before anything is touched.
type Operation struct {
	// EtcdDataDir is the etcd data dir on every node (etcd.dataDir).
	EtcdDataDir string `json:"etcdDataDir"`
	// CAChanged is true when the bundle holds a new cluster CA.
	CAChanged bool `json:"caChanged"`
	// CNI are the CNIs the snapshot shows (state.DetectCNI's names).
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
	Webhooks []rules.WebhookChange `json:"webhooks,omitempty"`
	// Cluster is what `snapshift cluster restart|check` and RUNBOOK.md's
	// staged restart are computed from (restart.Plan).
	Cluster *restart.Input `json:"cluster,omitempty"`
	// Checksums are the sha256 of every regular file under kubernetes/ and
	// etcd/, by path relative to the bundle.
	Checksums map[string]string `json:"checksums"`
}

// provenance fills the report's provenance block.
func (r *run) provenance() error {
	p := &Provenance{Snapshift: buildinfo.Get(), ConfigFile: r.cfg.File, Input: r.cfg.Snapshot}
	sum, err := FileSHA256(r.cfg.Snapshot)
	if err != nil {
		return fmt.Errorf("hashing the input: %w", err)
	}
	p.InputSHA256 = sum
	if r.cfg.File != "" {
		sum, err := FileSHA256(r.cfg.File)
		if err != nil {
			return fmt.Errorf("hashing the configuration file: %w", err)
		}
		p.ConfigSHA256 = sum
	}
	r.report.Provenance = p
	return nil
}

// operation fills the report's operation block from the finished bundle.
func (r *run) operation() error {
	op := &Operation{EtcdDataDir: r.cfg.Etcd.DataDir, CAChanged: r.cfg.NewPKI(), CNI: r.cnis, Restart: r.restart, Webhooks: r.webhooks,
		Cluster: r.clusterInput(), Checksums: map[string]string{}}
	if p := r.report.Plan; p != nil && p.Service != nil && p.Service.DNS.IsValid() {
		op.ClusterDNS = p.Service.DNS.String()
		if p.Service.Bridge.IsValid() {
			op.ClusterDNS = p.Service.Bridge.String()
		}
	}
	for _, top := range []string{KubeDir, EtcdDir} {
		err := filepath.WalkDir(r.path(top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(r.tmp, p)
			if err != nil {
				return err
			}
			sum, err := FileSHA256(p)
			op.Checksums[filepath.ToSlash(rel)] = sum
			return err
		})
		if err != nil {
			return err
		}
	}
	r.report.Operation = op
	return nil
}

// FileSHA256 is a file's sha256 in hex, as sha256sum prints it (the
// checksums of report.json; nodeops checks a bundle against them).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sortedKeys is a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
