package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// BboltFloorTxBytes is the bbolt floor's transaction bound: a transaction is committed once the
// keys and values put in it reach this many bytes.
const BboltFloorTxBytes = 16 << 20

// bboltFloorFillPercent is the fill of the floor's pages: etcd's backend writes its sequential
// puts (UnsafeSeqPut) at 0.9, not bbolt's default 0.5.
const bboltFloorFillPercent = 0.9

// BboltFloorCopy copies every bucket of the snapshot in to a new snapshot file out with bbolt's
// own writer and nothing of snapshift's: one bbolt read transaction over the input (mapped with
// MAP_POPULATE, as snapshift maps it), every entry put with bolt.Bucket.Put in transactions of at
// most txBytes of keys and values (committed without fsync, etcd's freelist settings), then one
// fsync of the database, its sha256 appended as the trailer etcd's snapshots carry, one more
// fsync, and a rename into place. It decodes nothing and does not check the input's trailer. It
// is the independent floor: what an offline rewrite costs through the writer etcd itself uses.
// An existing out is replaced.
func BboltFloorCopy(ctx context.Context, in, out string, txBytes int64) (*FloorResult, error) {
	if txBytes <= 0 {
		txBytes = BboltFloorTxBytes
	}
	src, err := bolt.Open(in, 0o400, &bolt.Options{ReadOnly: true, MmapFlags: syscall.MAP_POPULATE})
	if err != nil {
		return nil, fmt.Errorf("bbolt floor: open %s: %w", in, err)
	}
	defer src.Close()
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp")
	os.Remove(tmp)
	defer os.Remove(tmp) // no-op after the rename
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{NoSync: true, NoGrowSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("bbolt floor: create %s: %w", tmp, err)
	}
	res := &FloorResult{Path: out}
	err = src.View(func(rtx *bolt.Tx) error {
		n, err := bboltCopy(ctx, rtx, dst, txBytes)
		res.Entries = n
		return err
	})
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("bbolt floor: copying %s: %w", in, err)
	}
	if res.Size, res.SHA256, err = appendTrailer(tmp); err != nil {
		return nil, fmt.Errorf("bbolt floor: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("bbolt floor: %w", err)
	}
	return res, nil
}

// bboltCopy puts every entry of every bucket of rtx into dst, in transactions of at most txBytes
// of keys and values, and returns how many it put. It checks ctx at every commit.
func bboltCopy(ctx context.Context, rtx *bolt.Tx, dst *bolt.DB, txBytes int64) (n int, err error) {
	wtx, err := dst.Begin(true)
	if err != nil {
		return 0, err
	}
	defer func() {
		if wtx != nil {
			wtx.Rollback()
		}
	}()
	var size int64
	err = rtx.ForEach(func(name []byte, b *bolt.Bucket) error {
		wb, err := wtx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		wb.FillPercent = bboltFloorFillPercent
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				return fmt.Errorf("bucket %q has a nested bucket; etcd writes none", name)
			}
			if size >= txBytes {
				if err := wtx.Commit(); err != nil {
					return err
				}
				if wtx, err = dst.Begin(true); err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				size = 0
				wb = wtx.Bucket(name)
				wb.FillPercent = bboltFloorFillPercent
			}
			if err := wb.Put(k, v); err != nil {
				return err
			}
			size += int64(len(k) + len(v))
			n++
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	err = wtx.Commit()
	wtx = nil
	return n, err
}

// appendTrailer appends the sha256 of the file at path to it, as `etcdctl snapshot save` ends a
// snapshot, fsyncs it, and returns its new size and the sum.
func appendTrailer(path string) (int64, string, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return 0, "", err
	}
	sum := h.Sum(nil)
	if _, err := f.Write(sum); err != nil {
		return 0, "", err
	}
	if err := f.Sync(); err != nil {
		return 0, "", err
	}
	return n + int64(len(sum)), fmt.Sprintf("%x", sum), f.Close()
}
