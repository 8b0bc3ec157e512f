package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/snapshot"
)

// DefaultTxBytes is the floor copy's snapshot.WriterConfig.TxBytes, the writer's own default (only
// the interval of the crash suite's failpoint, which a plain build compiles out): the floor is the
// same writer, configured as snapshift's, doing the least work.
const DefaultTxBytes = snapshot.DefaultTxBytes

// FloorResult describes a floor copy.
type FloorResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Entries int    `json:"entries"` // keys copied, all buckets
}

// FloorCopy copies every bucket of the snapshot in to a new snapshot file out: one bbolt read
// transaction over the input, every entry put through snapshot.Writer (the `key` bucket's pages laid
// out in key order as the entries come, the other buckets in one bbolt transaction), then the
// file is truncated to its high-water mark, its sha256 appended, fsynced once, and renamed into
// place. It reads the input as it is, without checking its trailer, and decodes nothing. It is the
// least any offline rewrite must do, and the baseline the benchmark compares snapshift with. An
// existing out is replaced.
func FloorCopy(ctx context.Context, in, out string, txBytes int64) (*FloorResult, error) {
	if txBytes <= 0 {
		txBytes = DefaultTxBytes
	}
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	src, err := bolt.Open(in, 0o400, &bolt.Options{ReadOnly: true, MmapFlags: snapshot.MmapPopulate}) // as snapshot.Open maps its input
	if err != nil {
		return nil, fmt.Errorf("floor: open %s: %w", in, err)
	}
	defer src.Close()
	w, err := snapshot.Create(snapshot.WriterConfig{Path: out, Force: true, TxBytes: txBytes, SizeHint: st.Size()})
	if err != nil {
		return nil, err
	}
	defer w.Abort() // no-op after Commit
	res := &FloorResult{Path: out}
	err = src.View(func(tx *bolt.Tx) error {
		n, err := copyBuckets(ctx, tx, w)
		if err != nil {
			return err
		}
		res.Entries = n
		// Committed inside the read transaction: the last puts still point into it.
		sum, err := w.Commit()
		if err != nil {
			return err
		}
		res.Size, res.SHA256 = sum.Size, sum.SHA256
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("floor: copying %s: %w", in, err)
	}
	return res, nil
}

// copyBuckets puts every entry of every bucket of tx into w, in the order bbolt stores them, and
// returns how many it put. It checks ctx every 65536 entries.
func copyBuckets(ctx context.Context, tx *bolt.Tx, w *snapshot.Writer) (n int, err error) {
	err = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if err := w.CreateBuckets(name); err != nil {
			return err
		}
		key := bytes.Equal(name, snapshot.KeyBucket)
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return fmt.Errorf("bucket %q has a nested bucket; etcd writes none", name)
			}
			var err error
			if key {
				err = w.Put(k, v)
			} else {
				err = w.PutBucket(name, k, v)
			}
			if err != nil {
				return err
			}
			if n++; n%65536 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return n, err
}
