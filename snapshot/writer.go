package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// DefaultTxBytes is how often, in bytes of pages written, the bulk writer
// passes the crash suite's snapshotTxCommitted failpoint, and how large,
// in bytes of keys and values, the bbolt writer lets a write transaction
// grow before it commits it (bbolt keeps every dirty page of a
// transaction in memory).
const DefaultTxBytes = 4 << 20

// DefaultPageSize is the bbolt page size of a written database: 16 KiB.
// bbolt writes a commit one pwrite per dirty page, so four times larger
// pages are four times fewer writes: the write phase of a 600 MB fused
// restore falls from 0.51 s to 0.23 s (BenchmarkPageSize measures the
// writer alone). etcd keeps the page size a database was created with (bbolt
// reads it from the meta page), so the restored members run on 16 KiB
// pages until their first defragmentation, which writes the database anew
// at the machine's page size; BenchmarkMemberPageSize measures what the
// larger pages cost etcd's own writes meanwhile.
const DefaultPageSize = 16 << 10

// WriterConfig configures Create.
type WriterConfig struct {
	// Path is the final output file. Required. Its directory must exist.
	Path string
	// Force replaces an existing Path. Default false: an existing output is
	// an error before anything is written.
	Force bool
	// TxBytes is how often the crash suite's failpoint is passed, in bytes
	// written, and the bbolt writer's transaction size. Default
	// DefaultTxBytes.
	TxBytes int64
	// PageSize is the database's bbolt page size, a power of two from 4
	// KiB (what etcd itself creates on amd64) to 64 KiB. Default
	// DefaultPageSize.
	PageSize int
	// SizeHint is the expected database size in bytes: bbolt, which writes
	// the buckets other than `key` at the end, maps the file that large at
	// once; the bulk loader, which writes the `key` bucket back while it
	// writes it, drops its written pages from the page cache if the hint is
	// over half the memory the process may fill (newWriteBehind). Optional.
	SizeHint int64
	// BeforePublish, if set, checks the finished database under its
	// temporary name (complete, but its sha256 trailer is being computed at
	// the same time and is not there yet: open it with AllowNoTrailer) before
	// it is renamed to Path; an error stops the publication and removes it.
	BeforePublish func(tmpPath string) error
	// Raw writes a bare bbolt database, as a member's member/snap/db: no
	// sha256 trailer (and no hash), still fsynced and renamed into place.
	Raw bool
	// Timing receives the wall time of the writer's steps (StepWrite,
	// StepCheck, StepTrailer, StepFsync, StepPublish). Optional.
	Timing Timing
	// Writer is how the `key` bucket is written: WriterBulk (the default,
	// "") or WriterBbolt.
	Writer WriterKind
}

// WriterKind names how a Writer writes the `key` bucket.
type WriterKind string

const (
	// WriterBulk lays out bbolt's pages itself, in key order (bulkLoader):
	// the default, and the faster.
	WriterBulk WriterKind = "bulk"
	// WriterBbolt puts every entry through bbolt's own Bucket.Put, in
	// transactions committed every TxBytes as bbolt's Compact does
	// (boltWriter): the reference the bulk loader is tested against, and the
	// fallback if a future bbolt changes its on-disk format.
	WriterBbolt WriterKind = "bbolt"
)

// ParseWriterKind reads a writer's name ("" is the default, WriterBulk).
func ParseWriterKind(s string) (WriterKind, error) {
	switch WriterKind(s) {
	case "", WriterBulk:
		return WriterBulk, nil
	case WriterBbolt:
		return WriterBbolt, nil
	}
	return "", fmt.Errorf("writer %q is neither %s nor %s", s, WriterBulk, WriterBbolt)
}

// keyWriter writes the `key` bucket of a new database, the entries in
// increasing key order. After finish, which releases the file whether or
// not it succeeded, the file is a closed bbolt database holding the `key`
// bucket and nothing else (the bulk loader's, with no entry, not even
// that: writeSmall creates it); abort releases it unfinished.
type keyWriter interface {
	add(k, v []byte) error
	finish() error
	abort()
}

