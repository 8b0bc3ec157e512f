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

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// Config configures Run.
type Config struct {
	Path          string
	SkipHashCheck bool
	Progress      progress.Reporter
	// Encryption decrypts values encrypted at rest (to read the cluster's
	// networks when ConfigMaps are encrypted). Optional.
	Encryption *encryption.Config
	// EtcdPrefix is where the cluster keeps its objects (kube-apiserver's
	// --etcd-prefix). Default: detected.
	EtcdPrefix string
}

// Report is the inspect result.
type Report struct {
	Path string `json:"path"`
	// Compressed is the entry a compressed (zip) k3s/RKE2 snapshot held,
	// when the file given was one; Path is then that file.
	Compressed      string                `json:"compressedEntry,omitempty"`
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
	EtcdPrefix      string                `json:"etcdPrefix"`
	Resources       []Count               `json:"resources"`
	SecretTypes     []Count               `json:"secretTypes,omitempty"`
	Encodings       []Count               `json:"encodings"`
	Encrypted       []Count               `json:"encrypted,omitempty"`
	Networks        *state.Networks       `json:"networks"`
	// Distribution is who wrote the snapshot (kubeadm, k3s, rke2,
	// unknown) and the evidence.
	Distribution *state.Distribution `json:"distribution"`
	// CNI names the CNIs found and their IPAM state (state.DetectCNI).
	CNI []state.CNI `json:"cni"`
	// Alarms are the active etcd alarms (a NOSPACE alarm survives a plain
	// restore and leaves the member read-only).
	Alarms []snapshot.Alarm `json:"alarms,omitempty"`
}

// Count is a named count.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Run inspects one snapshot. It reads the file twice (hash, then index)
// and the live keys once, decoding only Secrets (for their type) and the
// few objects state.DetectReadable and state.DetectCNI read.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	snap, err := snapshot.Open(cfg.Path, snapshot.OpenOptions{AllowNoTrailer: cfg.SkipHashCheck, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	alarms, err := snap.Alarms()
	if err != nil {
		return nil, err
	}
	ix, err := snap.IndexWith(ctx, cfg.Progress, snapshot.IndexOptions{Named: append([]string{wellknown.PrefixNodes}, state.CNIListed...)})
	if err != nil {
		return nil, err
	}
	r := &Report{Alarms: alarms, Path: cfg.Path, Size: snap.Size, HashChecked: snap.HasTrailer, SHA256: snap.SHA256,
		PageSize: snap.PageSize, Meta: snap.Meta, CurrentRevision: ix.CurrentRevision,
		LastRevision: ix.LastRevision.Main, Entries: ix.Entries, Tombstones: ix.Tombstones, LiveKeys: ix.LiveKeys}
	if r.Buckets, err = snap.Buckets(); err != nil {
		return nil, err
	}
	if err := state.CheckPrefix(ix, cfg.EtcdPrefix); err != nil {
		return nil, err
	}
	prefix := state.ResolvePrefix(ix, cfg.EtcdPrefix)
	r.EtcdPrefix = prefix
	c := codec.New()
	resources := map[string]int{}
	secretTypes := map[string]int{}
	encodings := map[string]int{}
	encrypted := map[string]int{}
	err = snap.Live(ctx, ix, "inspect", cfg.Progress, func(e *snapshot.Entry) error {
		key, ok := state.Canonical(prefix, string(e.KV.Key))
		if !ok {
			key = string(e.KV.Key)
		}
		resources[wellknown.Resource(key)]++
		enc := codec.Detect(e.KV.Value)
		encodings[enc.String()]++
		if enc == codec.Encrypted {
			if info, ok := codec.ParseEncrypted(e.KV.Value); ok {
				encrypted[info.Provider+"/"+info.Version+" key "+info.KeyName]++
			}
			return nil
		}
		if strings.HasPrefix(key, wellknown.PrefixSecrets) {
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
	v := state.NewView(snap, ix, c, cfg.Encryption, prefix)
	r.Networks, err = state.DetectReadable(ctx, v)
	if err != nil {
		return nil, err
	}
	if r.CNI, err = state.DetectCNI(ctx, v); err != nil {
		return nil, err
	}
	if r.Distribution, err = state.DetectDistribution(v); err != nil {
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
