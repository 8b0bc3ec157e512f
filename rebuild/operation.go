package rebuild

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/buildinfo"
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

// provenance fills the report's provenance block.
func (r *run) provenance() error {
	p := &Provenance{Snapshift: buildinfo.Get(), ConfigFile: r.cfg.File, Input: r.cfg.Snapshot}
	sum, err := bundle.FileSHA256(r.cfg.Snapshot)
	if err != nil {
		return fmt.Errorf("hashing the input: %w", err)
	}
	p.InputSHA256 = sum
	if r.cfg.File != "" {
		sum, err := bundle.FileSHA256(r.cfg.File)
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
	op := &bundle.Operation{EtcdDataDir: r.cfg.Etcd.DataDir, CAChanged: r.cfg.NewPKI(), Recovery: r.cfg.Recovery, CNI: r.cnis, Restart: r.restart,
		Cluster: r.clusterInput(), Checksums: map[string]string{}}
	for _, w := range r.webhooks {
		op.Webhooks = append(op.Webhooks, bundle.Webhook{Kind: w.Kind, Configuration: w.Configuration, Webhook: w.Webhook, Index: w.Index,
			Why: w.Why, Deadlock: w.Deadlock, Ignored: w.Ignored})
	}
	if p := r.report.Plan; p != nil && p.Service != nil && p.Service.DNS.IsValid() {
		op.ClusterDNS = p.Service.DNS.String()
		if p.Service.Bridge.IsValid() {
			op.ClusterDNS = p.Service.Bridge.String()
		}
	}
	for _, top := range []string{bundle.KubeDir, bundle.EtcdDir} {
		err := filepath.WalkDir(r.path(top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(r.tmp, p)
			if err != nil {
				return err
			}
			sum, err := bundle.FileSHA256(p)
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

// sortedKeys is a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
