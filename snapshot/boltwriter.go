package snapshot

import (
	"errors"

	bolt "go.etcd.io/bbolt"
)

// A boltWriter writes the `key` bucket through bbolt's own Bucket.Put, the
// way bbolt's Compact copies a database (go.etcd.io/bbolt compact.go): the
// puts go into one write transaction until the next would take it past
// txBytes of keys and values, then it commits and a new one begins, since
// bbolt keeps every dirty page of a transaction in memory. FillPercent 1
// fills the pages, the keys coming in order. It is WriterBbolt: the
// reference the bulk loader is held to (TestWriters, TestWritersAgree),
// and the fallback if a future bbolt changes its on-disk format.
type boltWriter struct {
	db      *bolt.DB
	tx      *bolt.Tx
	b       *bolt.Bucket
	size    int64 // bytes of keys and values put in tx
	txBytes int64
}

// newBoltWriter creates the database at path (an empty file) with pages
// of pageSize, and begins the first transaction.
func newBoltWriter(path string, pageSize int, txBytes int64, mmapSize int) (*boltWriter, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		NoSync:          true, // one fsync at the end, of the finished file
		NoGrowSync:      true,
		NoFreelistSync:  true, // as etcd writes its backend
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: mmapSize,
		PageSize:        pageSize,
	})
	if err != nil {
		return nil, err
	}
	w := &boltWriter{db: db, txBytes: txBytes}
	if err := w.begin(); err != nil {
		db.Close()
		return nil, err
	}
	return w, nil
}

func (w *boltWriter) begin() error {
	tx, err := w.db.Begin(true)
	if err != nil {
		return err
	}
	b, err := tx.CreateBucketIfNotExists(KeyBucket)
	if err != nil {
		tx.Rollback()
		return err
	}
	b.FillPercent = 1.0 // the keys come in order: full pages are best
	w.tx, w.b, w.size = tx, b, 0
	return nil
}

// add puts one entry, committing first if it would take the transaction
// past txBytes (as Compact does).
func (w *boltWriter) add(k, v []byte) error {
	sz := int64(len(k) + len(v))
	if w.size > 0 && w.size+sz > w.txBytes {
		err := w.tx.Commit()
		w.tx = nil
		if err != nil {
			return err
		}
		failpointTxCommitted()
		if err := w.begin(); err != nil {
			return err
		}
	}
	w.size += sz
	return w.b.Put(k, v)
}

// finish commits the last transaction and closes the database, whether
// or not the commit succeeded.
func (w *boltWriter) finish() error {
	var err error
	if w.tx != nil {
		err = w.tx.Commit()
		w.tx = nil
	}
	return errors.Join(err, w.db.Close())
}

// abort rolls the open transaction back and closes the database.
func (w *boltWriter) abort() {
	if w.tx != nil {
		w.tx.Rollback()
		w.tx = nil
	}
	w.db.Close()
}
