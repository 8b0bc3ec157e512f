package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/snapshift/snapshift/snapshot"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// DefaultTxBytes bounds each write transaction of the floor copy, as snapshift's writer does.
const DefaultTxBytes = 32 << 20

// FloorResult describes a floor copy.
type FloorResult struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Entries int    `json:"entries"` // keys copied, all buckets
}

// FloorCopy copies every bucket of the snapshot in to a new snapshot file out with nothing but
// bbolt: one read transaction over the input, write transactions committed every txBytes, NoSync,
// FillPercent 1.0 on the `key` bucket (keys arrive in order), then the file is truncated to its
// high-water mark, its sha256 appended, fsynced once, and renamed into place. It reads the input
// as it is, without checking its trailer. It is the least any offline rewrite must do, and the
// baseline the benchmark compares snapshift with. An existing out is replaced.
func FloorCopy(ctx context.Context, in, out string, txBytes int64) (*FloorResult, error) {
	if txBytes <= 0 {
		txBytes = DefaultTxBytes
	}
	st, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	src, err := bolt.Open(in, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("floor: open %s: %w", in, err)
	}
	defer src.Close()
	f, err := fsutil.CreateTemp(out, 0o600)
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	f.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoSync: true, NoGrowSync: true, NoFreelistSync: true,
		FreelistType: bolt.FreelistMapType, InitialMmapSize: int(st.Size() + st.Size()/4)})
	if err != nil {
		return nil, err
	}
	defer func() {
		if dst != nil {
			dst.Close()
		}
	}()
	res := &FloorResult{Path: out}
	err = src.View(func(stx *bolt.Tx) error {
		dtx, err := dst.Begin(true)
		if err != nil {
			return err
		}
		defer func() {
			if dtx != nil {
				dtx.Rollback()
			}
		}()
		var pending int64
		err = stx.ForEach(func(name []byte, sb *bolt.Bucket) error {
			db, err := dtx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			db.FillPercent = 1.0 // etcd's keys arrive in order in every bucket
			c := sb.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if v == nil {
					return fmt.Errorf("floor: bucket %q has a nested bucket; etcd writes none", name)
				}
				if err := db.Put(k, v); err != nil {
					return err
				}
				res.Entries++
				if pending += int64(len(k) + len(v)); pending >= txBytes {
					if err := ctx.Err(); err != nil {
						return err
					}
					if err := dtx.Commit(); err != nil {
						dtx = nil
						return err
					}
					if dtx, err = dst.Begin(true); err != nil {
						return err
					}
					db = dtx.Bucket(name)
					db.FillPercent = 1.0
					pending = 0
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = dtx.Commit()
		dtx = nil
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("floor: copying %s: %w", in, err)
	}
	var size int64
	if err := dst.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return nil, err
	}
	if err := dst.Close(); err != nil {
		return nil, err
	}
	dst = nil
	sum, err := snapshot.AppendTrailer(tmp, size)
	if err != nil {
		return nil, err
	}
	if err := fsutil.Publish(tmp, out, true); err != nil {
		return nil, err
	}
	ok = true
	res.Size, res.SHA256 = size+sha256.Size, hex.EncodeToString(sum)
	return res, nil
}
