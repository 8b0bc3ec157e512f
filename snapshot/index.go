package snapshot

import (
	"bytes"
	"context"
	"hash/maphash"
	"math"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/snapshift/snapshift/progress"
)

// Index knows, for every user key of a snapshot, its newest revision. It is
// built by one pass over the `key` bucket and holds no values, and, to stay
// small on snapshots of a million keys, no key strings either: keys are
// recorded by a 64-bit hash, checked against the stored key whenever two
// revisions meet under one hash, so a collision is detected and the keys
// involved are then recorded by name. Keys under the prefixes the caller
// names (IndexOptions.Named) are recorded by name, so that they can be
// listed quickly; other prefixes are listed by a walk of the bucket.
type Index struct {
	hashed map[uint64]latest
	named  map[string]latest // Named prefixes, and keys whose hash collided
	seed   maphash.Seed
	opts   IndexOptions
	snap   *Snapshot
	// live has one bit per entry of the bucket, in bucket order: set for
	// the newest revision of each live key. Live walks the same read-only
	// bucket in the same order and reads its answers here, without hashing.
	live []uint64

	// Entries is the number of entries in the `key` bucket (all revisions,
	// tombstones included); Tombstones how many of them are tombstones.
	Entries    int
	Tombstones int
	// LiveKeys is the number of keys whose newest revision is not a
	// tombstone (of the keys recorded, with IndexOptions.Only).
	LiveKeys int
	// LastRevision is the highest revision in the `key` bucket;
	// LastKeyRevision the highest that holds a user key (not a marker).
	LastRevision    Revision
	LastKeyRevision Revision
	// CurrentRevision is what etcd would report as its current revision:
	// the highest of LastRevision.Main and the two compaction markers.
	CurrentRevision int64
	// Markers counts empty-key entries (etcdutl's --bump-revision writes one);
	// they carry a revision but no user key and are not live keys.
	Markers int
}

type latest struct {
	rev      Revision
	ord      uint32 // the entry's position in the bucket (see Index.live)
	tomb     bool
	collided bool // hashed only: two keys share this hash; both are in named
}

// IndexOptions tune what an Index records.
type IndexOptions struct {
	// Named are key prefixes whose keys are recorded by name, so that
	// LiveKeysWithPrefix lists them without walking the bucket: the
	// prefixes the caller will list (the rules' prefixes, the Nodes).
	Named []string
	// Only, when set, records only the keys it accepts (every entry is
	// still validated and counted); Live must not be used then.
	Only func(key []byte) bool

	hash func(key []byte) uint64 // tests: force collisions
}

// Index walks the `key` bucket once, validating every revision key and
// every KeyValue, and records the newest revision of each user key.
func (s *Snapshot) Index(ctx context.Context, p progress.Reporter) (*Index, error) {
	return s.IndexWith(ctx, p, IndexOptions{})
}

// IndexFiltered is Index recording only the keys keep accepts.
func (s *Snapshot) IndexFiltered(ctx context.Context, p progress.Reporter, keep func(key []byte) bool) (*Index, error) {
	return s.IndexWith(ctx, p, IndexOptions{Only: keep})
}

// IndexWith is Index with options.
func (s *Snapshot) IndexWith(ctx context.Context, p progress.Reporter, opts IndexOptions) (ix *Index, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	p = progress.OrNop(p)
	p.Start("index", "bytes", s.DBSize)
	ix = &Index{hashed: make(map[uint64]latest, 1024), named: map[string]latest{}, seed: maphash.MakeSeed(), opts: opts, snap: s}
	if ix.opts.hash == nil {
		seed := ix.seed
		ix.opts.hash = func(key []byte) uint64 { return maphash.Bytes(seed, key) }
	}
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
		if ix.Entries == math.MaxUint32 {
			return nil, invalid(s.Path, "key bucket has over %d entries", uint32(math.MaxUint32))
		}
		ord := uint32(ix.Entries)
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
		ix.LastKeyRevision = rev
		if tomb {
			ix.Tombstones++
		}
		if opts.Only != nil && !opts.Only(kv.Key) {
			continue
		}
		if err := ix.record(kv.Key, latest{rev: rev, ord: ord, tomb: tomb}); err != nil {
			return nil, err
		}
	}
	p.Add(pending)
	for _, l := range ix.hashed {
		if !l.tomb && !l.collided {
			ix.LiveKeys++
		}
	}
	for _, l := range ix.named {
		if !l.tomb {
			ix.LiveKeys++
		}
	}
	ix.CurrentRevision = max(ix.LastRevision.Main, s.Meta.ScheduledCompact, s.Meta.FinishedCompact)
	p.Done() // only a finished phase is reported done
	return ix, nil
}

