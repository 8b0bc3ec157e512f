package gen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/snapshift/snapshift/snapshot"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// etcd's buckets ([server] storage/schema/bucket.go).
var (
	bucketKey            = []byte("key")
	bucketMeta           = []byte("meta")
	bucketLease          = []byte("lease")
	bucketAlarm          = []byte("alarm")
	bucketCluster        = []byte("cluster")
	bucketMembers        = []byte("members")
	bucketMembersRemoved = []byte("members_removed")
	bucketAuth           = []byte("auth")
	bucketAuthUsers      = []byte("authUsers")
	bucketAuthRoles      = []byte("authRoles")

	allBuckets = [][]byte{bucketKey, bucketMeta, bucketLease, bucketAlarm, bucketCluster, bucketMembers,
		bucketMembersRemoved, bucketAuth, bucketAuthUsers, bucketAuthRoles}
)

// boltWriter writes a bbolt file under a temporary name beside its final path, committing every
// txBytes, and publishes it with the sha256 trailer etcdctl appends.
type boltWriter struct {
	path    string
	force   bool
	tmp     string
	db      *bolt.DB
	tx      *bolt.Tx
	keys    *bolt.Bucket
	txBytes int64
	pending int64
	done    bool
}

func newBoltWriter(path string, force bool, txBytes, sizeHint int64) (*boltWriter, error) {
	if err := fsutil.CheckNew(path, force); err != nil {
		return nil, err
	}
	f, err := fsutil.CreateTemp(path, 0o600)
	if err != nil {
		return nil, err
	}
	w := &boltWriter{path: path, force: force, tmp: f.Name(), txBytes: txBytes}
	f.Close()
	mmap := sizeHint + sizeHint/4
	if mmap < 64<<20 {
		mmap = 64 << 20
	}
	w.db, err = bolt.Open(w.tmp, 0o600, &bolt.Options{
		NoSync:          true, // one fsync, of the finished file
		NoGrowSync:      true,
		NoFreelistSync:  true, // as etcd writes its backend
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: int(mmap),
	})
	if err != nil {
		os.Remove(w.tmp)
		return nil, err
	}
	if err := w.begin(); err != nil {
		w.abort()
		return nil, err
	}
	for _, name := range allBuckets {
		if _, err := w.tx.CreateBucketIfNotExists(name); err != nil {
			w.abort()
			return nil, err
		}
	}
	w.keys = w.tx.Bucket(bucketKey)
	w.keys.FillPercent = 1.0
	return w, nil
}

func (w *boltWriter) begin() error {
	tx, err := w.db.Begin(true)
	if err != nil {
		return err
	}
	w.tx, w.pending = tx, 0
	if b := tx.Bucket(bucketKey); b != nil {
		b.FillPercent = 1.0 // revision keys only ever grow: full pages
		w.keys = b
	}
	return nil
}

// putKey stores one `key` bucket entry. Both slices must stay untouched until the transaction
// commits (bbolt keeps references).
func (w *boltWriter) putKey(k, v []byte) error {
	if err := w.keys.Put(k, v); err != nil {
		return fmt.Errorf("key bucket: %w", err)
	}
	w.pending += int64(len(k) + len(v))
	if w.pending >= w.txBytes {
		if err := w.tx.Commit(); err != nil {
			w.tx = nil
			return err
		}
		return w.begin()
	}
	return nil
}

// put stores one entry of another bucket.
func (w *boltWriter) put(bucket, k, v []byte) error {
	if err := w.tx.Bucket(bucket).Put(k, v); err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	return nil
}

// commit finishes the database, truncates it to its high-water mark, appends the sha256 of those
// bytes, fsyncs and renames the file into place.
func (w *boltWriter) commit() (size int64, sum string, err error) {
	defer func() {
		if err != nil {
			w.abort()
		}
	}()
	if err := w.tx.Commit(); err != nil {
		w.tx = nil
		return 0, "", err
	}
	w.tx = nil
	if err := w.db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return 0, "", err
	}
	if err := w.db.Close(); err != nil {
		return 0, "", err
	}
	w.db = nil
	digest, err := snapshot.AppendTrailer(w.tmp, size)
	if err != nil {
		return 0, "", err
	}
	if err := fsutil.Publish(w.tmp, w.path, w.force); err != nil {
		return 0, "", err
	}
	w.done = true
	return size + sha256.Size, hex.EncodeToString(digest), nil
}

// abort removes everything written. Safe to call twice and after commit.
func (w *boltWriter) abort() {
	if w.done {
		return
	}
	w.done = true
	if w.tx != nil {
		w.tx.Rollback()
		w.tx = nil
	}
	if w.db != nil {
		w.db.Close()
		w.db = nil
	}
	os.Remove(w.tmp)
}