// Timing receives the wall time of one step of a write, on the caller's
// goroutine, so that a caller can say where its time went. Steps of the
// same name add up.
type Timing func(step string, d time.Duration)

// The steps a Writer and a FusedRestore report to a Timing.
const (
	// StepWrite: the end of a database: its last pages, the buckets
	// other than `key` (one bbolt transaction) and closing it. The `key`
	// bucket's pages are written while the entries come, so their time is
	// the caller's (a transform's stream).
	StepWrite = "write"
	// StepCheck: BeforePublish.
	StepCheck = "check"
	// StepTrailer: waiting for the output's sha256 after the check.
	StepTrailer = "trailer"
	// StepFsync: the fsync of the finished file, the part not overlapped by
	// the check.
	StepFsync = "fsync"
	// StepMembers: the second and later members' copies.
	StepMembers = "members"
	// StepPublish: renames into place and directory syncs.
	StepPublish = "publish"
)

// step times fn as step name, if t is set.
func (t Timing) step(name string, fn func() error) error {
	if t == nil {
		return fn()
	}
	start := time.Now()
	err := fn()
	t(name, time.Since(start))
	return err
}

// Writer builds a new snapshot file under a temporary name beside Path.
// Nothing appears at Path until Commit succeeds; Abort (or a failed Commit)
// removes every temporary file. The `key` bucket is written as the entries
// come, page by page (bulkLoader) or through bbolt's Put (boltWriter, with
// WriterBbolt); every other bucket is held until Commit, when one bbolt
// transaction writes it.
type Writer struct {
	cfg   WriterConfig
	tmp   string
	keys  keyWriter
	small smallBuckets
	last  []byte
	done  bool
	// serialSync fsyncs only after the check and the hash, as before the
	// two were overlapped (BenchmarkWriterFinish measures both).
	serialSync bool
}

