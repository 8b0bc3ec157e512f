package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/snapshot"
)

// makeSnapshot writes keys with history into a real etcd and saves a
// snapshot: a1..a9 put, a3 updated twice, a5 deleted, b re-created after a
// delete (a new generation), a key with a lease.
func makeSnapshot(t *testing.T) (path string, live []*mvccpb.KeyValue) {
	t.Helper()
	ctx := context.Background()
	srv := etcdtest.StartT(t)
	for i := 1; i <= 9; i++ {
		mustPut(t, srv, fmt.Sprintf("/registry/a%d", i), fmt.Sprintf("value-%d", i))
	}
	mustPut(t, srv, "/registry/a3", "v2")
	mustPut(t, srv, "/registry/a3", "v3")
	if _, err := srv.Delete(ctx, "/registry/a5"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, srv, "/registry/b", "gen1")
	if _, err := srv.Delete(ctx, "/registry/b"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, srv, "/registry/b", "gen2")
	lease, err := srv.Client().Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().Put(ctx, "/registry/masterleases/127.0.0.1", "leased", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	mustPut(t, srv, "/registry/tomb", "x")
	if _, err := srv.Delete(ctx, "/registry/tomb"); err != nil {
		t.Fatal(err)
	}
	live, err = srv.LiveKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "in.db")
	if err := srv.SaveSnapshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	return path, live
}

func mustPut(t *testing.T, s *etcdtest.Server, k, v string) {
	t.Helper()
	if _, err := s.Put(context.Background(), k, []byte(v)); err != nil {
		t.Fatal(err)
	}
}

