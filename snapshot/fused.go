package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/snapshift/snapshift/internal/fsutil"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// A fused restore writes changed objects straight into the members' data
// dirs instead of into a new snapshot file that a restore then copies. For
// each member it:
//
//  1. runs etcd's own restore (etcdutl's snapshot package) on a small
//     snapshot holding every bucket of the input but `key`: that writes the
//     member's WAL and raft snapshot, and the membership, consistent index
//     and term into the small database, exactly as a restore of the whole
//     file would;
//  2. copies the input's database at disk speed (copy_file_range) into the
//     member's snap dir, in the background while the caller works out the
//     changes;
//  3. edits the copy in place with bbolt: every bucket but `key` is replaced
//     by the small restored database's, the changes are appended to the
//     `key` bucket above every input revision (tombstones for deleted keys,
//     new values at new revisions), the revision bump written as etcdutl
//     writes it, and scheduledCompactRev set above everything written.
//
// The input's older revisions stay in the copy, as after a restore of the
// input itself: scheduledCompactRev above finishedCompactRev makes etcd
// compact them at its first boot (mvcc's store.restore resumes the
// compaction), and from the start it answers "compacted" to any read or
// watch below that revision. Every member's database is the same (the
// membership lists every member; only the WAL names the member), so the
// second and later members get a copy of the first one's.

// FusedRestore is a restore of one or more members that applies changes
// on the way. Create it with StartFused, Put the changes in increasing
// revision order, SetCompacted, then Commit; Abort (or a failed Commit)
// leaves nothing behind.
type FusedRestore struct {
	members []memberDirs
	src     *Snapshot
	// BeforePublish, if set, checks the first member's finished database
	// (a raw bbolt file, no trailer) before anything is renamed into place.
	BeforePublish func(db string) error

	tiny      string // the small snapshot of every bucket but key
	tinyDir   string
	copyDone  chan error // the copy in progress (StartCopy), nil before
	ctx       context.Context
	cancel    context.CancelFunc
	db        *bolt.DB
	tx        *bolt.Tx
	keys      *bolt.Bucket
	pending   int64
	last      []byte
	compactAt int64
	alarms    []Alarm
	done      bool
	// checked is closed by InputChecked: the copy is opened by bbolt only
	// then (its free-page rebuild panics, in a goroutine of its own, on a
	// page the caller's full read of the input would have refused).
	checked     chan struct{}
	checkedOnce sync.Once
	// membership is every bucket but key of the first member's database
	// as etcd's restore wrote it.
	membership bucketData
	// w, after Rewrite, writes the first member's database anew instead of
	// editing a copy.
	w *Writer
}

// memberDirs is one member's configuration and temporary directories.
type memberDirs struct {
	cfg             RestoreConfig
	tmpData, tmpWAL string
	published       bool
}

// db is where the member's database is built before it replaces the small
// one etcd's restore wrote.
func (m *memberDirs) db() string    { return filepath.Join(m.tmpData, "member", "snap", "db") }
func (m *memberDirs) dbNew() string { return m.db() + ".snapshift" }

// StartFused validates the members' configurations, runs etcd's restore
// for each (member metadata, WAL) and starts copying the input's database
// into the first member's data dir, or, if src was opened with
// OpenOptions.CopyTo (in the same file system), takes that copy. src stays
// open until Commit or Abort. Every member must agree on the revision bump
// and alarms.
func StartFused(ctx context.Context, src *Snapshot, members []RestoreConfig) (_ *FusedRestore, err error) {
	if len(members) == 0 {
		return nil, errors.New("no member to restore")
	}
	f := &FusedRestore{src: src, checked: make(chan struct{})}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	for i := range members {
		cfg := members[i]
		cfg.SnapshotPath = src.Path
		if !cfg.validated {
			if err := cfg.Validate(); err != nil {
				return nil, err
			}
		}
		if cfg.RevisionBump != members[0].RevisionBump || cfg.KeepAlarms != members[0].KeepAlarms {
			return nil, fmt.Errorf("member %s: every member of one restore needs the same revision bump and alarm choice", cfg.Name)
		}
		f.members = append(f.members, memberDirs{cfg: cfg})
	}
	if f.alarms, err = src.Alarms(); err != nil {
		return nil, err
	}
	if err := f.writeTiny(); err != nil {
		return nil, err
	}
	for i := range f.members {
		m := &f.members[i]
		if m.tmpData, m.tmpWAL, err = tempDirs(m.cfg); err != nil {
			return nil, err
		}
		tcfg := m.cfg
		tcfg.SnapshotPath, tcfg.RevisionBump, tcfg.MarkCompacted = f.tiny, 0, false
		if err := etcdRestore(tcfg, m.tmpData, m.tmpWAL, false); err != nil {
			return nil, err
		}
	}
	f.ctx, f.cancel = context.WithCancel(ctx)
	if src.Copied {
		f.StartCopy() // the input's hash is writing it already
	}
	return f, nil
}

