package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/progress"
)

// Bucket names of the etcd v3 backend.
var (
	KeyBucket  = schema.Key.Name()
	MetaBucket = schema.Meta.Name()
)

// HashMode says what Open does with a sha256 trailer that is present.
// Whether a file without one is accepted is OpenOptions.AllowNoTrailer's
// business: the two are independent, and every combination means something.
type HashMode int

const (
	// HashVerify hashes the bbolt part in Open and refuses a file whose
	// trailer does not match, as etcdutl does. The default.
	HashVerify HashMode = iota
	// HashInBackground hashes in a goroutine while the caller goes on
	// reading the database (both cores; the same page cache). The caller
	// must call WaitHash, and trust nothing it read, before acting on it.
	HashInBackground
	// HashTrailerOnly reads the trailer but does not hash the file: for a
	// caller that has just written it, or hands it to etcd's restore, which
	// hashes it anyway. SHA256 is then the trailer's value, unchecked.
	HashTrailerOnly
)

// OpenOptions configure Open.
type OpenOptions struct {
	// Hash says how a sha256 trailer is checked. Default HashVerify.
	Hash HashMode
	// AllowNoTrailer accepts a file without a sha256 trailer (a raw
	// member/snap/db copied from a data dir), as etcdutl's --skip-hash-check
	// does. It says nothing about a trailer that is there: Hash does.
	// Default false, as in etcdutl.
	AllowNoTrailer bool
	// Progress receives the hash check as a "hash" phase (HashVerify
	// only). Optional.
	Progress progress.Reporter
	// InOrder says the file's pages are in key order (one this process's
	// Writer has just written): if Open does not populate the mapping, it
	// advises it sequential (adviseSequential). Default false.
	InOrder bool
}

// Snapshot is an open, verified snapshot file. It is read-only: nothing in
// this package ever opens an input for writing.
type Snapshot struct {
	Path string
	// Size is the file size; DBSize the bbolt part (Size minus the trailer).
	Size, DBSize int64
	// HasTrailer reports that the file ends in a sha256 trailer. Whether its
	// value has been checked depends on OpenOptions.Hash: by Open with
	// HashVerify, by WaitHash with HashInBackground, never with
	// HashTrailerOnly.
	HasTrailer bool
	// SHA256 is the hex sha256 of the bbolt part: the trailer's value, empty
	// without a trailer. With HashInBackground it is set once WaitHash has
	// returned nil; with HashTrailerOnly it is unchecked.
	SHA256 string
	// PageSize of the bbolt database.
	PageSize int
	// Meta holds the decoded `meta` bucket.
	Meta Meta

	db *bolt.DB
	tx *bolt.Tx

	hashDone   chan error // HashInBackground: the trailer check's result
	hashErr    error
	hashWaited bool
}

// Meta is what the `meta` bucket says about the store.
type Meta struct {
	ConsistentIndex uint64 `json:"consistentIndex"`
	Term            uint64 `json:"term"`
	// ScheduledCompact and FinishedCompact are the main revisions of the
	// compaction markers (0 when absent).
	ScheduledCompact int64  `json:"scheduledCompactRevision"`
	FinishedCompact  int64  `json:"finishedCompactRevision"`
	StorageVersion   string `json:"storageVersion,omitempty"`
}

// BucketInfo describes one top-level bucket.
type BucketInfo struct {
	Name string `json:"name"`
	Keys int    `json:"keys"`
}

