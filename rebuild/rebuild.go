package rebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/leftovers"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/pki"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
)

// Options are the run's own switches (not part of the file).
type Options struct {
	// DryRun builds the whole bundle in a temporary directory, checks it,
	// and removes it: everything but writing the output.
	DryRun   bool
	Progress progress.Reporter
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
	// Log receives "[phase] ..." lines. Optional.
	Log io.Writer
	// Writer is how the members' `key` bucket is written
	// (migrate.Config.Writer). Default snapshot.WriterBulk.
	Writer snapshot.WriterKind
}

// Report is what a rebuild did; it is also written as report.json. Its
// first part, bundle.Report (apiVersion, kind, members, nodes, operation),
// is the versioned contract the node-side commands read; the rest is the
// engine's account of the run, for people and tools that want it.
type Report struct {
	bundle.Report
	Output    string                    `json:"output"`
	DryRun    bool                      `json:"dryRun"`
	Transform *migrate.Report           `json:"transform"`
	Plan      *rules.Plan               `json:"plan,omitempty"`
	Leftovers *leftovers.LeftoverReport `json:"leftovers,omitempty"`
	// Installer lists the bundle's installer/ files: the change to the
	// files that drive the installer's next run.
	Installer []InstallerFile `json:"installer,omitempty"`
	// ClusterConfiguration says what was carried over from the snapshot's
	// kubeadm-config (or that it has none).
	ClusterConfiguration []string `json:"clusterConfiguration,omitempty"`
	// MissingFiles are files the manifests name that the bundle does not
	// hold: put them on every control-plane node before starting it.
	MissingFiles []MissingFile `json:"missingFiles,omitempty"`
	// OldAddresses are the resources whose values still hold a moved
	// control-plane node's old address after the rules.
	OldAddresses []leftovers.AddressLeftover `json:"oldControlPlaneAddresses,omitempty"`
	PKI          []pki.Result                `json:"pki"`
	Manifests    []string                    `json:"manifests,omitempty"`
	// JoinCommand is how worker nodes rejoin when the CA changed (its token
	// is in RUNBOOK.md, not here).
	JoinCommand string `json:"joinCommand,omitempty"`
	CAHash      string `json:"caCertHash,omitempty"`
	// Provenance: operation.go.
	Provenance *Provenance `json:"provenance,omitempty"`
}

type run struct {
	// etcdToken is the restored etcd cluster's token (chooseEtcdToken).
	etcdToken string
	cfg       *Config
	opts      Options
	tmp       string
	report    *Report
	enc       *encryption.Config
	token     *rules.BootstrapToken
	caPEM     []byte
	// cc is the snapshot's kubeadm ClusterConfiguration; nil when absent.
	cc *ClusterConfiguration
	// ks are the cluster-wide values it sets (kubeadmconfig.go).
	ks kubeadmSettings
	// etcdPrefix is where the snapshot keeps the objects (its kube-apiserver's --etcd-prefix).
	etcdPrefix string
	// tokenExpires is when the bootstrap token the rules write expires.
	tokenExpires time.Time
	// moved maps the recorded address of each node that moves to its new one.
	moved map[netip.Addr]netip.Addr
	// restart and cnis are what the snapshot runs (operation.go).
	restart  []bundle.Workload
	cnis     []string
	detected *detected
	// cgroupV1: the kubelet-config sets failCgroupV1: false (clusterconfig.go).
	cgroupV1 bool
	webhooks []rules.WebhookChange
	// workers are the snapshot's Nodes that are not control-plane nodes
	// of this rebuild, sorted: the runbook names them.
	workers []string
}

// missingDirs are dir and those of its parents that do not exist yet,
// deepest first: what os.MkdirAll(dir) would create.
func missingDirs(dir string) []string {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return missing
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			return missing
		}
	}
}

func (r *run) logf(phase, format string, args ...any) {
	if r.opts.Log != nil {
		fmt.Fprintf(r.opts.Log, "[%s] %s\n", phase, fmt.Sprintf(format, args...))
	}
}

