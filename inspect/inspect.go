// Package inspect summarises a snapshot for an operator: file and hash
// status, revisions and compaction, key counts per Kubernetes resource,
// value encodings (encrypted values by provider and key name), and the
// networks the cluster records.
package inspect

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/clusterinfo"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
)

// Config configures Run.
type Config struct {
	Path          string
	SkipHashCheck bool
	Progress      progress.Reporter
	// Encryption decrypts values encrypted at rest (to read the cluster's
	// networks when ConfigMaps are encrypted). Optional.
	Encryption *encryption.Config
}

// Report is the inspect result.
type Report struct {
	Path            string                `json:"path"`
	Size            int64                 `json:"size"`
	HashChecked     bool                  `json:"hashChecked"`
	SHA256          string                `json:"sha256,omitempty"`
	PageSize        int                   `json:"pageSize"`
	Meta            snapshot.Meta         `json:"meta"`
	Buckets         []snapshot.BucketInfo `json:"buckets"`
	CurrentRevision int64                 `json:"currentRevision"`
	LastRevision    int64                 `json:"lastKeyRevision"`
	Entries         int                   `json:"entries"`
	Tombstones      int                   `json:"tombstones"`
	LiveKeys        int                   `json:"liveKeys"`
	Resources       []Count               `json:"resources"`
	SecretTypes     []Count               `json:"secretTypes,omitempty"`
	Encodings       []Count               `json:"encodings"`
	Encrypted       []Count               `json:"encrypted,omitempty"`
	Networks        *clusterinfo.Networks `json:"networks"`
}

// Count is a named count.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Run inspects one snapshot. It reads the file twice (hash, then index)
// and the live keys once, decoding only Secrets (for their type) and the
// few objects clusterinfo reads.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	snap, err := snapshot.Open(cfg.Path, snapshot.OpenOptions{SkipHashCheck: cfg.SkipHashCheck, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	ix, err := snap.IndexWith(ctx, cfg.Progress, snapshot.IndexOptions{Named: []string{clusterinfo.PrefixNodes}})
	if err != nil {
		return nil, err
	}
	r := &Report{Path: cfg.Path, Size: snap.Size, HashChecked: snap.HasTrailer, SHA256: snap.SHA256,
		PageSize: snap.PageSize, Meta: snap.Meta, CurrentRevision: ix.CurrentRevision,
		LastRevision: ix.LastRevision.Main, Entries: ix.Entries, Tombstones: ix.Tombstones, LiveKeys: ix.LiveKeys}
	if r.Buckets, err = snap.Buckets(); err != nil {
		return nil, err
	}
	c := codec.New()
	resources := map[string]int{}
	secretTypes := map[string]int{}
	encodings := map[string]int{}
	encrypted := map[string]int{}
	err = snap.Live(ctx, ix, "inspect", cfg.Progress, func(e *snapshot.Entry) error {
		key := string(e.KV.Key)
		resources[Resource(key)]++
		enc := codec.Detect(e.KV.Value)
		encodings[enc.String()]++
		if enc == codec.Encrypted {
			if info, ok := codec.ParseEncrypted(e.KV.Value); ok {
				encrypted[info.Provider+"/"+info.Version+" key "+info.KeyName]++
			}
			return nil
		}
		if strings.HasPrefix(key, "/registry/secrets/") {
			t := "(undecodable)"
			if o, err := c.Decode(e.KV.Value); err == nil {
				if s, ok := o.Obj.(*corev1.Secret); ok {
					t = string(s.Type)
					if t == "" {
						t = string(corev1.SecretTypeOpaque)
					}
				}
			}
			secretTypes[t]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Resources, r.SecretTypes, r.Encodings, r.Encrypted = sorted(resources), sorted(secretTypes), sorted(encodings), sorted(encrypted)
	r.Networks, err = clusterinfo.Detect(ctx, transform.NewView(snap, ix, c, cfg.Encryption))
	if err != nil {
		return nil, err
	}
	return r, nil
}

func sorted(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Resource names the Kubernetes resource a key belongs to, from the
// apiserver's key layout: /registry/<resource>/..., with the built-in
// special cases (services/specs, services/endpoints, minions, controllers,
// ranges/*) and group/resource for custom and aggregated resources.
func Resource(key string) string {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return "(outside /registry)"
	}
	parts := strings.SplitN(rest, "/", 3)
	first := parts[0]
	switch first {
	case "services":
		if len(parts) > 1 && parts[1] == "endpoints" {
			return "endpoints"
		}
		return "services"
	case "minions":
		return "nodes"
	case "controllers":
		return "replicationcontrollers"
	case "ranges":
		if len(parts) > 1 {
			return "ranges/" + parts[1]
		}
	}
	if strings.Contains(first, ".") && len(parts) > 1 {
		return first + "/" + parts[1]
	}
	return first
}