func TestIndexAndLiveMatchEtcd(t *testing.T) {
	path, live := makeSnapshot(t)
	before := testfile.Sum(t, path)
	s, err := snapshot.Open(path, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.HasTrailer || len(s.SHA256) != 64 {
		t.Fatalf("trailer not verified: %+v", s)
	}
	ix, err := s.Index(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.LiveKeys != len(live) {
		t.Fatalf("LiveKeys = %d, etcd has %d", ix.LiveKeys, len(live))
	}
	if ix.Tombstones != 3 {
		t.Errorf("Tombstones = %d, want 3 (a5, b, tomb)", ix.Tombstones)
	}
	got := map[string]snapshot.KV{}
	var lastRev snapshot.Revision
	err = s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		if !e.Rev.GreaterThan(lastRev) {
			t.Errorf("revision %v after %v: not in revision order", e.Rev, lastRev)
		}
		lastRev = e.Rev
		if e.KV.ModRevision != e.Rev.Main {
			t.Errorf("%s: ModRevision %d != bucket revision %d", e.KV.Key, e.KV.ModRevision, e.Rev.Main)
		}
		got[string(e.KV.Key)] = e.KV
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range live {
		g, ok := got[string(kv.Key)]
		if !ok {
			t.Errorf("live key %s missing", kv.Key)
			continue
		}
		if !bytes.Equal(g.Value, kv.Value) || g.ModRevision != kv.ModRevision || g.CreateRevision != kv.CreateRevision ||
			g.Version != kv.Version || g.Lease != kv.Lease {
			t.Errorf("%s: got %+v, etcd has %v", kv.Key, g, kv)
		}
	}
	if len(got) != len(live) {
		t.Errorf("Live yielded %d keys, etcd has %d", len(got), len(live))
	}
	if testfile.Sum(t, path) != before {
		t.Fatal("input changed")
	}
}

// writeIdentity writes the live state of in to out with a Writer of kind.
func writeIdentity(t *testing.T, kind snapshot.WriterKind, in, out string) *snapshot.Result {
	t.Helper()
	s, ix := testfile.OpenIndexed(t, in)
	w, err := snapshot.Create(snapshot.WriterConfig{Path: out, TxBytes: 64, Writer: kind}) // tiny: many transactions
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.CopyBuckets(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error { return w.Put(e.RevKey, e.Raw) }); err != nil {
		t.Fatal(err)
	}
	if err := w.SetCompacted(ix.CurrentRevision + 1); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWriteRestoreReadBack: what each writer writes passes etcdutl's
// status, restores, and a real etcd serves it.
func TestWriteRestoreReadBack(t *testing.T) {
	in, live := makeSnapshot(t)
	for _, kind := range writerKinds() {
		t.Run(string(kind), func(t *testing.T) { writeRestoreReadBack(t, kind, in, live) })
	}
}

func writeRestoreReadBack(t *testing.T, kind snapshot.WriterKind, in string, live []*mvccpb.KeyValue) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	res := writeIdentity(t, kind, in, out)
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size()%512 != 32 || st.Size() != res.Size {
		t.Fatalf("output size %d (result %d): not 32 more than a multiple of 512", st.Size(), res.Size)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("output mode %v, want 0600 (it holds Secrets)", st.Mode().Perm())
	}
	// etcd's own validator: bbolt check + every KeyValue decodes.
	status, err := etcdsnapshot.NewV3(zap.NewNop()).Status(out)
	if err != nil {
		t.Fatalf("etcdutl status: %v", err)
	}
	if status.TotalKey != len(live) {
		t.Errorf("etcdutl status: %d keys, want %d", status.TotalKey, len(live))
	}
	// No temp files left.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("output dir holds %d entries, want only out.db", len(entries))
	}

	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", port)
	dataDir := filepath.Join(dir, "m1.etcd")
	err = snapshot.Restore(context.Background(), snapshot.RestoreConfig{
		SnapshotPath: out, Name: "m1", DataDir: dataDir, PeerURLs: []string{peer},
		RevisionBump: snapshot.DefaultRevisionBump, MarkCompacted: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "m1", PeerURL: peer})
	got, err := srv.LiveKVs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(live) {
		t.Fatalf("restored etcd has %d keys, source had %d", len(got), len(live))
	}
	for i := range live {
		a, b := live[i], got[i]
		if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || a.ModRevision != b.ModRevision || a.Version != b.Version || a.CreateRevision != b.CreateRevision {
			t.Errorf("key %d: source %v, restored %v", i, a, b)
		}
	}
	rev, err := srv.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rev < snapshot.DefaultRevisionBump {
		t.Errorf("restored revision %d: bump not applied", rev)
	}
	// Old revisions are gone: reading below the compaction fails.
	if _, err := srv.Client().Get(context.Background(), "/registry/a3", clientv3.WithRev(live[0].ModRevision)); err == nil {
		t.Error("read at an old revision succeeded; history should be compacted")
	}
}

func TestWriterRefusesExistingOutputAndCleansUp(t *testing.T) {
	in, _ := makeSnapshot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	if err := os.WriteFile(out, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := snapshot.Create(snapshot.WriterConfig{Path: out})
	if !errors.Is(err, fsutil.ErrExists) {
		t.Fatalf("Create over an existing file: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Fatal("existing output was modified")
	}
	// Force replaces it.
	res := func() *snapshot.Result {
		s, _ := snapshot.Open(in, snapshot.OpenOptions{})
		defer s.Close()
		w, err := snapshot.Create(snapshot.WriterConfig{Path: out, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		tmp := w.TempPath()
		if err := w.CopyBuckets(s); err != nil {
			t.Fatal(err)
		}
		w.Abort()
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Errorf("Abort left %s behind", tmp)
		}
		return nil
	}()
	_ = res
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Fatal("aborted write touched the existing output")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries after Abort, want 1", len(entries))
	}
}

func TestOpenRefusesBadInput(t *testing.T) {
	good, _ := makeSnapshot(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	db := data[:len(data)-32]
	flip := bytes.Clone(data)
	flip[len(db)/2] ^= 0xff
	wrongTrailer := bytes.Clone(data)
	wrongTrailer[len(data)-1] ^= 1
	rnd := make([]byte, 64*1024+32)
	rand.New(rand.NewSource(1)).Read(rnd)
	cases := []struct {
		name string
		data []byte
		skip bool
		want string
	}{
		{"empty", nil, false, "is empty"},
		{"random bytes", rnd, false, "not an etcd snapshot"},
		{"text", []byte(strings.Repeat("apiVersion: v1\nkind: ConfigMap\n", 40)), false, "text file"},
		{"truncated in the middle", data[:len(data)/2], false, "no sha256 trailer"},
		{"truncated to a 512 boundary + 32", data[:8192+32], false, "sha256 trailer does not match"},
		{"truncated raw db, hash check skipped", db[:len(db)-4096], true, "truncated"},
		{"flipped byte", flip, false, "sha256 trailer does not match"},
		{"wrong trailer", wrongTrailer, false, "sha256 trailer does not match"},
		{"raw db without trailer", db, false, "raw member/snap/db that needs SkipHashCheck"},
		{"header only", data[:100], false, "too small"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.db")
			if err := os.WriteFile(p, tc.data, 0o400); err != nil {
				t.Fatal(err)
			}
			before := testfile.Sum(t, p)
			s, err := snapshot.Open(p, snapshot.OpenOptions{AllowNoTrailer: tc.skip})
			if err == nil {
				s.Close()
				t.Fatal("opened a bad snapshot")
			}
			if !errors.Is(err, snapshot.ErrInvalidInput) {
				t.Errorf("error %v does not wrap ErrInvalidInput", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q: want it to name the file and say %q", err, tc.want)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error is not one line: %q", err)
			}
			if testfile.Sum(t, p) != before {
				t.Error("input changed")
			}
		})
	}
	// A raw db with the hash check skipped opens.
	p := filepath.Join(t.TempDir(), "raw.db")
	if err := os.WriteFile(p, db, 0o400); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(p, snapshot.OpenOptions{AllowNoTrailer: true})
	if err != nil {
		t.Fatalf("raw db with --skip-hash-check: %v", err)
	}
	s.Close()
}

// TestOpenHashModes: what each HashMode does with a good trailer, a wrong
// one and none, with and without AllowNoTrailer.
func TestOpenHashModes(t *testing.T) {
	good, err := os.ReadFile("../testdata/sample.db")
	if err != nil {
		t.Fatal(err)
	}
	wrong := bytes.Clone(good)
	wrong[len(wrong)-1] ^= 1 // the bbolt part is intact
	raw := good[:len(good)-32]
	write := func(t *testing.T, data []byte) string {
		p := filepath.Join(t.TempDir(), "in.db")
		if err := os.WriteFile(p, data, 0o400); err != nil {
			t.Fatal(err)
		}
		return p
	}
	trailer := func(data []byte) string { return fmt.Sprintf("%x", data[len(data)-32:]) }
	for _, tc := range []struct {
		name  string
		data  []byte
		opts  snapshot.OpenOptions
		open  bool // Open succeeds
		wait  bool // then WaitHash succeeds
		sha   string
		notes string // in the error, when one is expected
	}{
		{"verify, good", good, snapshot.OpenOptions{}, true, true, trailer(good), ""},
		{"verify, wrong trailer", wrong, snapshot.OpenOptions{}, false, false, "", "does not match"},
		{"background, good", good, snapshot.OpenOptions{Hash: snapshot.HashInBackground}, true, true, trailer(good), ""},
		{"background, wrong trailer", wrong, snapshot.OpenOptions{Hash: snapshot.HashInBackground}, true, false, "", "does not match"},
		{"trailer only, good", good, snapshot.OpenOptions{Hash: snapshot.HashTrailerOnly}, true, true, trailer(good), ""},
		{"trailer only, wrong trailer taken as is", wrong, snapshot.OpenOptions{Hash: snapshot.HashTrailerOnly}, true, true, trailer(wrong), ""},
		{"no trailer, not allowed", raw, snapshot.OpenOptions{Hash: snapshot.HashTrailerOnly}, false, false, "", "no sha256 trailer"},
		{"no trailer, allowed", raw, snapshot.OpenOptions{AllowNoTrailer: true}, true, true, "", ""},
		{"no trailer, allowed, background", raw, snapshot.OpenOptions{AllowNoTrailer: true, Hash: snapshot.HashInBackground}, true, true, "", ""},
		{"trailer there, allowed to be absent: still checked", wrong, snapshot.OpenOptions{AllowNoTrailer: true}, false, false, "", "does not match"},
		{"unknown mode", good, snapshot.OpenOptions{Hash: snapshot.HashTrailerOnly + 1}, false, false, "", "unknown hash mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := snapshot.Open(write(t, tc.data), tc.opts)
			if err == nil {
				defer s.Close()
				err = s.WaitHash()
				if err == nil && !tc.wait {
					t.Fatal("WaitHash accepted a wrong trailer")
				}
				if err != nil && tc.open && tc.wait {
					t.Fatalf("WaitHash: %v", err)
				}
			} else if tc.open {
				t.Fatalf("Open: %v", err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tc.notes) || (tc.notes != "unknown hash mode" && !errors.Is(err, snapshot.ErrInvalidInput)) {
					t.Fatalf("error %q: want an invalid input saying %q", err, tc.notes)
				}
				return
			}
			if s.SHA256 != tc.sha || s.HasTrailer != (tc.sha != "") {
				t.Fatalf("SHA256 %q, HasTrailer %v; want %q", s.SHA256, s.HasTrailer, tc.sha)
			}
		})
	}
}

func TestParseKVMatchesProtobuf(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := 0; i < 500; i++ {
		kv := &mvccpb.KeyValue{Key: []byte(fmt.Sprintf("/k/%d", r.Int())), CreateRevision: r.Int63n(1 << 40),
			ModRevision: r.Int63n(1 << 40), Version: r.Int63n(1000), Lease: r.Int63()}
		if r.Intn(3) > 0 {
			kv.Value = make([]byte, r.Intn(300))
			r.Read(kv.Value)
		}
		b, err := proto.Marshal(kv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := snapshot.ParseKV(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Key, kv.Key) || !bytes.Equal(got.Value, kv.Value) || got.CreateRevision != kv.CreateRevision ||
			got.ModRevision != kv.ModRevision || got.Version != kv.Version || got.Lease != kv.Lease {
			t.Fatalf("ParseKV(%v) = %+v", kv, got)
		}
		again, err := got.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("Marshal is not the inverse of ParseKV for %v", kv)
		}
	}
	for _, bad := range [][]byte{{0x0a, 0x05, 'a'}, {0x10}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {0x08, 0x01}} {
		if _, err := snapshot.ParseKV(bad); err == nil {
			t.Errorf("ParseKV(%x) accepted garbage", bad)
		}
	}
}

func TestParseRevisionKey(t *testing.T) {
	rev := snapshot.Revision{Main: 42, Sub: 3}
	k := snapshot.RevisionKey(rev)
	got, tomb, err := snapshot.ParseRevisionKey(k)
	if err != nil || tomb || got != rev {
		t.Fatalf("ParseRevisionKey(%x) = %v %v %v", k, got, tomb, err)
	}
	got, tomb, err = snapshot.ParseRevisionKey(append(bytes.Clone(k), 't'))
	if err != nil || !tomb || got != rev {
		t.Fatalf("tombstone: %v %v %v", got, tomb, err)
	}
	for _, bad := range [][]byte{nil, k[:16], append(bytes.Clone(k), 'x'), bytes.Repeat([]byte{0xff}, 17), snapshot.RevisionKey(snapshot.Revision{})} {
		if _, _, err := snapshot.ParseRevisionKey(bad); err == nil {
			t.Errorf("ParseRevisionKey(%x) accepted a malformed key", bad)
		}
	}
}

// TestRestoreRefusesCorruptInput: the pre-check defers hashing to etcd's
// restore, which must still refuse a flipped byte with this package's error
// (etcd's own says it only in its text: Restore hashes the file again to
// tell) and leave no data dir behind.
func TestRestoreRefusesCorruptInput(t *testing.T) {
	good, _ := makeSnapshot(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// A byte of a stored value: the structure stays readable, so only the
	// hash can tell (a byte at random may break a page, which the pre-check
	// reports before etcd runs).
	at := bytes.Index(data, []byte("value-4"))
	if at < 0 {
		t.Fatal("value-4 not found in the snapshot")
	}
	data[at+len("value-")] ^= 1
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, data, 0o400); err != nil {
		t.Fatal(err)
	}
	// SkipHashCheck accepts a file without a trailer; one that has a
	// trailer is checked all the same.
	for _, skip := range []bool{false, true} {
		dataDir := filepath.Join(dir, "m1.etcd")
		err = snapshot.Restore(context.Background(), snapshot.RestoreConfig{SnapshotPath: bad, Name: "m1", DataDir: dataDir,
			PeerURLs: []string{"http://127.0.0.1:2380"}, RevisionBump: 1000, MarkCompacted: true, SkipHashCheck: skip})
		if !errors.Is(err, snapshot.ErrInvalidInput) || !strings.Contains(err.Error(), "sha256 trailer does not match its contents") {
			t.Fatalf("restore of a corrupt snapshot (skip %v): %v", skip, err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("restore (skip %v) left %v behind", skip, names)
		}
	}
}

// TestRestoreKeepsAFullDataDir: Restore validates a config that has not
// passed Validate, and only such a one: a data dir filled after Validate is
// not seen by a second validation, but is still never replaced, and nothing
// is left behind.
func TestRestoreKeepsAFullDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := snapshot.RestoreConfig{SnapshotPath: "../testdata/sample.db", Name: "m1", DataDir: filepath.Join(dir, "m1.etcd"),
		PeerURLs: []string{"http://127.0.0.1:2380"}}
	unvalidated := cfg
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	precious := filepath.Join(cfg.DataDir, "precious")
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(precious, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Restore(context.Background(), unvalidated); !errors.Is(err, fsutil.ErrExists) {
		t.Fatalf("restore of an unvalidated config into a full data dir: %v, want Validate's refusal", err)
	}
	err := snapshot.Restore(context.Background(), cfg)
	if err == nil {
		t.Fatal("restore replaced a data dir that is not empty")
	}
	// Refused by the publishing rename (never over a full directory), not
	// by Validate.
	if strings.Contains(err.Error(), "restore only into") {
		t.Errorf("a validated config was validated again: %v", err)
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "keep" {
		t.Fatalf("the data dir's file is gone or changed: %q %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("restore left %d entries in %s, want only the data dir", len(entries), dir)
	}
}

// TestWriterBuckets: CreateBuckets and PutBucket write etcd's other buckets
// for a writer that has no snapshot to copy them from, across transactions.
func TestWriterBuckets(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.db")
	w, err := snapshot.Create(snapshot.WriterConfig{Path: out, TxBytes: 64}) // tiny: many transactions
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.CreateBuckets([]byte("alarm"), snapshot.MetaBucket, []byte("alarm")); err != nil {
		t.Fatal(err)
	}
	if err := w.PutBucket(snapshot.KeyBucket, []byte("k"), []byte("v")); err == nil {
		t.Error("PutBucket wrote into the key bucket")
	}
	for i := range 20 {
		if err := w.PutBucket([]byte("lease"), []byte(fmt.Sprintf("lease-%02d", i)), bytes.Repeat([]byte{'x'}, 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutBucket(snapshot.MetaBucket, []byte("storageVersion"), []byte("3.7.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(out, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Buckets()
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.BucketInfo{{Name: "alarm"}, {Name: "key"}, {Name: "lease", Keys: 20}, {Name: "meta", Keys: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("buckets %v, want %v", got, want)
	}
	if s.Meta.StorageVersion != "3.7.0" {
		t.Errorf("meta storageVersion %q", s.Meta.StorageVersion)
	}
}