// Run performs the rebuild. On any error nothing is left at the output.
func Run(ctx context.Context, cfg *Config, opts Options) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// A killed run's temporary bundle (every key of the cluster) goes
	// first; a running one's is left alone.
	left, err := fsutil.CleanFor(filepath.Clean(cfg.Output))
	if err != nil {
		return nil, err
	}
	if line := fsutil.Summary(left); line != "" && opts.Log != nil {
		fmt.Fprintf(opts.Log, "[clean] %s\n", line)
	}
	empty, err := fsutil.IsEmptyOrMissingDir(cfg.Output)
	if err != nil {
		return nil, err
	}
	if !empty {
		return nil, fmt.Errorf("output %s is not empty (%w): rebuild only into a new or empty directory", cfg.Output, fsutil.ErrExists)
	}
	parent := filepath.Dir(filepath.Clean(cfg.Output))
	created := missingDirs(parent)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	if opts.DryRun {
		// A dry run leaves no trace: the parents it made for its
		// temporary bundle go too, deepest first, after the bundle.
		defer func() {
			for _, d := range created {
				_ = os.Remove(d) // only an empty directory goes: never a file another process put there
			}
		}()
	}
	tmp, err := fsutil.MkdirTemp(filepath.Join(parent, filepath.Base(filepath.Clean(cfg.Output))), "")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // after a successful rename there is nothing left here
	r := &run{cfg: cfg, opts: opts, tmp: tmp, report: &Report{Report: bundle.NewReport(), Output: cfg.Output, DryRun: opts.DryRun}}
	if cfg.EncryptionConfig != "" {
		if r.enc, err = encryption.Load(cfg.EncryptionConfig); err != nil {
			return nil, err
		}
	}
	phases := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"config", r.readConfig},
		{"pki", r.newPKI},
		{"transform", r.transform}, // and restore: one pass
		{"certs", r.renewCerts},
		{"manifests", r.manifests},
		{"runbook", r.writeRunbook},
	}
	for _, p := range phases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := p.fn(ctx); err != nil {
			return nil, fmt.Errorf("[%s] %w", p.name, err)
		}
	}
	if opts.DryRun {
		r.logf("rebuild", "dry run: the bundle was built and checked in a temporary directory and removed; nothing was written")
		return r.report, nil
	}
	if err := publish(tmp, cfg.Output); err != nil {
		return nil, err
	}
	r.logf("rebuild", "bundle written to %s", cfg.Output)
	return r.report, nil
}

// publish renames the finished bundle into place (output is missing or
// empty, as checked): every file and directory in it fsynced first (its
// files are written with plain writes), the parent after.
func publish(tmp, output string) error {
	return fsutil.PublishDir(tmp, filepath.Clean(output))
}

func (r *run) path(parts ...string) string {
	return filepath.Join(append([]string{r.tmp}, parts...)...)
}

func (r *run) apiEndpoint() string {
	if e := r.cfg.Networking.ControlPlaneEndpoint; e != "" {
		if !strings.Contains(e, ":") {
			e += ":6443"
		}
		return e
	}
	return net.JoinHostPort(r.firstNode().AdvertiseAddress, "6443")
}

func (r *run) transform(ctx context.Context) error {
	o := r.cfg.RuleOptions()
	if r.cfg.NewPKI() {
		// The token's expiry is the one thing the rules write that follows
		// the clock, not the input: it is given to them (they read none).
		r.token.Expires = r.opts.Now().UTC().Truncate(time.Second).Add(rules.DefaultTokenTTL)
		o.ClusterCA, o.BootstrapToken = r.caPEM, r.token
		r.tokenExpires = r.token.Expires
		o.ClusterInfoServer = "https://" + r.apiEndpoint()
	}
	addrScan := leftovers.NewAddressScan(r.moved)
	members, err := r.members()
	if err != nil {
		return err
	}
	// One pass: the rules are applied while every member is restored (no
	// migrated snapshot file in between).
	// report.json lists every leftover key (-o json prints it; the text
	// and the runbook show a few): the bundle is the same whatever -o.
	res, err := migrate.Run(ctx, migrate.Config{Rules: o, LeftoverExamples: -1, Engine: migrate.Engine{
		Input: r.cfg.Snapshot, Restore: members, SkipHashCheck: r.cfg.SkipHashCheck,
		Observers: []migrate.Observer{addrScan}, Encryption: r.enc, Progress: r.opts.Progress, Writer: r.opts.Writer,
	}})
	if err != nil {
		return err
	}
	rep := res.Report
	r.report.Transform, r.report.Plan, r.report.Leftovers = rep, res.Plan, res.Leftovers
	if res.Plan != nil {
		r.webhooks = res.Plan.Webhooks
	}
	if len(r.moved) > 0 {
		r.report.OldAddresses = addrScan.Report()
	}
	r.logf("transform", "%d replaced, %d created, %d deleted; verified", rep.Replaced, rep.Created, rep.Deleted)
	for _, m := range r.cfg.Etcd.Members {
		r.report.Members = append(r.report.Members, bundle.Member{Name: m.Name, DataDir: bundle.MemberDir(m.Name)})
		r.logf("restore", "member %s into %s", m.Name, bundle.MemberDir(m.Name))
	}
	return nil
}

// members are the restore configurations of every etcd member, their data
// dirs in the bundle's etcd/.
func (r *run) members() ([]snapshot.RestoreConfig, error) {
	if err := os.MkdirAll(r.path(bundle.EtcdDir), 0o700); err != nil {
		return nil, err
	}
	var out []snapshot.RestoreConfig
	for _, m := range r.cfg.Etcd.Members {
		out = append(out, snapshot.RestoreConfig{
			Name: m.NodeName, DataDir: r.path(bundle.EtcdDir, m.Name), PeerURLs: []string{m.PeerURL},
			InitialCluster: r.cfg.InitialCluster(), InitialClusterToken: r.etcdToken,
			RevisionBump: r.cfg.Etcd.RevisionBump, MarkCompacted: true,
		})
	}
	return out, nil
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
