// Package verify re-opens a snapshot and checks what snapshift promises:
// the file (trailer, bbolt structure), the etcd layer (every revision and
// KeyValue valid, revision metadata consistent, compaction markers sane),
// the Kubernetes layer (every stored value decodes), and, when the new
// networks are given, the invariants of the remap rules: Services, the
// allocator state, Nodes and the ConfigMaps all agree with the new ranges.
package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
)

// ErrFailed is wrapped when at least one check failed.
var ErrFailed = errors.New("verification failed")

// Config configures Run.
type Config struct {
	Path          string
	SkipHashCheck bool
	// ServiceCIDR and PodNetworkCIDR, when set, turn on the network
	// invariants (comma-separated for dual stack).
	ServiceCIDR    string
	PodNetworkCIDR string
	// KeepServiceIPs are Services allowed outside the new service range.
	KeepServiceIPs []string
	// ServiceCIDRMap lists the added ServiceCIDRs' moves ("OLD=NEW"): their
	// Services may be in NEW, and no ServiceCIDR may still hold OLD.
	ServiceCIDRMap []string
	// DNSService is the cluster DNS Service kubelet's clusterDNS must point
	// at (or at its bridge). Default kube-system/kube-dns.
	DNSService string
	// Structure runs bbolt's page-by-page check and decodes every stored
	// Kubernetes value (the verify command does; transform's own check of
	// its output skips these two, which re-read everything it just wrote).
	Structure bool
	Progress  progress.Reporter
	// Encryption decrypts values encrypted at rest so they are checked too.
	Encryption *encryption.Config
	// EtcdPrefix is where the cluster keeps its objects (kube-apiserver's
	// --etcd-prefix). Default: detected, except for a file JustWritten
	// (whose writer says where).
	EtcdPrefix string
	// Rules are user rules files (docs/RULES.md) whose invariants are
	// checked: no old address at a mapAddresses pointer, no deleted object.
	Rules []string
	// JustWritten is for a file this process has just written (transform's
	// check of its own output, before its trailer is appended: give
	// SkipHashCheck too): no trailer check, no per-key metadata walk.
	JustWritten bool
}