// Result describes a committed snapshot file.
type Result struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Create starts a new snapshot file. It fails at once if Path exists and
// Force is false, or if Path's directory is missing or not writable.
func Create(cfg WriterConfig) (*Writer, error) {
	if cfg.Path == "" {
		return nil, errors.New("no output path given")
	}
	if cfg.TxBytes <= 0 {
		cfg.TxBytes = DefaultTxBytes
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageSize < 4<<10 || cfg.PageSize > 64<<10 || cfg.PageSize&(cfg.PageSize-1) != 0 {
		return nil, fmt.Errorf("page size %d is not a power of two from 4096 to 65536", cfg.PageSize)
	}
	kind, err := ParseWriterKind(string(cfg.Writer))
	if err != nil {
		return nil, err
	}
	if err := fsutil.CheckNew(cfg.Path, cfg.Force); err != nil {
		return nil, err
	}
	f, err := fsutil.CreateTemp(cfg.Path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating output: %w", err)
	}
	w := &Writer{cfg: cfg, tmp: f.Name(), small: smallBuckets{}}
	if kind == WriterBulk {
		w.keys = newBulkLoader(f, cfg.PageSize, cfg.TxBytes, cfg.SizeHint)
		return w, nil
	}
	f.Close()
	if w.keys, err = newBoltWriter(w.tmp, cfg.PageSize, cfg.TxBytes, w.mmapSize()); err != nil {
		os.Remove(w.tmp)
		return nil, fmt.Errorf("creating output: %w", err)
	}
	return w, nil
}

// mmapSize is the initial mmap size bbolt gets: the expected size, with room.
func (w *Writer) mmapSize() int {
	if w.cfg.SizeHint > 0 && w.cfg.SizeHint < 1<<40 {
		return int(w.cfg.SizeHint + w.cfg.SizeHint/8)
	}
	return 0
}

// Put stores one `key` bucket entry. revKey and raw must stay valid until
// the next Commit of the transaction; slices from the input snapshot do.
// Keys should come in increasing order; Put refuses a key not above the last.
func (w *Writer) Put(revKey, raw []byte) error {
	if w.last != nil && bytes.Compare(revKey, w.last) <= 0 {
		return fmt.Errorf("internal error: revision %x written after %x", revKey, w.last)
	}
	if err := w.keys.add(revKey, raw); err != nil {
		return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	w.last = revKey
	return nil
}

// CreateBuckets creates top-level buckets that do not exist yet, empty
// (etcd creates all of its buckets at start, whether it uses them or not).
func (w *Writer) CreateBuckets(names ...[]byte) error {
	for _, name := range names {
		if !bytes.Equal(name, KeyBucket) {
			w.small.create(name)
		}
	}
	return nil
}

// PutBucket stores one entry of a top-level bucket other than `key` (meta,
// lease, members ...), creating the bucket if needed. k and v are copied.
func (w *Writer) PutBucket(name, k, v []byte) error {
	if bytes.Equal(name, KeyBucket) {
		return fmt.Errorf("internal error: PutBucket on the %q bucket; use Put", name)
	}
	if err := w.small.put(name, k, v); err != nil {
		return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	return nil
}

// CopyBuckets copies every top-level bucket of src except `key`, byte for
// byte (meta, lease, auth*, cluster, members, alarm ...); the buckets named
// in empty are created but left empty.
func (w *Writer) CopyBuckets(src *Snapshot, empty ...[]byte) error {
	for _, name := range src.bucketNames() {
		if bytes.Equal(name, KeyBucket) {
			continue
		}
		w.small.create(name)
		if slices.ContainsFunc(empty, func(e []byte) bool { return bytes.Equal(e, name) }) {
			continue
		}
		err := src.ForEachInBucket(name, func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("bucket %q has a nested bucket %q; etcd writes none", name, k)
			}
			return w.small.put(name, k, v)
		})
		if err != nil {
			return fmt.Errorf("writing %s: bucket %q: %w", w.cfg.Path, name, err)
		}
	}
	return nil
}

// SetCompacted writes both compaction markers at main revision rev, so that
// etcd refuses reads and watches of every revision below it.
func (w *Writer) SetCompacted(rev int64) error {
	v := RevisionKey(Revision{Main: rev})
	if err := w.PutBucket(MetaBucket, schema.ScheduledCompactKeyName, v); err != nil {
		return err
	}
	return w.PutBucket(MetaBucket, schema.FinishedCompactKeyName, v)
}

// Commit finishes the database, trims bbolt's preallocated tail, appends
// the sha256 trailer, fsyncs, and renames the file to Path.
func (w *Writer) Commit() (*Result, error) {
	if w.done {
		return nil, errors.New("writer already finished")
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	size, err := w.close()
	if err != nil {
		return nil, err
	}
	sum, err := w.finish(size)
	if err != nil {
		return nil, err
	}
	// A failed fsync after the rename (ErrNotDurable) leaves the output in
	// place: it is returned with the result, and nothing is removed.
	perr := w.cfg.Timing.step(StepPublish, func() error { return fsutil.Publish(w.tmp, w.cfg.Path, w.cfg.Force) })
	if perr != nil && !errors.Is(perr, fsutil.ErrNotDurable) {
		return nil, perr
	}
	ok = true
	w.done = true
	if w.cfg.Raw {
		return &Result{Path: w.cfg.Path, Size: size}, perr
	}
	return &Result{Path: w.cfg.Path, Size: size + sha256.Size, SHA256: hex.EncodeToString(sum)}, perr
}

// close writes the rest of the `key` bucket's pages, then every other
// bucket in one bbolt transaction, and closes the database; size is the
// database's high-water mark.
func (w *Writer) close() (size int64, err error) {
	err = w.cfg.Timing.step(StepWrite, func() error {
		keys := w.keys
		w.keys = nil
		if err := keys.finish(); err != nil {
			return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
		}
		if size, err = w.writeSmall(); err != nil {
			return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
		}
		return nil
	})
	return size, err
}

// writeSmall opens the database the key writer wrote with bbolt and
// writes every bucket but `key` (creating `key` too if no entry came).
func (w *Writer) writeSmall() (int64, error) {
	db, err := bolt.Open(w.tmp, 0o600, &bolt.Options{
		NoSync:          true, // one fsync at the end, of the finished file
		NoGrowSync:      true,
		NoFreelistSync:  true, // as etcd writes its backend
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: w.mmapSize(),
	})
	if err != nil {
		return 0, err
	}
	var size int64
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(KeyBucket); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(w.small)) {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return fmt.Errorf("bucket %q: %w", name, err)
			}
			entries := w.small[name]
			for _, k := range slices.Sorted(maps.Keys(entries)) {
				if err := b.Put([]byte(k), entries[k]); err != nil {
					return fmt.Errorf("bucket %q: %w", name, err)
				}
			}
		}
		return nil
	})
	if err == nil {
		err = db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return size, err
}