// StartCopy starts copying the input into the first member (unless the
// input's hash is copying it: OpenOptions.CopyTo), for the copy route;
// the copy is opened once InputChecked is called. Calling it again does
// nothing.
func (f *FusedRestore) StartCopy() {
	if f.copyDone != nil {
		return
	}
	f.copyDone = make(chan error, 1)
	go func() { f.copyDone <- f.copyAndOpen(f.ctx) }()
}

// copyAndOpen copies the input's database into the first member and opens
// the copy for the edits (bbolt rebuilds the free page list of a database
// etcd wrote without one: a walk of every page, done here while the rules
// still work).
func (f *FusedRestore) copyAndOpen(ctx context.Context) (err error) {
	// bbolt panics on a database it finds inconsistent when it rebuilds the
	// free pages (in this goroutine): that is a refusal of the input.
	defer func() {
		if r := recover(); r != nil {
			err = invalid(f.src.Path, "is corrupt: bbolt refused the copy of its database: %v", r)
		}
	}()
	if f.src.Copied {
		// Open's hash wrote the copy as it read the input.
		if err := f.src.WaitCopy(); err != nil {
			return err
		}
		if err := os.Rename(f.src.copyTo, f.members[0].dbNew()); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	} else if err := copyDB(ctx, f.src, f.members[0].dbNew()); err != nil {
		return err
	}
	select {
	case <-f.checked:
	case <-ctx.Done():
		return ctx.Err()
	}
	db, err := bolt.Open(f.members[0].dbNew(), 0o600, &bolt.Options{
		NoSync: true, NoGrowSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
		InitialMmapSize: int(f.src.DBSize + f.src.DBSize/8), MmapFlags: syscall.MAP_POPULATE,
	})
	if err != nil {
		return fmt.Errorf("restore: opening the copy: %w", err)
	}
	f.db = db
	return nil
}

// writeTiny writes every bucket of the input but key into a small snapshot
// file in a private temporary directory beside the first data dir.
func (f *FusedRestore) writeTiny() error {
	dir, err := fsutil.MkdirTemp(f.members[0].cfg.DataDir, ".restore")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	f.tinyDir = dir
	w, err := Create(WriterConfig{Path: filepath.Join(dir, "members.db")})
	if err != nil {
		return err
	}
	if err := w.CopyBuckets(f.src); err != nil {
		w.Abort()
		return err
	}
	res, err := w.Commit()
	if err != nil {
		return err
	}
	f.tiny = res.Path
	return nil
}

// copyDB copies the bbolt part of a snapshot file (the trailer left out)
// to a new file, in chunks so that a cancelled run stops early. Go's
// io.Copy between files uses copy_file_range: the kernel copies the pages.
func copyDB(ctx context.Context, src *Snapshot, dst string) error {
	in, err := os.Open(src.Path)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer out.Close()
	const chunk = 256 << 20
	for off := int64(0); off < src.DBSize; off += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunk, src.DBSize-off)
		if _, err := io.Copy(out, io.NewSectionReader(in, off, n)); err != nil {
			return fmt.Errorf("restore: copying %s: %w", src.Path, err)
		}
	}
	return out.Close()
}

