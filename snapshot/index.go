package snapshot

import (
	"bytes"
	"context"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/progress"
)

// Index knows, for every user key of a snapshot, its newest revision. It is
// built by one pass over the `key` bucket and holds keys, never values.
type Index struct {
	latest map[string]latest

	// Entries is the number of entries in the `key` bucket (all revisions,
	// tombstones included); Tombstones how many of them are tombstones.
	Entries    int
	Tombstones int
	// LiveKeys is the number of keys whose newest revision is not a tombstone.
	LiveKeys int
	// LastRevision is the highest revision in the `key` bucket.
	LastRevision Revision
	// CurrentRevision is what etcd would report as its current revision:
	// the highest of LastRevision.Main and the two compaction markers.
	CurrentRevision int64
	// Markers counts empty-key entries (etcdutl's --bump-revision writes one);
	// they carry a revision but no user key and are not live keys.
	Markers int
}

type latest struct {
	rev  Revision
	tomb bool
}

// Index walks the `key` bucket once, validating every revision key and
// every KeyValue, and records the newest revision of each user key.
func (s *Snapshot) Index(ctx context.Context, p progress.Reporter) (*Index, error) {
	return s.IndexFiltered(ctx, p, nil)
}

// IndexFiltered is Index that records only the keys keep accepts (all when
// keep is nil); every entry is still validated and counted. Lookup and
// LiveKeysWithPrefix then know only those keys, and Live must not be used.
// It serves checks that read a few prefixes of a large file.
func (s *Snapshot) IndexFiltered(ctx context.Context, p progress.Reporter, keep func(key []byte) bool) (ix *Index, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	p = progress.OrNop(p)
	p.Start("index", "bytes", s.DBSize)
	ix = &Index{latest: make(map[string]latest, 1024)}
	c := s.tx.Bucket(KeyBucket).Cursor()
	var pending int64
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rev, tomb, err := ParseRevisionKey(k)
		if err != nil {
			return nil, invalid(s.Path, "key bucket: %v", err)
		}
		if prev != nil && bytes.Compare(k, prev) <= 0 {
			return nil, invalid(s.Path, "key bucket is out of order (revision key %x after %x): the database is corrupt", k, prev)
		}
		prev = k
		kv, err := ParseKV(v)
		if err != nil {
			return nil, invalid(s.Path, "revision %s: value is not a valid mvccpb.KeyValue: %v", RevisionString(rev), err)
		}
		ix.Entries++
		ix.LastRevision = rev
		pending += int64(len(k) + len(v) + 16)
		if ix.Entries&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p.Add(pending)
			pending = 0
		}
		if len(kv.Key) == 0 {
			ix.Markers++
			continue
		}
		if tomb {
			ix.Tombstones++
		}
		if keep != nil && !keep(kv.Key) {
			continue
		}
		// Bucket order is revision order, so the last write wins. The string
		// conversion in the lookup does not allocate; only a new key does.
		if l, ok := ix.latest[string(kv.Key)]; ok {
			l.rev, l.tomb = rev, tomb
			ix.latest[string(kv.Key)] = l
		} else {
			ix.latest[string(kv.Key)] = latest{rev: rev, tomb: tomb}
		}
	}
	p.Add(pending)
	for _, l := range ix.latest {
		if !l.tomb {
			ix.LiveKeys++
		}
	}
	ix.CurrentRevision = max(ix.LastRevision.Main, s.Meta.ScheduledCompact, s.Meta.FinishedCompact)
	p.Done() // only a finished phase is reported done
	return ix, nil
}

// Lookup returns the live revision of key, or ok=false when the key does
// not exist or its newest revision is a tombstone.
func (ix *Index) Lookup(key []byte) (Revision, bool) {
	l, ok := ix.latest[string(key)]
	if !ok || l.tomb {
		return Revision{}, false
	}
	return l.rev, true
}

// isLive reports whether rev is the live revision of key.
func (ix *Index) isLive(key []byte, rev Revision) bool {
	l, ok := ix.latest[string(key)]
	return ok && !l.tomb && l.rev == rev
}

// KeyRev is a live key and its revision.
type KeyRev struct {
	Key string
	Rev Revision
}

// LiveKeysWithPrefix returns the live keys that start with prefix, sorted
// by key.
func (ix *Index) LiveKeysWithPrefix(prefix string) []KeyRev {
	var out []KeyRev
	for k, l := range ix.latest {
		if !l.tomb && strings.HasPrefix(k, prefix) {
			out = append(out, KeyRev{Key: k, Rev: l.rev})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