// finish trims the file to its high-water mark and appends the sha256
// trailer. The file is fsynced on one goroutine while BeforePublish checks
// it and (with a trailer) the hash is computed on others: the check and the
// hash are CPU, the fsync is the disk's time. The trailer is written only
// when all succeeded, then fsynced on its own (one dirty page).
func (w *Writer) finish(size int64) ([]byte, error) {
	f, err := os.OpenFile(w.tmp, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return nil, fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	type hashed struct {
		sum []byte
		err error
	}
	ch := make(chan hashed, 1)
	if !w.cfg.Raw {
		go func() {
			h := sha256.New()
			_, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, size), make([]byte, 1<<20))
			ch <- hashed{h.Sum(nil), err}
		}()
	}
	synced := w.syncEarly(f)
	verr := w.check()
	var hs hashed
	if !w.cfg.Raw {
		w.cfg.Timing.step(StepTrailer, func() error { hs = <-ch; return nil })
	}
	serr := w.cfg.Timing.step(StepFsync, func() error { return w.syncLate(f, synced) })
	switch {
	case verr != nil:
		return nil, verr
	case hs.err != nil:
		return nil, fmt.Errorf("writing %s: %w", w.cfg.Path, hs.err)
	case serr != nil:
		return nil, fmt.Errorf("writing %s: %w", w.cfg.Path, serr)
	case w.cfg.Raw:
		return nil, f.Close()
	}
	if _, err := f.WriteAt(hs.sum, size); err != nil {
		return nil, fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	fsutil.FailpointBeforeFsync()
	if err := w.cfg.Timing.step(StepFsync, f.Sync); err != nil {
		return nil, fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	fsutil.FailpointAfterFsync()
	return hs.sum, f.Close()
}

// syncEarly starts the fsync of the finished database; nil with serialSync.
func (w *Writer) syncEarly(f *os.File) chan error {
	if w.serialSync {
		return nil
	}
	synced := make(chan error, 1)
	go func() { synced <- syncFailpoints(f) }()
	return synced
}

// syncFailpoints fsyncs f between the crash suite's failpoints.
func syncFailpoints(f *os.File) error {
	fsutil.FailpointBeforeFsync()
	err := f.Sync()
	fsutil.FailpointAfterFsync()
	return err
}

// syncLate waits for syncEarly's fsync, or (serialSync) does it now.
func (w *Writer) syncLate(f *os.File, synced chan error) error {
	if synced == nil {
		return syncFailpoints(f)
	}
	return <-synced
}

// check runs BeforePublish, if set.
func (w *Writer) check() error {
	if w.cfg.BeforePublish == nil {
		return nil
	}
	return w.cfg.Timing.step(StepCheck, func() error { return w.cfg.BeforePublish(w.tmp) })
}

// Abort discards everything written. It is safe to call more than once and
// after Commit (then it does nothing).
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.keys != nil {
		w.keys.abort()
		w.keys = nil
	}
	os.Remove(w.tmp)
}

// TempPath is the temporary file being written (for tests and messages).
func (w *Writer) TempPath() string { return w.tmp }

// failpointTxCommitted runs each time the snapshot writer has written
// TxBytes more of the `key` bucket's pages (etcd's gofail; compiled
// in only by `make failpoints`). Trigger the N-th with
// GOFAIL_FAILPOINTS='snapshotTxCommitted=N*off->return("kill")' (see
// fsutil.Crash).
func failpointTxCommitted() {
	// gofail: var snapshotTxCommitted string
	// fsutil.Crash("snapshotTxCommitted", snapshotTxCommitted)
}