// isNamed reports whether key is under one of the Named prefixes.
func (ix *Index) isNamed(key []byte) bool {
	for _, p := range ix.opts.Named {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}

// record notes a newer revision of key. Bucket order is revision order, so
// the last write wins.
func (ix *Index) record(key []byte, l latest) error {
	if ix.isNamed(key) {
		prev, had := ix.named[string(key)]
		ix.replace(prev, had, l)
		ix.named[string(key)] = l
		return nil
	}
	h := ix.opts.hash(key)
	e, ok := ix.hashed[h]
	switch {
	case !ok:
		ix.replace(latest{}, false, l)
		ix.hashed[h] = l
	case e.collided:
		prev, had := ix.named[string(key)]
		ix.replace(prev, had, l)
		ix.named[string(key)] = l
	default:
		// A second revision under this hash: the same key (an update), or
		// another key with the same hash (a collision). The stored key says.
		stored, err := ix.storedKey(e)
		if err != nil {
			return err
		}
		if bytes.Equal(stored, key) {
			ix.replace(e, true, l)
			ix.hashed[h] = l
			return nil
		}
		ix.replace(latest{}, false, l)
		ix.named[string(stored)] = e
		ix.named[string(key)] = l
		ix.hashed[h] = latest{collided: true}
	}
	return nil
}

// replace moves a key's live bit from its previous newest revision (if it
// had one, and it was not a tombstone) to its new one.
func (ix *Index) replace(prev latest, had bool, next latest) {
	if had && !prev.tomb {
		ix.live[prev.ord/64] &^= 1 << (prev.ord % 64)
	}
	if !next.tomb {
		for int(next.ord/64) >= len(ix.live) {
			ix.live = append(ix.live, 0)
		}
		ix.live[next.ord/64] |= 1 << (next.ord % 64)
	}
}

// liveAt reports whether the entry at position ord of the bucket is the
// newest revision of a live key.
func (ix *Index) liveAt(ord int) bool {
	w := ord / 64
	return w < len(ix.live) && ix.live[w]&(1<<(ord%64)) != 0
}

// storedKey reads the user key of a recorded revision back from the bucket.
func (ix *Index) storedKey(l latest) ([]byte, error) {
	rk := RevisionKey(l.rev)
	if l.tomb {
		rk = append(rk, 't')
	}
	v := ix.snap.tx.Bucket(KeyBucket).Get(rk)
	kv, err := ParseKV(v)
	if v == nil || err != nil {
		return nil, invalid(ix.snap.Path, "revision %s cannot be read back", RevisionString(l.rev))
	}
	return kv.Key, nil
}

// find returns what is recorded for key.
func (ix *Index) find(key []byte) (latest, bool) {
	if l, ok := ix.named[string(key)]; ok {
		return l, true
	}
	if ix.isNamed(key) {
		return latest{}, false
	}
	l, ok := ix.hashed[ix.opts.hash(key)]
	if !ok || l.collided {
		return latest{}, false // a collided hash: every key under it is named
	}
	// The hash is the key's, or another key's that never met this one in
	// the bucket: confirm against the stored key.
	stored, err := ix.storedKey(l)
	if err != nil || !bytes.Equal(stored, key) {
		return latest{}, false
	}
	return l, true
}

// Lookup returns the live revision of key, or ok=false when the key does
// not exist or its newest revision is a tombstone.
func (ix *Index) Lookup(key []byte) (Revision, bool) {
	l, ok := ix.find(key)
	if !ok || l.tomb {
		return Revision{}, false
	}
	return l.rev, true
}

// KeyRev is a live key and its revision.
type KeyRev struct {
	Key string
	Rev Revision
}

// LiveKeysWithPrefix returns the live keys that start with prefix, sorted
// by key: from the names recorded when prefix is under a Named prefix, else
// by one walk of the bucket.
func (ix *Index) LiveKeysWithPrefix(prefix string) []KeyRev {
	var out []KeyRev
	covered := false
	for _, p := range ix.opts.Named {
		if strings.HasPrefix(prefix, p) {
			covered = true
		}
	}
	if covered || ix.opts.Only != nil {
		for k, l := range ix.named {
			if !l.tomb && strings.HasPrefix(k, prefix) {
				out = append(out, KeyRev{Key: k, Rev: l.rev})
			}
		}
		if ix.opts.Only != nil && !covered {
			for _, kr := range ix.walk(prefix) {
				if _, dup := ix.named[kr.Key]; !dup {
					out = append(out, kr)
				}
			}
		}
	} else {
		out = ix.walk(prefix)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// walk lists the live keys under prefix by reading the whole bucket.
func (ix *Index) walk(prefix string) []KeyRev {
	var out []KeyRev
	func() {
		defer func() { recover() }() // the bucket was read whole by the index already
		c := ix.snap.tx.Bucket(KeyBucket).Cursor()
		ord := -1
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if ord++; !ix.liveAt(ord) {
				continue
			}
			kv, err := ParseKV(v)
			if err != nil || !bytes.HasPrefix(kv.Key, []byte(prefix)) {
				continue
			}
			rev, _, err := ParseRevisionKey(k)
			if err == nil {
				out = append(out, KeyRev{Key: string(kv.Key), Rev: rev})
			}
		}
	}()
	return out
}