// Open opens path read-only, checks its sha256 trailer as opts say and its
// bbolt structure, and reads the meta bucket. It never modifies the file.
func Open(path string, opts OpenOptions) (*Snapshot, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, &InputError{Path: path, Problem: "is a directory, not a snapshot file",
			Err: option.Errorf("SkipHashCheck", "for a data dir, use its member/snap/db with {}")}
	}
	s := &Snapshot{Path: path, Size: st.Size(), DBSize: st.Size()}
	if s.Size == 0 {
		return nil, invalid(path, "is empty")
	}
	s.HasTrailer = hasTrailer(s.Size)
	if s.HasTrailer {
		s.DBSize = s.Size - sha256.Size
	}
	if err := checkHeader(f, path, s.DBSize); err != nil {
		return nil, err
	}
	if err := s.checkTrailer(f, opts); err != nil {
		return nil, err
	}

	// Every pass reads the whole file: mapping it in one go (MAP_POPULATE)
	// costs less than a page fault per page (about a fifth of a walk of the
	// key bucket, measured on a 1.8 GiB snapshot). The pages are the page
	// cache's, not this process's memory. An input larger than half the
	// memory this process may fill (a small host, a memory cgroup) is not
	// populated (populateFlags).
	flags := populateFlags(s.Size)
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: time.Second, MmapFlags: flags})
	if err != nil {
		if herr := s.WaitHash(); herr != nil {
			return nil, herr // a corrupt file: the hash says it best
		}
		switch {
		case errors.Is(err, berrors.ErrTimeout):
			return nil, invalid(path, "is locked by another process (a running etcd?); save a snapshot with etcdctl or stop the member")
		case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
			return nil, &InputError{Path: path, Problem: "is not a valid bbolt database", Err: err}
		}
		return nil, fmt.Errorf("snapshot %s: open: %w", path, err)
	}
	s.db = db
	if flags&mmapPopulate == 0 && opts.InOrder {
		adviseSequential(db.Info().Data, s.DBSize)
	}
	if err := s.load(); err != nil {
		s.Close() // rolls back the read transaction first; db.Close waits for it
		if herr := s.WaitHash(); herr != nil {
			return nil, herr
		}
		return nil, err
	}
	return s, nil
}

// openInput opens the input file read-only; a missing one is an
// InputError.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, invalid(path, "does not exist")
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return f, nil
}

// checkTrailer applies opts to the trailer, or to its absence.
func (s *Snapshot) checkTrailer(f *os.File, opts OpenOptions) error {
	if !s.HasTrailer {
		if opts.AllowNoTrailer {
			return nil
		}
		return &InputError{Path: s.Path, Problem: fmt.Sprintf("has no sha256 trailer (size %d is not 32 more than a multiple of 512)", s.Size),
			Err: option.Errorf("SkipHashCheck", "it is truncated, or a raw member/snap/db that needs {}")}
	}
	switch opts.Hash {
	case HashVerify:
		return s.verifyTrailer(f, progress.OrNop(opts.Progress))
	case HashInBackground:
		s.hashDone = make(chan error, 1)
		go func() {
			hf, err := os.Open(s.Path)
			if err == nil {
				err = s.verifyTrailer(hf, progress.Nop{})
				hf.Close()
			}
			s.hashDone <- err
		}()
		return nil
	case HashTrailerOnly:
		want, err := readTrailer(f, s.Path, s.DBSize)
		if err != nil {
			return err
		}
		s.SHA256 = hex.EncodeToString(want)
		return nil
	}
	return fmt.Errorf("snapshot %s: unknown hash mode %d", s.Path, opts.Hash)
}

// hasTrailer reports whether a file of this size ends in a sha256 trailer:
// a bbolt file is a whole number of pages (512 bytes at least), so 32 bytes
// more than a multiple of 512 is the trailer etcd's snapshot save appends.
func hasTrailer(size int64) bool { return size%512 == sha256.Size }

// bolt's meta page: page header (16 bytes), then magic (4) and version (4).
const boltMagic = 0xED0CDAED

// checkHeader refuses files that cannot be bbolt databases before bbolt
// touches them, so the error names the problem.
func checkHeader(f *os.File, path string, dbSize int64) error {
	var hdr [24]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return invalid(path, "is too small (%d bytes) to be an etcd snapshot", dbSize)
		}
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if binary.LittleEndian.Uint32(hdr[16:20]) != boltMagic {
		if bytes.HasPrefix(hdr[:], zipMagic) {
			return invalid(path, "is a zip archive (a compressed k3s/RKE2 snapshot): inspect, ls, get, plan, transform, verify and restore read it as is; here, extract it first (unzip)")
		}
		if bytes.HasPrefix(hdr[:], []byte("{")) || isText(hdr[:]) {
			return invalid(path, "is a text file, not an etcd snapshot")
		}
		return invalid(path, "is not an etcd snapshot (no bbolt database header)")
	}
	if dbSize < 4*1024 {
		return invalid(path, "is too small (%d bytes) to be an etcd snapshot", dbSize)
	}
	return nil
}

