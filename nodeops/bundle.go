package nodeops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/rebuild"
)

// Host paths apply replaces (besides the etcd data dir, which report.json
// names).
const (
	KubernetesDir = "/etc/kubernetes"
	ManifestsDir  = "/etc/kubernetes/manifests"
	KubeletConfig = "/var/lib/kubelet/config.yaml"
	KubeletPKI    = "/var/lib/kubelet/pki"
	// BackupRoot holds one directory per applied bundle.
	BackupRoot = "/var/lib/snapshift/backup"
)

// bundle is the part of a rebuild bundle one node needs.
type bundle struct {
	dir    string
	report *rebuild.Report
	// reportSum is report.json's sha256: the bundle's identity.
	reportSum string
	node      rebuild.NodeResult
	op        *rebuild.Operation
}

// openBundle checks cfg (filling in its defaults) and loads the node's
// part of its bundle: where apply and rollback start.
func openBundle(cfg *Config) (*bundle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return loadBundle(cfg.Bundle, cfg.Node)
}

// loadBundle reads report.json and finds the node.
func loadBundle(dir, node string) (*bundle, error) {
	b, err := os.ReadFile(filepath.Join(dir, rebuild.ReportFile))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	var r rebuild.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bundle %s: %s: %w", dir, rebuild.ReportFile, err)
	}
	if r.Operation == nil || len(r.Operation.Checksums) == 0 {
		return nil, fmt.Errorf("bundle %s: %s has no operation block (made by an older snapshift rebuild): rebuild it", dir, rebuild.ReportFile)
	}
	sum := sha256.Sum256(b)
	bu := &bundle{dir: dir, report: &r, reportSum: hex.EncodeToString(sum[:]), op: r.Operation}
	var names []string
	for _, n := range r.Nodes {
		names = append(names, n.Name)
		if n.Name == node {
			bu.node = n
			return bu, nil
		}
	}
	return nil, fmt.Errorf("bundle %s has no node %q (it has %s)", dir, node, strings.Join(names, ", "))
}

// file is one file of the node's part of the bundle and where it goes.
type file struct {
	rel  string // relative to the bundle
	host string // absolute host path (without the root)
	mode os.FileMode
}

// files are the node's files outside the etcd member: kubernetes/<node>/
// mirrors /etc/kubernetes, its host/ subtree mirrors /, as rebuild lays
// them out.
func (b *bundle) files() []file {
	prefix := filepath.ToSlash(b.node.Dir) + "/"
	var out []file
	for rel := range b.op.Checksums {
		sub, ok := strings.CutPrefix(rel, prefix)
		if !ok {
			continue
		}
		host := filepath.Join(KubernetesDir, sub)
		if h, ok := strings.CutPrefix(sub, "host/"); ok {
			host = "/" + h
		}
		out = append(out, file{rel: rel, host: host, mode: modeFor(host)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out
}

// modeFor is kubeadm's mode for a file it writes: private keys, kubeconfigs,
// static-pod manifests and anything outside the cert dir (an encryption
// configuration) 0600; certificates and public keys 0644.
func modeFor(host string) os.FileMode {
	switch filepath.Ext(host) {
	case ".crt", ".pub":
		return 0o644
	}
	return 0o600
}

// memberPrefix is the etcd member's directory in the bundle.
func (b *bundle) memberPrefix() string {
	return rebuild.EtcdDir + "/" + b.node.EtcdMember + "/"
}

// verify checks every file of the node's part of the bundle against
// report.json: none missing, none changed, none added.
func (b *bundle) verify() error {
	want := map[string]string{}
	for rel, sum := range b.op.Checksums {
		if strings.HasPrefix(rel, filepath.ToSlash(b.node.Dir)+"/") || strings.HasPrefix(rel, b.memberPrefix()) {
			want[rel] = sum
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("report.json lists no file for node %s", b.node.Name)
	}
	var bad []string
	for _, top := range []string{b.node.Dir, strings.TrimSuffix(b.memberPrefix(), "/")} {
		err := filepath.WalkDir(filepath.Join(b.dir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(b.dir, p)
			rel = filepath.ToSlash(rel)
			sum, ok := want[rel]
			if !ok {
				bad = append(bad, rel+" (not in report.json)")
				return nil
			}
			delete(want, rel)
			got, err := rebuild.FileSHA256(p)
			if err != nil {
				return err
			}
			if got != sum {
				bad = append(bad, rel+" (sha256 differs)")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for rel := range want {
		bad = append(bad, rel+" (missing)")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("the bundle does not match report.json: %s", strings.Join(bad, "; "))
	}
	return nil
}
