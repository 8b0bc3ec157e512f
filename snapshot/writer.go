package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// DefaultTxBytes bounds each write transaction: bbolt keeps every dirty
// page of a transaction in memory, so a transaction is committed after this
// many bytes of puts (bbolt's own compact command does the same). 4 MiB
// rather than 8: on the 1.1M-key bench snapshot the fused restore's write
// phase took 1.6 s instead of 2.3 s and its peak RssAnon was 151-155 MiB
// instead of 162-171 (2 and 1 MiB: no faster, 144-151 MiB); the same speed
// on 200k keys, 7 MiB less.
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
	// TxBytes bounds each write transaction. Default DefaultTxBytes.
	TxBytes int64
	// PageSize is the database's bbolt page size, a power of two from 4
	// KiB (what etcd itself creates on amd64) to 64 KiB. Default
	// DefaultPageSize.
	PageSize int
	// SizeHint is the expected database size in bytes; the file is mapped
	// that large once instead of being remapped as it grows. Optional.
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
}

// Timing receives the wall time of one step of a write, on the caller's
// goroutine, so that a caller can say where its time went. Steps of the
// same name add up.
type Timing func(step string, d time.Duration)

// The steps a Writer and a FusedRestore report to a Timing.
const (
	// StepWrite: a write transaction's commit (bbolt's page writes), or
	// closing the database.
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
// removes every temporary file.
type Writer struct {
	cfg     WriterConfig
	tmp     string
	db      *bolt.DB
	tx      *bolt.Tx
	keys    *bolt.Bucket
	pending int64
	last    []byte
	done    bool
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
	if err := fsutil.CheckNew(cfg.Path, cfg.Force); err != nil {
		return nil, err
	}
	f, err := fsutil.CreateTemp(cfg.Path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating output: %w", err)
	}
	w := &Writer{cfg: cfg, tmp: f.Name()}
	f.Close()
	mmap := 0
	if cfg.SizeHint > 0 && cfg.SizeHint < 1<<40 {
		mmap = int(cfg.SizeHint + cfg.SizeHint/8)
	}
	w.db, err = bolt.Open(w.tmp, 0o600, &bolt.Options{
		NoSync:          true, // one fsync at the end, of the finished file
		NoGrowSync:      true,
		NoFreelistSync:  true, // as etcd writes its backend
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: mmap,
		PageSize:        cfg.PageSize,
	})
	if err != nil {
		os.Remove(w.tmp)
		return nil, fmt.Errorf("creating output: %w", err)
	}
	if err := w.begin(); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

func (w *Writer) begin() error {
	tx, err := w.db.Begin(true)
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	w.tx = tx
	b, err := tx.CreateBucketIfNotExists(KeyBucket)
	if err != nil {
		return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	b.FillPercent = 1.0 // keys are appended in order; full pages are best
	w.keys = b
	w.pending = 0
	return nil
}

// flushIfFull commits the current transaction once it holds TxBytes.
func (w *Writer) flushIfFull() error {
	if w.pending < w.cfg.TxBytes {
		return nil
	}
	if err := w.cfg.Timing.step(StepWrite, w.tx.Commit); err != nil {
		w.tx = nil
		return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	failpointTxCommitted()
	return w.begin()
}

// Put stores one `key` bucket entry. revKey and raw must stay valid until
// the next Commit of the transaction; slices from the input snapshot do.
// Keys should come in increasing order; Put refuses a key not above the last.
func (w *Writer) Put(revKey, raw []byte) error {
	if w.last != nil && bytes.Compare(revKey, w.last) <= 0 {
		return fmt.Errorf("internal error: revision %x written after %x", revKey, w.last)
	}
	if err := w.keys.Put(revKey, raw); err != nil {
		return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
	}
	w.last = revKey
	w.pending += int64(len(revKey) + len(raw))
	return w.flushIfFull()
}

// CreateBuckets creates top-level buckets that do not exist yet, empty
// (etcd creates all of its buckets at start, whether it uses them or not).
func (w *Writer) CreateBuckets(names ...[]byte) error {
	for _, name := range names {
		if _, err := w.tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("writing %s: bucket %q: %w", w.cfg.Path, name, err)
		}
	}
	return nil
}

// PutBucket stores one entry of a top-level bucket other than `key` (meta,
// lease, members ...), creating the bucket if needed. k and v must stay
// valid until the next Commit of the transaction, as with Put.
func (w *Writer) PutBucket(name, k, v []byte) error {
	if bytes.Equal(name, KeyBucket) {
		return fmt.Errorf("internal error: PutBucket on the %q bucket; use Put", name)
	}
	b, err := w.tx.CreateBucketIfNotExists(name)
	if err == nil {
		err = b.Put(k, v)
	}
	if err != nil {
		return fmt.Errorf("writing %s: bucket %q: %w", w.cfg.Path, name, err)
	}
	w.pending += int64(len(k) + len(v))
	return w.flushIfFull()
}

// CopyBuckets copies every top-level bucket of src except `key`, byte for
// byte (meta, lease, auth*, cluster, members, alarm ...).
func (w *Writer) CopyBuckets(src *Snapshot, empty ...[]byte) error {
	for _, name := range src.bucketNames() {
		if bytes.Equal(name, KeyBucket) {
			continue
		}
		b, err := w.tx.CreateBucketIfNotExists(name)
		if err != nil {
			return fmt.Errorf("writing %s: bucket %q: %w", w.cfg.Path, name, err)
		}
		if slices.ContainsFunc(empty, func(e []byte) bool { return bytes.Equal(e, name) }) {
			continue // created, but left empty
		}
		err = src.ForEachInBucket(name, func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("bucket %q has a nested bucket %q; etcd writes none", name, k)
			}
			if err := b.Put(k, v); err != nil {
				return err
			}
			w.pending += int64(len(k) + len(v))
			return nil
		})
		if err != nil {
			return fmt.Errorf("writing %s: bucket %q: %w", w.cfg.Path, name, err)
		}
	}
	return w.flushIfFull()
}

// SetCompacted writes both compaction markers at main revision rev, so that
// etcd refuses reads and watches of every revision below it.
func (w *Writer) SetCompacted(rev int64) error {
	b, err := w.tx.CreateBucketIfNotExists(MetaBucket)
	if err != nil {
		return err
	}
	v := RevisionKey(Revision{Main: rev})
	if err := b.Put(schema.ScheduledCompactKeyName, v); err != nil {
		return err
	}
	return b.Put(schema.FinishedCompactKeyName, bytes.Clone(v))
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

// close commits the last transaction and closes the database; size is the
// database's high-water mark.
func (w *Writer) close() (size int64, err error) {
	err = w.cfg.Timing.step(StepWrite, func() error {
		if err := w.tx.Commit(); err != nil {
			w.tx = nil
			return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
		}
		w.tx = nil
		if err := w.db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
			return err
		}
		if err := w.db.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", w.cfg.Path, err)
		}
		w.db = nil
		return nil
	})
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

// TempPath is the temporary file being written (for tests and messages).
func (w *Writer) TempPath() string { return w.tmp }

// failpointTxCommitted runs after each bounded write transaction of the
// snapshot writer and of a fused restore's edits (etcd's gofail; compiled
// in only by `make failpoints`). Trigger the N-th with
// GOFAIL_FAILPOINTS='snapshotTxCommitted=N*off->return("kill")' (see
// fsutil.Crash).
func failpointTxCommitted() {
	// gofail: var snapshotTxCommitted string
	// fsutil.Crash("snapshotTxCommitted", snapshotTxCommitted)
}
