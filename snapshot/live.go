package snapshot

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/snapshift/snapshift/progress"
)

// Entry is one live key as stored. RevKey and Raw are the exact bucket key
// and value bytes; KV is a parsed view of Raw. All slices point into the
// snapshot's read-only mapping and stay valid until Close.
type Entry struct {
	Rev    Revision
	RevKey []byte
	Raw    []byte
	KV     KV
}

// Live calls fn for every live key, in revision order (the order of the
// `key` bucket), skipping older revisions and deleted keys. fn must not
// keep e beyond the call; the slices inside it stay valid until Close.
// phase names the walk in progress reports.
func (s *Snapshot) Live(ctx context.Context, ix *Index, phase string, p progress.Reporter, fn func(e *Entry) error) (err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	if ix.snap != s || ix.opts.Only != nil {
		return errors.New("internal error: Live needs a whole index of this snapshot")
	}
	p = progress.OrNop(p)
	p.Start(phase, "keys", int64(ix.Entries))
	c := s.tx.Bucket(KeyBucket).Cursor()
	var e Entry
	n := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		ord := n
		n++
		if n&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			p.Add(4096)
		}
		if !ix.liveAt(ord) { // the index's bit for this entry: it walked the same bucket
			continue
		}
		rev, _, err := ParseRevisionKey(k)
		if err != nil {
			return invalid(s.Path, "key bucket: %v", err)
		}
		kv, err := ParseKV(v)
		if err != nil {
			return invalid(s.Path, "revision %s: value is not a valid mvccpb.KeyValue: %v", RevisionString(rev), err)
		}
		e = Entry{Rev: rev, RevKey: k, Raw: v, KV: kv}
		if err := fn(&e); err != nil {
			return err
		}
	}
	p.Add(int64(n & 4095))
	p.Done()
	return nil
}
