package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// KeyCheck is what CheckKeys found.
type KeyCheck struct {
	// Problems lists the first problems found (bad revision metadata).
	Problems []string
	// Count is the number of problems in all.
	Count int
}

// CheckKeys walks the `key` bucket and checks the revision metadata of
// every entry: ModRevision equal to the bucket revision, CreateRevision not
// after it, Version at least 1, and per key versions increasing within a
// generation. Index already checked that every key and value parses.
func (s *Snapshot) CheckKeys(ctx context.Context, max int) (kc KeyCheck, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	type last struct {
		version, create int64
		tomb            bool
	}
	seen := map[string]last{}
	add := func(format string, args ...any) {
		kc.Count++
		if len(kc.Problems) < max {
			kc.Problems = append(kc.Problems, fmt.Sprintf(format, args...))
		}
	}
	c := s.tx.Bucket(KeyBucket).Cursor()
	n := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if n++; n&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return kc, err
			}
		}
		rev, tomb, err := ParseRevisionKey(k)
		if err != nil {
			add("%v", err)
			continue
		}
		kv, err := ParseKV(v)
		if err != nil {
			add("revision %s: %v", RevisionString(rev), err)
			continue
		}
		if len(kv.Key) == 0 {
			continue // a bump marker
		}
		if tomb {
			seen[string(kv.Key)] = last{tomb: true}
			continue
		}
		if kv.ModRevision != rev.Main {
			add("%s at revision %s: mod_revision %d differs from its revision", kv.Key, RevisionString(rev), kv.ModRevision)
		}
		if kv.CreateRevision > kv.ModRevision || kv.CreateRevision <= 0 {
			add("%s at revision %s: create_revision %d is not in 1..%d", kv.Key, RevisionString(rev), kv.CreateRevision, kv.ModRevision)
		}
		if kv.Version < 1 {
			add("%s at revision %s: version %d", kv.Key, RevisionString(rev), kv.Version)
		}
		if l, ok := seen[string(kv.Key)]; ok && !l.tomb && l.create == kv.CreateRevision && kv.Version <= l.version {
			add("%s at revision %s: version %d does not follow %d", kv.Key, RevisionString(rev), kv.Version, l.version)
		}
		seen[string(kv.Key)] = last{version: kv.Version, create: kv.CreateRevision}
	}
	return kc, nil
}

// Validate reads the whole database the way etcd will at boot: every
// bucket's pages, every `key` entry a valid revision key and a valid
// KeyValue (etcd exits on a bad one when it rebuilds its index). It keeps
// nothing in memory. The first problem is the error.
func (s *Snapshot) Validate(ctx context.Context) (err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	n := 0
	var prev []byte
	return s.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		isKey := string(name) == string(KeyBucket)
		return b.ForEach(func(k, v []byte) error {
			if n++; n&4095 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if !isKey {
				return nil
			}
			rev, _, err := ParseRevisionKey(k)
			if err != nil {
				return invalid(s.Path, "key bucket: %v", err)
			}
			if prev != nil && bytes.Compare(k, prev) <= 0 {
				return invalid(s.Path, "key bucket is out of order (revision key %x after %x): the database is corrupt", k, prev)
			}
			prev = k
			if _, err := ParseKV(v); err != nil {
				return invalid(s.Path, "revision %s: value is not a valid mvccpb.KeyValue: %v", RevisionString(rev), err)
			}
			return nil
		})
	})
}