// Check is one named check.
type Check struct {
	Name     string   `json:"name"`
	OK       bool     `json:"ok"`
	Detail   string   `json:"detail,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// Report lists every check.
type Report struct {
	Path   string  `json:"path"`
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

const maxProblems = 20

type checker struct {
	r *Report
}

func (c *checker) add(name string, problems []string, detail string, args ...any) {
	ch := Check{Name: name, OK: len(problems) == 0, Detail: fmt.Sprintf(detail, args...)}
	if len(problems) > maxProblems {
		more := len(problems) - maxProblems
		problems = append(problems[:maxProblems], fmt.Sprintf("... and %d more", more))
	}
	ch.Problems = problems
	c.r.Checks = append(c.r.Checks, ch)
	if !ch.OK {
		c.r.OK = false
	}
}

// defaultDNSService is the DNS Service checked unless Config names another
// (rules.DefaultDNSService: verify does not import the rules).
const defaultDNSService = "kube-system/kube-dns"

// Run checks one snapshot. A snapshot that cannot be opened is an error;
// failed checks are in the report (and Err says whether any failed).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.DNSService == "" {
		cfg.DNSService = defaultDNSService
	}
	hash := snapshot.HashVerify
	if cfg.JustWritten {
		hash = snapshot.HashTrailerOnly
	}
	snap, err := snapshot.Open(cfg.Path, snapshot.OpenOptions{AllowNoTrailer: cfg.SkipHashCheck, Hash: hash, Progress: cfg.Progress, InOrder: cfg.JustWritten})
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	c := &checker{r: &Report{Path: cfg.Path, OK: true}}
	addTrailerCheck(c, snap, cfg.JustWritten)
	if cfg.Structure {
		probs, err := snap.CheckStructure(maxProblems)
		if err != nil {
			return nil, err
		}
		c.add("bbolt structure", probs, "every bucket, key and value readable")
	}
	// A check of a file just written reads only the keys the network checks
	// read: a second full index of a large output would double the memory.
	known := state.NormalizePrefix(cfg.EtcdPrefix)
	files, err := ruleset.Load(cfg.Rules)
	if err != nil {
		return nil, option.Errorf("Rules", "{}: %w", err)
	}
	userPrefixes := storedPrefixes(known, rulePrefixes(files))
	opts := snapshot.IndexOptions{Named: append(storedPrefixes(known, networkListed), userPrefixes...)}
	if cfg.JustWritten && !cfg.Structure {
		inNetwork := storedPrefixes(known, networkKeyPrefixes)
		opts.Only = func(k []byte) bool { return hasAnyPrefix(k, inNetwork) || hasAnyPrefix(k, userPrefixes) }
	}
	ix, err := snap.IndexWith(ctx, cfg.Progress, opts)
	if err != nil {
		// An interrupted read is not a failed check: the caller was
		// stopped, and says so (not "verification failed").
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Path, cerr)
		}
		// Index stops at the first malformed revision or KeyValue.
		c.add("key bucket", []string{err.Error()}, "")
		return c.r, nil
	}
	c.add("key bucket", nil, "%d revisions, every key a valid revision and every value a valid mvccpb.KeyValue", ix.Entries)
	if !cfg.JustWritten {
		kc, err := snap.CheckKeys(ctx, maxProblems)
		if err != nil {
			return nil, err
		}
		c.add("revision metadata", kc.Problems, "mod_revision equals its revision, create_revision and version consistent per key")
	}
	addMarkerCheck(c, snap.Meta, ix, cfg.JustWritten)
	if err := checkContent(ctx, c, snap, ix, cfg, known, files); err != nil {
		return nil, err
	}
	if cerr := ctx.Err(); cerr != nil && !c.r.OK {
		return nil, fmt.Errorf("%s: %w", cfg.Path, cerr)
	}
	return c.r, nil
}

// addTrailerCheck reports the sha256 trailer (checked by Open).
func addTrailerCheck(c *checker, snap *snapshot.Snapshot, justWritten bool) {
	switch {
	case snap.HasTrailer && justWritten:
		c.add("sha256 trailer", nil, "written by this run (%s)", snap.SHA256)
	case snap.HasTrailer:
		c.add("sha256 trailer", nil, "matches (%s)", snap.SHA256)
	default:
		c.add("sha256 trailer", nil, "absent (a raw database, accepted without one); not checked")
	}
}

// addMarkerCheck checks the compaction markers against the keys.
func addMarkerCheck(c *checker, m snapshot.Meta, ix *snapshot.Index, justWritten bool) {
	var mark []string
	if m.FinishedCompact > m.ScheduledCompact {
		mark = append(mark, fmt.Sprintf("finishedCompactRev %d is after scheduledCompactRev %d", m.FinishedCompact, m.ScheduledCompact))
	}
	// Markers above the last key revision are normal: on a busy cluster the
	// newest revisions are deletions, which the output (and compaction)
	// drops, and etcd's restore takes the highest of the last key revision
	// and the markers as its current revision. What snapshift writes must
	// close the history: markers above every key it holds (a revision
	// bump's marker, which a fused restore writes, holds none).
	if justWritten && m.ScheduledCompact <= ix.LastKeyRevision.Main {
		mark = append(mark, fmt.Sprintf("scheduledCompactRev %d does not close the history: the last key revision is %d", m.ScheduledCompact, ix.LastKeyRevision.Main))
	}
	c.add("compaction markers", mark, "scheduled %d, finished %d, last revision %d", m.ScheduledCompact, m.FinishedCompact, ix.LastRevision.Main)
}

// checkContent decodes every value (Structure) and runs the network and
// user-rules checks, reading the objects under the cluster's prefix.
func checkContent(ctx context.Context, c *checker, snap *snapshot.Snapshot, ix *snapshot.Index, cfg Config, known string, files []*ruleset.File) error {
	cd := codec.New()
	prefix := known
	if !cfg.JustWritten {
		prefix = state.ResolvePrefix(ix, cfg.EtcdPrefix)
	}
	if cfg.Structure {
		if err := checkDecode(ctx, c, snap, ix, cd, cfg.Encryption, cfg.Progress, prefix); err != nil {
			return err
		}
	}
	v := state.NewView(snap, ix, cd, cfg.Encryption, prefix)
	if cfg.ServiceCIDR != "" || cfg.PodNetworkCIDR != "" {
		if err := checkNetworks(ctx, c, v, cfg); err != nil {
			return err
		}
	}
	if len(files) > 0 {
		return checkUserRules(ctx, c, v, files)
	}
	return nil
}

// Err returns an error wrapping ErrFailed that names the failed checks.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	var names []string
	for _, c := range r.Checks {
		if !c.OK {
			first := ""
			if len(c.Problems) > 0 {
				first = ": " + c.Problems[0]
			}
			names = append(names, c.Name+first)
		}
	}
	return fmt.Errorf("%w: %s", ErrFailed, strings.Join(names, "; "))
}

func checkDecode(ctx context.Context, c *checker, snap *snapshot.Snapshot, ix *snapshot.Index, cd *codec.Codec, enc *encryption.Config, p progress.Reporter, prefix string) error {
	var probs []string
	counts := map[string]int{}
	err := snap.Live(ctx, ix, "verify", p, func(e *snapshot.Entry) error {
		key := string(e.KV.Key)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		value := e.KV.Value
		kind := codec.Detect(value)
		if kind == codec.Encrypted && enc != nil {
			plain, info, err := enc.Decrypt(key, value)
			switch {
			case errors.Is(err, encryption.ErrKMS):
			case err != nil:
				probs = append(probs, fmt.Sprintf("%s: %v", key, err))
				return nil
			default:
				counts["decrypted "+info.Provider]++
				value, kind = plain, codec.Detect(plain)
			}
		}
		counts[kind.String()]++
		switch kind {
		case codec.Encrypted:
			return nil
		case codec.Unknown:
			probs = append(probs, fmt.Sprintf("%s: not a Kubernetes value (%d bytes)", key, len(value)))
			return nil
		}
		if _, err := cd.Decode(value); err != nil {
			if errors.Is(err, codec.ErrUnknownType) {
				counts["unknown-to-this-build"]++
				return nil
			}
			probs = append(probs, fmt.Sprintf("%s: %v", key, err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.add("Kubernetes values decode", probs, "protobuf %d, json %d, cbor %d, encrypted (not checked) %d, types unknown to this build %d",
		counts["protobuf"], counts["json"], counts["cbor"], counts["encrypted"], counts["unknown-to-this-build"])
	return nil
}