// Rewrite makes the restore write the first member's database anew, as
// transform writes a snapshot (every live entry through the returned
// Writer, in order; Put, SetCompacted and Commit as before), instead of
// editing a copy of the input: the better route when most of the input is
// history (old revisions and tombstones), which then never reaches the
// member's disk. The copy already made is discarded. Call it instead of
// InputChecked, once the whole input has been read.
func (f *FusedRestore) Rewrite(sizeHint int64) (*Writer, error) {
	f.cancel()
	if f.copyDone != nil {
		<-f.copyDone // cancelled: it stopped, and its error does not matter
		f.copyDone = nil
	}
	if f.db != nil {
		f.db.Close()
		f.db = nil
	}
	first := &f.members[0]
	os.Remove(first.dbNew())
	if f.src.Copied {
		os.Remove(f.src.copyTo)
	}
	var err error
	if f.membership, err = readBuckets(first.db()); err != nil {
		return nil, err
	}
	w, err := Create(WriterConfig{Path: first.dbNew(), Raw: true, SizeHint: sizeHint, BeforePublish: f.BeforePublish})
	if err != nil {
		return nil, err
	}
	if err := putBuckets(w, f.membership, first.cfg.KeepAlarms); err != nil {
		w.Abort()
		return nil, err
	}
	f.w = w
	return w, nil
}

// InPlace says whether the restore edits a copy of the input (no Rewrite):
// then a deleted key needs its tombstone, and unchanged keys are there.
func (f *FusedRestore) InPlace() bool { return f.w == nil }

