package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// A fused restore writes a migration straight into the members' data dirs
// instead of into a new snapshot file that a restore then copies. For each
// member it:
//
//  1. runs etcd's own restore (etcdutl's snapshot package) on a small
//     snapshot holding every bucket of the input but `key`: that writes the
//     member's WAL and raft snapshot, and the membership, consistent index
//     and term into the small database, exactly as a restore of the whole
//     file would;
//  2. writes the first member's database anew through a Writer (Raw: no
//     trailer), as transform writes a snapshot: the membership buckets of
//     the small restored database, every live entry the caller puts, the
//     compaction markers, and the revision bump as etcdutl writes it. The
//     input's history (old revisions, tombstones) never reaches the disk;
//  3. checks that database (BeforePublish) while it is fsynced, gives every
//     other member a copy (the membership is the same bytes, checked; only
//     the WAL names the member), and renames the data dirs into place only
//     when all are done.

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
	// Timing, if set, receives the wall time of the writer's steps and of
	// Commit's (StepMembers, StepPublish). Set it before Rewrite.
	Timing Timing
	// Writer is how the first member's `key` bucket is written
	// (WriterConfig.Writer). Set it before Rewrite.
	Writer WriterKind

	tiny    string // the small snapshot of every bucket but key
	tinyDir string
	alarms  []Alarm
	done    bool
	// membership is every bucket but key of the first member's database
	// as etcd's restore wrote it.
	membership bucketData
	// w, after Rewrite, writes the first member's database.
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

// StartFused validates the members' configurations and runs etcd's restore
// for each (member metadata, WAL). src stays open until Commit or Abort.
// Every member must agree on the revision bump and alarms.
func StartFused(ctx context.Context, src *Snapshot, members []RestoreConfig) (_ *FusedRestore, err error) {
	if len(members) == 0 {
		return nil, errors.New("no member to restore")
	}
	f := &FusedRestore{src: src}
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
		if i > 0 && (cfg.InitialClusterToken != f.members[0].cfg.InitialClusterToken || cfg.InitialCluster != f.members[0].cfg.InitialCluster) {
			return nil, fmt.Errorf("member %s: every member of one restore needs the same initial cluster and token", cfg.Name)
		}
		if err := cfg.checkIdentity(src); err != nil {
			return nil, err
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
	return f, nil
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

// Rewrite starts the first member's database: every live entry goes
// through the returned Writer, in order, then the changes through Put,
// SetCompacted and Commit. Call it once the whole input has been read.
func (f *FusedRestore) Rewrite(sizeHint int64) (*Writer, error) {
	first := &f.members[0]
	var err error
	if f.membership, err = readBuckets(first.db()); err != nil {
		return nil, err
	}
	w, err := Create(WriterConfig{Path: first.dbNew(), Raw: true, SizeHint: sizeHint, BeforePublish: f.BeforePublish, Timing: f.Timing, Writer: f.Writer})
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

// Put appends one `key` bucket entry (a revision key); keys must come in
// increasing order, above every input revision. Rewrite first.
func (f *FusedRestore) Put(revKey, raw []byte) error {
	if f.w == nil {
		return errors.New("internal error: Put before Rewrite")
	}
	return f.w.Put(revKey, raw)
}

// SetCompacted marks revision rev compacted: the database holds no
// history, so both markers are set at rev, as transform writes them, then
// the revision bump's marker and scheduledCompactRev as etcdutl's restore
// adds them.
func (f *FusedRestore) SetCompacted(rev int64) error {
	if f.w == nil {
		return errors.New("internal error: SetCompacted before Rewrite")
	}
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
	if err := f.Timing.step(StepPublish, func() error { return renameSynced(first.dbNew(), first.db()) }); err != nil {
		return err
	}
	if err := f.Timing.step(StepMembers, func() error { return f.copyMembers(ctx) }); err != nil {
		return err
	}
	perr := f.Timing.step(StepPublish, f.publishAll)
	if perr != nil && !errors.Is(perr, fsutil.ErrNotDurable) {
		return perr
	}
	ok = true
	f.done = true
	f.cleanup()
	return perr
}

// copyMembers gives the second and later members their copies.
func (f *FusedRestore) copyMembers(ctx context.Context) error {
	for i := 1; i < len(f.members); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := f.copyMember(&f.members[0], &f.members[i]); err != nil {
			return err
		}
	}
	return nil
}

// publishAll renames every member's data dir into place. A member in
// place but not durable (ErrNotDurable) stays: the others are published
// too, and that error returned.
func (f *FusedRestore) publishAll() error {
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
	return notDurable
}

// finishFirst finishes, checks and fsyncs the first member's database.
func (f *FusedRestore) finishFirst() error {
	if f.w == nil {
		return errors.New("internal error: Commit before Rewrite")
	}
	_, err := f.w.Commit() // checked by BeforePublish, fsynced
	f.w = nil
	return err
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
	if err := fsutil.Copy(first.db(), m.dbNew(), fsutil.CopyOptions{FileMode: 0o600}); err != nil {
		return fmt.Errorf("restore: %w", err)
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
	if f.w != nil {
		f.w.Abort()
		f.w = nil
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