func isText(b []byte) bool {
	for _, c := range b {
		if c < 9 || (c > 13 && c < 32) || c == 127 {
			return false
		}
	}
	return true
}

// verifyTrailer hashes the bbolt part and compares it with the trailer.
func (s *Snapshot) verifyTrailer(f *os.File, p progress.Reporter) error {
	h := sha256.New()
	p.Start("hash", "bytes", s.DBSize)
	if !hashMapped(f, s.DBSize, h, p) {
		if err := s.hashRead(f, h, p); err != nil {
			return err
		}
	}
	got := h.Sum(nil)
	want, err := readTrailer(f, s.Path, s.DBSize)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return invalid(s.Path, "sha256 trailer does not match its contents (expected %x, got %x): the file is corrupt or truncated", want, got)
	}
	s.SHA256 = hex.EncodeToString(got)
	p.Done()
	return nil
}

// hashRead writes the bbolt part to h with pread, 4 MiB at a time. A
// mapped read that faulted may have written part of it: h starts again.
func (s *Snapshot) hashRead(f *os.File, h hash.Hash, p progress.Reporter) error {
	h.Reset()
	buf := make([]byte, 4<<20)
	r := io.NewSectionReader(f, 0, s.DBSize)
	for {
		n, err := r.Read(buf)
		h.Write(buf[:n])
		p.Add(int64(n))
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("snapshot %s: reading: %w", s.Path, err)
		}
	}
	return nil
}

// readTrailer reads the sha256 trailer that follows the dbSize bytes of
// the bbolt part.
func readTrailer(f *os.File, path string, dbSize int64) ([]byte, error) {
	sum := make([]byte, sha256.Size)
	if _, err := f.ReadAt(sum, dbSize); err != nil {
		return nil, fmt.Errorf("snapshot %s: reading trailer: %w", path, err)
	}
	return sum, nil
}

// load checks the bbolt structure that later passes rely on and reads meta.
// It keeps one read transaction open for the life of the Snapshot, so that
// slices handed out by Index and Live stay valid.
func (s *Snapshot) load() (err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	tx, err := s.db.Begin(false)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", s.Path, err)
	}
	s.tx = tx
	s.PageSize = s.db.Info().PageSize
	if tx.Size() > s.DBSize {
		return invalid(s.Path, "is truncated: the database claims %d bytes but the file holds %d", tx.Size(), s.DBSize)
	}
	if tx.Bucket(KeyBucket) == nil {
		return invalid(s.Path, "has no %q bucket: it is a bbolt file but not an etcd v3 snapshot", KeyBucket)
	}
	meta := tx.Bucket(MetaBucket)
	if meta == nil {
		return invalid(s.Path, "has no %q bucket: it is a bbolt file but not an etcd v3 snapshot", MetaBucket)
	}
	if v := meta.Get(schema.MetaConsistentIndexKeyName); len(v) == 8 {
		s.Meta.ConsistentIndex = binary.BigEndian.Uint64(v)
	}
	if v := meta.Get(schema.MetaTermKeyName); len(v) == 8 {
		s.Meta.Term = binary.BigEndian.Uint64(v)
	}
	for _, m := range []struct {
		name []byte
		dst  *int64
	}{{schema.ScheduledCompactKeyName, &s.Meta.ScheduledCompact}, {schema.FinishedCompactKeyName, &s.Meta.FinishedCompact}} {
		v := meta.Get(m.name)
		if v == nil {
			continue
		}
		rev, _, err := ParseRevisionKey(v)
		if err != nil {
			return invalid(s.Path, "meta/%s: %v", m.name, err)
		}
		*m.dst = rev.Main
	}
	s.Meta.StorageVersion = string(meta.Get(schema.MetaStorageVersionName))
	return nil
}