// putBuckets writes every bucket but key of data into w; without
// keepAlarms the alarm bucket is left empty.
func putBuckets(w *Writer, data bucketData, keepAlarms bool) error {
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := w.CreateBuckets([]byte(n)); err != nil {
			return err
		}
		if n == string(AlarmBucket) && !keepAlarms {
			continue
		}
		for _, kv := range data[n] {
			if err := w.PutBucket([]byte(n), kv[0], kv[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// InputChecked tells the restore that the caller has read the whole input
// without finding a fault (its index pass): the copy may be opened.
func (f *FusedRestore) InputChecked() {
	f.checkedOnce.Do(func() { close(f.checked) })
}

// open waits for the copy, opened, and starts the first transaction.
func (f *FusedRestore) open() error {
	if f.tx != nil {
		return nil
	}
	if f.copyDone != nil {
		err := <-f.copyDone
		f.copyDone = nil
		if err != nil {
			return err
		}
	}
	if f.db == nil {
		return errors.New("internal error: the copy is not open")
	}
	return f.begin()
}

func (f *FusedRestore) begin() error {
	tx, err := f.db.Begin(true)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	f.tx, f.keys, f.pending = tx, tx.Bucket(KeyBucket), 0
	if f.keys == nil {
		return fmt.Errorf("restore: the copy has no %q bucket", KeyBucket)
	}
	f.keys.FillPercent = 1.0 // appended in order
	return nil
}

// Put appends one `key` bucket entry (a revision key, tombstones with their
// 't'); keys must come in increasing order, above every input revision.
func (f *FusedRestore) Put(revKey, raw []byte) error {
	if f.w != nil {
		return f.w.Put(revKey, raw)
	}
	if err := f.open(); err != nil {
		return err
	}
	if f.last == nil {
		if k, _ := f.keys.Cursor().Last(); k != nil {
			f.last = bytes.Clone(k)
		}
	}
	if f.last != nil && bytes.Compare(revKey, f.last) <= 0 {
		return fmt.Errorf("internal error: revision %x written after %x", revKey, f.last)
	}
	if err := f.keys.Put(revKey, raw); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	f.last = revKey
	if f.pending += int64(len(revKey) + len(raw)); f.pending >= DefaultTxBytes {
		if err := f.tx.Commit(); err != nil {
			f.tx = nil
			return fmt.Errorf("restore: %w", err)
		}
		failpointTxCommitted()
		return f.begin()
	}
	return nil
}

// SetCompacted marks revision rev compacted: scheduledCompactRev is set to
// it (or to the revision bump's marker, if that is higher) and etcd
// finishes the compaction when the member first starts.
func (f *FusedRestore) SetCompacted(rev int64) error {
	f.compactAt = rev
	if f.w == nil {
		return nil // written at Commit
	}
	// A rewritten database holds no history: both markers at rev, as
	// transform writes them, then the bump as etcdutl's restore adds it.
	if err := f.w.SetCompacted(rev); err != nil {
		return err
	}
	bump := f.members[0].cfg.RevisionBump
	if bump == 0 {
		return nil
	}
	marker := RevisionKey(Revision{Main: rev - 1 + int64(bump)})
	if err := f.w.Put(marker, []byte{}); err != nil {
		return err
	}
	return f.w.PutBucket(MetaBucket, schema.ScheduledCompactKeyName, bytes.Clone(marker))
}

// Alarms are the input's active alarms; AlarmsCleared says whether the
// members start without them.
func (f *FusedRestore) Alarms() ([]Alarm, bool) {
	return f.alarms, len(f.alarms) > 0 && !f.members[0].cfg.KeepAlarms
}

// Commit finishes the first member's database (membership, bump, markers),
// fsyncs and checks it, gives every other member a copy, and renames every
// data dir into place.
func (f *FusedRestore) Commit(ctx context.Context) error {
	if f.done {
		return errors.New("restore already finished")
	}
	ok := false
	defer func() {
		if !ok {
			f.Abort()
		}
	}()
	first := &f.members[0]
	if err := f.finishFirst(); err != nil {
		return err
	}
	if err := renameSynced(first.dbNew(), first.db()); err != nil {
		return err
	}
	for i := 1; i < len(f.members); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := f.copyMember(first, &f.members[i]); err != nil {
			return err
		}
	}
	// A member in place but not durable (ErrNotDurable) stays: the others
	// are published too, and that error returned.
	var notDurable error
	for i := range f.members {
		m := &f.members[i]
		if i > 0 {
			fsutil.FailpointBetweenMembers()
		}
		err := publish(m.cfg, m.tmpData, m.tmpWAL)
		if errors.Is(err, fsutil.ErrNotDurable) {
			notDurable, err = err, nil
		}
		if err != nil {
			return err
		}
		m.published = true
	}
	ok = true
	f.done = true
	f.cleanup()
	return notDurable
}

// finishFirst finishes, checks and fsyncs the first member's database.
func (f *FusedRestore) finishFirst() error {
	if f.w != nil {
		_, err := f.w.Commit() // checked by BeforePublish, fsynced
		f.w = nil
		return err
	}
	if err := f.open(); err != nil {
		return err
	}
	if err := f.finishDB(); err != nil {
		return err
	}
	// The check reads the database from the page cache while it is written
	// back to disk.
	first := &f.members[0]
	synced := make(chan error, 1)
	go func() { synced <- syncFile(first.dbNew()) }()
	var verr error
	if f.BeforePublish != nil {
		verr = f.BeforePublish(first.dbNew())
	}
	if err := <-synced; err != nil {
		return err
	}
	return verr
}

// finishDB writes the membership buckets, the alarms, the bump and the
// markers into the open copy, commits and closes it.
func (f *FusedRestore) finishDB() error {
	first := &f.members[0]
	var err error
	if f.membership, err = readBuckets(first.db()); err != nil {
		return err
	}
	if err := replaceBuckets(f.tx, f.membership, first.cfg.KeepAlarms); err != nil {
		return err
	}
	if err := f.markCompacted(first.cfg.RevisionBump); err != nil {
		return err
	}
	if err := f.tx.Commit(); err != nil {
		f.tx = nil
		return fmt.Errorf("restore: %w", err)
	}
	f.tx = nil
	err = f.db.Close()
	f.db = nil
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// markCompacted writes the revision bump's marker (an empty value at the
// last revision plus bump, as etcdutl's restore writes it) and sets
// scheduledCompactRev; finishedCompactRev stays the input's, so that etcd
// compacts the older revisions at boot.
func (f *FusedRestore) markCompacted(bump uint64) error {
	k, _ := f.keys.Cursor().Last()
	var latest Revision
	if k != nil {
		var err error
		if latest, _, err = ParseRevisionKey(k); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	at := max(f.compactAt, latest.Main+1)
	if bump > 0 {
		marker := Revision{Main: max(latest.Main, f.compactAt-1) + int64(bump)}
		if err := f.keys.Put(RevisionKey(marker), []byte{}); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		at = marker.Main
	}
	meta := f.tx.Bucket(MetaBucket)
	if meta == nil {
		return fmt.Errorf("restore: the copy has no %q bucket", MetaBucket)
	}
	return meta.Put(schema.ScheduledCompactKeyName, RevisionKey(Revision{Main: at}))
}

// bucketData is the content of a database's buckets other than key.
type bucketData map[string][][2][]byte

// readBuckets reads every bucket but key of a (small) database.
func readBuckets(path string) (bucketData, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer db.Close()
	out := bucketData{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if bytes.Equal(name, KeyBucket) {
				return nil
			}
			kvs := [][2][]byte{}
			err := b.ForEach(func(k, v []byte) error {
				kvs = append(kvs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
				return nil
			})
			out[string(name)] = kvs
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("restore: reading %s: %w", path, err)
	}
	return out, nil
}

// replaceBuckets makes every bucket but key hold what data holds; without
// keepAlarms the alarm bucket is left empty.
func replaceBuckets(tx *bolt.Tx, data bucketData, keepAlarms bool) error {
	names := make([]string, 0, len(data))
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if tx.Bucket([]byte(n)) != nil {
			if err := tx.DeleteBucket([]byte(n)); err != nil {
				return fmt.Errorf("restore: bucket %q: %w", n, err)
			}
		}
		b, err := tx.CreateBucket([]byte(n))
		if err != nil {
			return fmt.Errorf("restore: bucket %q: %w", n, err)
		}
		if n == string(AlarmBucket) && !keepAlarms {
			continue
		}
		for _, kv := range data[n] {
			if err := b.Put(kv[0], kv[1]); err != nil {
				return fmt.Errorf("restore: bucket %q: %w", n, err)
			}
		}
	}
	return nil
}

// copyMember gives member m a copy of the first member's finished
// database. etcd's restore wrote the same membership for both (checked
// here); if it did not, the copy gets m's own.
func (f *FusedRestore) copyMember(first, m *memberDirs) error {
	mine, err := readBuckets(m.db())
	if err != nil {
		return err
	}
	if err := copyFile(first.db(), m.dbNew()); err != nil {
		return err
	}
	if !sameBuckets(mine, f.membership) {
		if err := applyBuckets(m.dbNew(), mine, m.cfg.KeepAlarms); err != nil {
			return err
		}
	}
	if err := syncFile(m.dbNew()); err != nil {
		return err
	}
	return renameSynced(m.dbNew(), m.db())
}

// renameSynced renames a file over another (inside a temporary data
// dir, fsynced whole before it is published) and syncs their directory.
func renameSynced(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return fsutil.SyncDir(filepath.Dir(to))
}

func sameBuckets(a, b bucketData) bool {
	if len(a) != len(b) {
		return false
	}
	for n, kvs := range a {
		other, ok := b[n]
		if !ok || len(other) != len(kvs) {
			return false
		}
		for i := range kvs {
			if !bytes.Equal(kvs[i][0], other[i][0]) || !bytes.Equal(kvs[i][1], other[i][1]) {
				return false
			}
		}
	}
	return true
}

// applyBuckets replaces every bucket but key of the database at path.
func applyBuckets(path string, data bucketData, keepAlarms bool) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return replaceBuckets(tx, data, keepAlarms) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("restore: copying %s: %w", src, err)
	}
	return out.Close()
}

func syncFile(path string) error {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fsutil.FailpointBeforeFsync()
	if err := fh.Sync(); err != nil {
		fh.Close()
		return fmt.Errorf("restore: %w", err)
	}
	fsutil.FailpointAfterFsync()
	return fh.Close()
}

// Abort removes everything the restore wrote. Safe to call more than once.
func (f *FusedRestore) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.cancel != nil {
		f.cancel()
	}
	if f.copyDone != nil {
		<-f.copyDone // the copy has stopped writing
		f.copyDone = nil
	}
	if f.tx != nil {
		f.tx.Rollback()
		f.tx = nil
	}
	if f.db != nil {
		f.db.Close()
		f.db = nil
	}
	if f.w != nil {
		f.w.Abort()
		f.w = nil
	}
	if f.src.Copied {
		os.Remove(f.src.copyTo) // gone already if it was taken
	}
	for _, m := range f.members {
		for _, d := range []string{m.tmpData, m.tmpWAL} {
			if d != "" {
				os.RemoveAll(d)
			}
		}
		if m.published {
			os.RemoveAll(m.cfg.DataDir)
			if m.cfg.WALDir != "" {
				os.RemoveAll(m.cfg.WALDir)
			}
		}
	}
	f.cleanup()
}

func (f *FusedRestore) cleanup() {
	if f.tinyDir != "" {
		os.RemoveAll(f.tinyDir)
		f.tinyDir = ""
	}
}

// Members are the restored members' data dirs, in order.
func (f *FusedRestore) Members() []RestoreConfig {
	out := make([]RestoreConfig, len(f.members))
	for i, m := range f.members {
		out[i] = m.cfg
	}
	return out
}