// guard turns a panic from bbolt on a corrupt page (or a memory fault on a
// truncated mapping) into an InputError. Call it deferred, with the named
// error result of the function doing the reading.
//
//	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
//
// (the argument is evaluated when the defer is set up: that turns faults on
// for the reading that follows; guard puts the old setting back).
func guard(path string, err *error, oldFault bool) {
	debug.SetPanicOnFault(oldFault)
	if r := recover(); r != nil {
		*err = &InputError{Path: path, Problem: "is corrupt (the database structure could not be read)", Err: fmt.Errorf("%v", r)}
	}
}

// WaitHash waits for a HashInBackground trailer check and returns its
// result (nil at once with any other mode, or without a trailer).
// SHA256 is valid only after it returned nil.
func (s *Snapshot) WaitHash() error {
	if s == nil || s.hashDone == nil {
		return nil
	}
	if !s.hashWaited {
		s.hashErr, s.hashWaited = <-s.hashDone, true
	}
	return s.hashErr
}

// Close releases the read transaction and the database.
func (s *Snapshot) Close() error {
	if s == nil {
		return nil
	}
	s.WaitHash() // no goroutine outlives the Snapshot
	if s.db == nil {
		return nil
	}
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// Buckets lists the top-level buckets with their key counts.
func (s *Snapshot) Buckets() (out []BucketInfo, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	err = s.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		out = append(out, BucketInfo{Name: string(name), Keys: b.Stats().KeyN})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// ForEachInBucket calls fn for every key of a top-level bucket other than
// `key`. The slices are valid until Close.
func (s *Snapshot) ForEachInBucket(name []byte, fn func(k, v []byte) error) (err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	b := s.tx.Bucket(name)
	if b == nil {
		return nil
	}
	return b.ForEach(fn)
}

// bucketNames lists the top-level buckets.
func (s *Snapshot) bucketNames() (names [][]byte) {
	s.tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		names = append(names, name)
		return nil
	})
	return names
}

// Get returns the stored KeyValue at rev (zero-copy), or ok=false.
func (s *Snapshot) Get(rev Revision) (kv KV, ok bool, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	v := s.tx.Bucket(KeyBucket).Get(RevisionKey(rev))
	if v == nil {
		return kv, false, nil
	}
	kv, err = ParseKV(v)
	if err != nil {
		return kv, false, invalid(s.Path, "revision %s: value is not a valid mvccpb.KeyValue: %v", RevisionString(rev), err)
	}
	return kv, true, nil
}

// CheckStructure reads every page reachable from the root: every bucket,
// every key and value, in this goroutine, so that a corrupt page is an
// InputError and not a crash. (bbolt's own Tx.Check is not used: on a
// read-only file it first rebuilds the freelist in a goroutine of its own,
// where a corrupt page panics beyond any recover; etcd's files carry no
// freelist to check anyway.) It returns at most max problems.
func (s *Snapshot) CheckStructure(max int) (problems []string, err error) {
	defer guard(s.Path, &err, debug.SetPanicOnFault(true))
	var n int64
	err = s.tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			n += int64(len(k) + len(v))
			if v == nil && b.Bucket(k) == nil && len(problems) < max {
				problems = append(problems, fmt.Sprintf("bucket %q: key %x has no value", name, k))
			}
			return nil
		})
	})
	if n > s.DBSize {
		problems = append(problems, fmt.Sprintf("the keys and values (%d bytes) exceed the file (%d bytes)", n, s.DBSize))
	}
	return problems, err
}

// MmapPopulate is the bbolt MmapFlags that maps a whole database file in
// one go (MAP_POPULATE on Linux, nothing elsewhere), as Open maps its
// input: a reader of every page that leaves it out pays a page fault per
// page, which on a cold cache is one disk read each.
const MmapPopulate = mmapPopulate
