package transform_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/verify"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
)

// TestIdentitySample runs a transform without rules over the committed
// sample snapshot and checks the output against the input three ways: as
// read by this repository's reader, by etcdutl's status, and as served by a
// real etcd after a restore with the default revision bump.
func TestIdentitySample(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	before := testfile.Sum(t, in)
	src := readLive(t, in)
	ix := src.Index
	if ix.LiveKeys == 0 || ix.Entries == ix.LiveKeys || ix.Tombstones == 0 {
		t.Fatalf("the sample should hold history and tombstones: %+v", ix)
	}

	outDir := t.TempDir()
	out := filepath.Join(outDir, "out.db")
	rep, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	if testfile.Sum(t, in) != before {
		t.Fatal("the input was modified")
	}

	// The report.
	if rep.Copied != ix.LiveKeys {
		t.Errorf("Copied = %d, want the %d live keys", rep.Copied, ix.LiveKeys)
	}
	if want := ix.Entries - ix.LiveKeys; rep.Dropped != want {
		t.Errorf("Dropped = %d, want entries-live = %d", rep.Dropped, want)
	}
	if rep.Replaced != 0 || rep.Deleted != 0 || rep.Created != 0 || rep.NewRevision != 0 || rep.Objects.Len() != 0 {
		t.Errorf("identity reported changes: %+v", rep)
	}
	if rep.CompactRevision != ix.CurrentRevision+1 {
		t.Errorf("CompactRevision = %d, want current+1 = %d", rep.CompactRevision, ix.CurrentRevision+1)
	}
	if rep.Input.CurrentRevision != ix.CurrentRevision || rep.Input.LiveKeys != ix.LiveKeys || rep.Input.Entries != ix.Entries || rep.DryRun {
		t.Errorf("input summary %+v does not match the index %+v", rep.Input, ix)
	}

	// The file: mode, trailer, nothing else in the directory.
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("output mode %v, want 0600 (it holds Secrets)", st.Mode().Perm())
	}
	if st.Size()%512 != 32 {
		t.Errorf("output size %d is not 32 more than a multiple of 512 (no sha256 trailer)", st.Size())
	}
	if names := testfile.Names(t, outDir); !slices.Equal(names, []string{"out.db"}) {
		t.Errorf("output dir holds %v, want only out.db (temporary files left?)", names)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data[:len(data)-32])
	if rep.Output == nil || rep.Output.Path != out || rep.Output.Size != st.Size() || rep.Output.SHA256 != hex.EncodeToString(sum[:]) ||
		!bytes.Equal(data[len(data)-32:], sum[:]) {
		t.Errorf("output result %+v does not describe the file (size %d, sha256 %x, trailer %x)", rep.Output, st.Size(), sum, data[len(data)-32:])
	}

	// etcd's own validator.
	status, err := etcdsnapshot.NewV3(zap.NewNop()).Status(out)
	if err != nil {
		t.Fatalf("etcdutl snapshot status: %v", err)
	}
	if status.TotalKey != ix.LiveKeys {
		t.Errorf("etcdutl status: %d keys, want %d", status.TotalKey, ix.LiveKeys)
	}

	// Read back: the same live keys, byte for byte, at the same revisions;
	// no old revision or tombstone; marked compacted above the input.
	got := readLive(t, out)
	if got.Index.Tombstones != 0 || got.Index.Entries != got.Index.LiveKeys {
		t.Errorf("output index %+v: want only live entries", got.Index)
	}
	for _, k := range sortedKeys(src.Live) {
		w, g := src.Live[k], got.Live[k]
		if g.RevKey == nil {
			t.Errorf("%s missing from the output", k)
			continue
		}
		if !bytes.Equal(w.RevKey, g.RevKey) || !bytes.Equal(w.Raw, g.Raw) {
			t.Errorf("%s: output entry %x=%d bytes differs from the input %x=%d bytes", k, g.RevKey, len(g.Raw), w.RevKey, len(w.Raw))
		}
	}
	if len(got.Live) != len(src.Live) {
		t.Errorf("output has %d live keys, input %d", len(got.Live), len(src.Live))
	}
	if got.Meta.ScheduledCompact != ix.CurrentRevision+1 || got.Meta.FinishedCompact != ix.CurrentRevision+1 {
		t.Errorf("compaction markers scheduled=%d finished=%d, want both %d", got.Meta.ScheduledCompact, got.Meta.FinishedCompact, ix.CurrentRevision+1)
	}
	if got.Meta.ConsistentIndex != src.Meta.ConsistentIndex || got.Meta.Term != src.Meta.Term {
		t.Errorf("meta not carried over: input %+v, output %+v", src.Meta, got.Meta)
	}

	// Secret material that only lives in old revisions of the input is gone
	// from the output file (DESIGN.md decision 2), while every live value is kept.
	inData, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	historyOnly := 0
	for _, s := range sample.SecretValues() {
		live := false
		for _, kv := range src.Live {
			if bytes.Contains(kv.Raw, []byte(s)) {
				live = true
			}
		}
		switch {
		case live && !bytes.Contains(data, []byte(s)):
			t.Errorf("live secret value %.12q... missing from the output", s)
		case !live && bytes.Contains(inData, []byte(s)):
			historyOnly++
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("value %.12q... lives only in old revisions of the input but is in the output file", s)
			}
		}
	}
	if historyOnly == 0 {
		t.Error("the sample should hold a secret value in old revisions only; the leak check checked nothing")
	}

	// A real etcd: the restored input (no bump) and the restored output
	// (default bump + mark compacted) serve the same live state.
	srcSrv := restoreAndStart(t, in, false)
	outSrv := restoreAndStart(t, out, true)
	srcKVs := liveKVs(t, srcSrv)
	compareEtcdWithState(t, "restored input", srcKVs, src)
	outKVs := liveKVs(t, outSrv)
	compareEtcdWithState(t, "restored output", outKVs, src)
	if len(srcKVs) != len(outKVs) {
		t.Errorf("restored input serves %d keys, restored output %d", len(srcKVs), len(outKVs))
	}
	rev, err := outSrv.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rev < ix.CurrentRevision+snapshot.DefaultRevisionBump {
		t.Errorf("restored output at revision %d, want at least %d (bump not applied)", rev, ix.CurrentRevision+snapshot.DefaultRevisionBump)
	}
}

// TestIdentityBoundedTransactions: a tiny transaction size (a commit after
// every put) gives the same live state as the default.
func TestIdentityBoundedTransactions(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	out := filepath.Join(t.TempDir(), "out.db")
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, TxBytes: 1}); err != nil {
		t.Fatal(err)
	}
	src, got := readLive(t, in), readLive(t, out)
	if len(got.Live) != len(src.Live) {
		t.Fatalf("%d live keys, want %d", len(got.Live), len(src.Live))
	}
	for k, w := range src.Live {
		if g := got.Live[k]; !bytes.Equal(g.RevKey, w.RevKey) || !bytes.Equal(g.Raw, w.Raw) {
			t.Errorf("%s differs", k)
		}
	}
	if _, err := etcdsnapshot.NewV3(zap.NewNop()).Status(out); err != nil {
		t.Fatalf("etcdutl snapshot status: %v", err)
	}
}

// TestIdentityOverBumpedRestore: a snapshot of a cluster that was restored
// with a revision bump holds etcdutl's empty-key marker far above the live
// keys. The output must not go back below that revision (clients hold
// resourceVersions up there), and a restored member continues above it.
func TestIdentityOverBumpedRestore(t *testing.T) {
	ctx := context.Background()
	in := testfile.Copy(t, samplePath, t.TempDir())
	bumped := restoreAndStart(t, in, true)
	if _, err := bumped.Put(ctx, "/registry/configmaps/demo/after-restore", encodeCM(t, configMap("demo", "after-restore", nil))); err != nil {
		t.Fatal(err)
	}
	srcRev, err := bumped.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "bumped.db")
	if err := bumped.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	src := readLive(t, snap)
	if src.Index.CurrentRevision != srcRev {
		t.Fatalf("index current revision %d, etcd said %d", src.Index.CurrentRevision, srcRev)
	}

	out := filepath.Join(t.TempDir(), "out.db")
	rep, err := transform.Run(ctx, transform.Config{Input: snap, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	ix := src.Index
	// Dropped counts old revisions, tombstones and etcdutl's bump markers.
	if rep.Copied != ix.LiveKeys || rep.Copied+rep.Dropped != ix.Entries || ix.Markers != 1 {
		t.Errorf("report copied=%d dropped=%d; index entries=%d live=%d markers=%d: entries unaccounted for",
			rep.Copied, rep.Dropped, ix.Entries, ix.LiveKeys, ix.Markers)
	}
	if rep.CompactRevision != srcRev+1 {
		t.Errorf("CompactRevision %d, want %d", rep.CompactRevision, srcRev+1)
	}
	srv := restoreAndStart(t, out, false)
	compareEtcdWithState(t, "restored output", liveKVs(t, srv), src)
	rev, err := srv.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev <= srcRev {
		t.Errorf("restored output at revision %d, not above the input's %d: clients' resourceVersions would go backwards", rev, srcRev)
	}
	next, err := srv.Put(ctx, "/registry/configmaps/demo/next", encodeCM(t, configMap("demo", "next", nil)))
	if err != nil {
		t.Fatal(err)
	}
	if next <= srcRev+1 {
		t.Errorf("a write after restore got revision %d, want above %d", next, srcRev+1)
	}
}

// Keys of the revision bookkeeping input.
const (
	kChange    = "/registry/configmaps/demo/cm-change"
	kKeep      = "/registry/configmaps/demo/cm-keep"
	kDelete    = "/registry/configmaps/demo/cm-delete"
	kRenameOld = "/registry/configmaps/demo/cm-rename-old"
	kRenameNew = "/registry/configmaps/demo/cm-rename-new"
	kCreated   = "/registry/configmaps/demo/cm-created"
	kGone      = "/registry/configmaps/demo/cm-gone" // deleted in the input, created again by a rule
	kRaw       = "/registry/unclaimed/raw"
	kLast      = "/registry/zzz/last"
)

// bookkeepingInput writes a small history into a real etcd: kChange twice
// (with a lease), kGone put and deleted, keys outside any rule's prefix.
func bookkeepingInput(t *testing.T) string {
	t.Helper()
	path, _ := buildSnapshot(t, []put{
		{key: kChange, value: encodeCM(t, configMap("demo", "cm-change", map[string]string{"k": "v1"})), lease: true},
		{key: kKeep, value: encodeCM(t, configMap("demo", "cm-keep", map[string]string{"k": "keep"}))},
		{key: kDelete, value: encodeCM(t, configMap("demo", "cm-delete", map[string]string{"k": "delete"}))},
		{key: kRenameOld, value: encodeCM(t, configMap("demo", "cm-rename-old", map[string]string{"k": "rename"}))},
		{key: kRaw, value: []byte("raw bytes \x00\xff, not a kubernetes value")},
		{key: kChange, value: encodeCM(t, configMap("demo", "cm-change", map[string]string{"k": "v2"})), lease: true},
		{key: kGone, value: encodeCM(t, configMap("demo", "cm-gone", map[string]string{"k": "gone"}))},
		{key: kGone, delete: true},
		{key: kLast, value: []byte("last")},
	})
	return path
}

// bookkeepingRules returns fresh rules that replace, delete, create and
// rename, each in the way a real rule would.
func bookkeepingRules() []transform.Rule {
	change := &testRule{name: "change", prefixes: []string{"/registry/configmaps/"},
		apply: func(_ context.Context, o *state.Object) (transform.Result, error) {
			if o.Key != kChange {
				return transform.Result{Action: transform.Keep}, nil
			}
			cm := o.Value.Obj.(*corev1.ConfigMap)
			old := cm.Data["k"]
			cm.Data["k"] = "changed"
			return transform.Result{Action: transform.Replace, Changes: []transform.Change{{Field: "data.k", Old: old, New: "changed"}}}, nil
		}}
	del := &testRule{name: "delete", prefixes: []string{kDelete},
		apply: func(context.Context, *state.Object) (transform.Result, error) {
			return transform.Result{Action: transform.Delete}, nil
		}}
	create := &testRule{name: "create", prefixes: []string{kKeep},
		apply: func(context.Context, *state.Object) (transform.Result, error) {
			return transform.Result{Action: transform.Keep, Create: []transform.NewObject{
				{Key: kCreated, Value: newCMObject("demo", "cm-created", map[string]string{"k": "created"})},
				{Key: kGone, Value: newCMObject("demo", "cm-gone", map[string]string{"k": "again"})},
			}}, nil
		}}
	rename := &testRule{name: "rename", prefixes: []string{kRenameOld},
		apply: func(_ context.Context, o *state.Object) (transform.Result, error) {
			cm := o.Value.Obj.(*corev1.ConfigMap).DeepCopy()
			cm.Name = "cm-rename-new"
			return transform.Result{Action: transform.Delete, Create: []transform.NewObject{
				{Key: kRenameNew, Value: &codec.Object{Encoding: codec.Protobuf, GVK: gvkConfigMap, Obj: cm}},
			}}, nil
		}}
	return []transform.Rule{change, del, create, rename}
}

func TestRevisionBookkeeping(t *testing.T) {
	ctx := context.Background()
	in := bookkeepingInput(t)
	src := readLive(t, in)
	cur := src.Index.CurrentRevision
	outDir := t.TempDir()
	out := filepath.Join(outDir, "out.db")
	rules := bookkeepingRules()
	rep, err := transform.Run(ctx, transform.Config{Input: in, Output: out, Rules: rules, TxBytes: 64})
	if err != nil {
		t.Fatal(err)
	}

	// Report.
	if rep.Replaced != 1 || rep.Deleted != 2 || rep.Created != 3 || rep.Copied != 3 {
		t.Errorf("report replaced=%d deleted=%d created=%d copied=%d, want 1, 2, 3, 3", rep.Replaced, rep.Deleted, rep.Created, rep.Copied)
	}
	if rep.Dropped != src.Index.Entries-src.Index.LiveKeys {
		t.Errorf("Dropped = %d, want %d", rep.Dropped, src.Index.Entries-src.Index.LiveKeys)
	}
	if rep.NewRevision != cur+1 || rep.CompactRevision != cur+2 {
		t.Errorf("NewRevision %d, CompactRevision %d; want %d and %d", rep.NewRevision, rep.CompactRevision, cur+1, cur+2)
	}
	wantRules := []transform.RuleReport{
		{Name: "change", Seen: 4, Changed: 1},
		{Name: "delete", Seen: 1, Deleted: 1},
		{Name: "create", Seen: 1, Created: 2},
		{Name: "rename", Seen: 1, Deleted: 1, Created: 1},
	}
	for i, w := range wantRules {
		if i >= len(rep.Rules) || !reflect.DeepEqual(*rep.Rules[i], w) {
			t.Errorf("rule report %d = %+v, want %+v", i, rep.Rules[i], w)
		}
	}
	actions := map[string]string{}
	for o := range rep.Objects.All() {
		actions[o.Key] = o.Action
	}
	wantActions := map[string]string{kChange: "replace", kDelete: "delete", kRenameOld: "delete", kCreated: "create", kGone: "create", kRenameNew: "create"}
	if !reflect.DeepEqual(actions, wantActions) {
		t.Errorf("report objects %v, want %v", actions, wantActions)
	}

	// Read back through the snapshot reader.
	got := readLive(t, out)
	wantKeys := []string{kChange, kCreated, kGone, kKeep, kRenameNew, kRaw, kLast}
	slices.Sort(wantKeys)
	if keys := sortedKeys(got.Live); !slices.Equal(keys, wantKeys) {
		t.Fatalf("output live keys %v, want %v", keys, wantKeys)
	}
	if got.Index.Tombstones != 0 || got.Index.Entries != got.Index.LiveKeys {
		t.Errorf("output index %+v: deleted keys must leave no tombstone and no old revision", got.Index)
	}
	for _, k := range []string{kDelete, kRenameOld} {
		if _, live := got.Index.Lookup([]byte(k)); live {
			t.Errorf("%s is still live", k)
		}
	}

	old := src.Live[kChange]
	ch := got.Live[kChange]
	if ch.Rev.Main != cur+1 || ch.KV.ModRevision != cur+1 {
		t.Errorf("replaced: revision %v, ModRevision %d; want main revision %d", ch.Rev, ch.KV.ModRevision, cur+1)
	}
	if ch.KV.Version != old.KV.Version+1 || ch.KV.CreateRevision != old.KV.CreateRevision || ch.KV.Lease != old.KV.Lease || old.KV.Lease == 0 {
		t.Errorf("replaced: version %d create %d lease %d; input had version %d create %d lease %d (want version+1, the rest kept)",
			ch.KV.Version, ch.KV.CreateRevision, ch.KV.Lease, old.KV.Version, old.KV.CreateRevision, old.KV.Lease)
	}
	if cm := decodeCM(t, ch.KV.Value); cm.Data["k"] != "changed" || cm.UID != "uid-cm-change" || cm.Name != "cm-change" {
		t.Errorf("replaced object decodes to %+v", cm)
	}
	if err := codec.New().CheckRoundTrip(ch.KV.Value); err != nil {
		t.Errorf("replaced value is not canonical protobuf: %v", err)
	}

	newRevs := map[snapshot.Revision]string{}
	for _, k := range []string{kChange, kCreated, kGone, kRenameNew} {
		newRevs[got.Live[k].Rev] = k
	}
	for i := range int64(4) {
		if _, ok := newRevs[snapshot.Revision{Main: cur + 1, Sub: i}]; !ok {
			t.Errorf("no change written at %d_%d; new revisions: %v", cur+1, i, newRevs)
		}
	}
	for _, k := range []string{kCreated, kGone, kRenameNew} {
		c := got.Live[k]
		if c.KV.CreateRevision != cur+1 || c.KV.ModRevision != cur+1 || c.KV.Version != 1 || c.KV.Lease != 0 {
			t.Errorf("created %s: create %d mod %d version %d lease %d; want %d, %d, 1, 0", k, c.KV.CreateRevision, c.KV.ModRevision, c.KV.Version, c.KV.Lease, cur+1, cur+1)
		}
	}
	if cm := decodeCM(t, got.Live[kRenameNew].KV.Value); cm.Name != "cm-rename-new" || cm.Data["k"] != "rename" || cm.UID != "uid-cm-rename-old" {
		t.Errorf("renamed object decodes to %+v", cm)
	}
	if cm := decodeCM(t, got.Live[kGone].KV.Value); cm.Data["k"] != "again" {
		t.Errorf("re-created object decodes to %+v", cm)
	}
	for _, k := range []string{kKeep, kRaw, kLast} {
		w, g := src.Live[k], got.Live[k]
		if !bytes.Equal(w.RevKey, g.RevKey) || !bytes.Equal(w.Raw, g.Raw) {
			t.Errorf("unchanged %s moved or changed: %x -> %x", k, w.RevKey, g.RevKey)
		}
	}
	if got.Meta.ScheduledCompact != cur+2 || got.Meta.FinishedCompact != cur+2 {
		t.Errorf("compaction markers scheduled=%d finished=%d, want both %d", got.Meta.ScheduledCompact, got.Meta.FinishedCompact, cur+2)
	}
	if _, err := etcdsnapshot.NewV3(zap.NewNop()).Status(out); err != nil {
		t.Errorf("etcdutl snapshot status: %v", err)
	}
	if names := testfile.Names(t, outDir); !slices.Equal(names, []string{"out.db"}) {
		t.Errorf("output dir holds %v", names)
	}

	// Read back through a real etcd restored WITHOUT a bump, so that only the
	// transform's own compaction markers protect the dropped history.
	srv := restoreAndStart(t, out, false)
	cli := srv.Client()
	compareEtcdWithState(t, "restored output", liveKVs(t, srv), got)
	rev, err := srv.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev != cur+2 {
		t.Errorf("restored revision %d, want %d (the compaction revision)", rev, cur+2)
	}
	for _, at := range []int64{cur, cur + 1} {
		if _, err := cli.Get(ctx, kKeep, clientv3.WithRev(at)); !errors.Is(err, rpctypes.ErrCompacted) {
			t.Errorf("Get at revision %d: %v, want %v", at, err, rpctypes.ErrCompacted)
		}
	}
	if r, err := cli.Get(ctx, kChange, clientv3.WithRev(cur+2)); err != nil || len(r.Kvs) != 1 || r.Kvs[0].ModRevision != cur+1 {
		t.Errorf("Get at the compaction revision: %v, %v", r, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wresp, ok := <-cli.Watch(wctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(cur))
	if !ok {
		t.Fatal("watch channel closed without a response")
	}
	if !errors.Is(wresp.Err(), rpctypes.ErrCompacted) || wresp.CompactRevision != cur+2 {
		t.Errorf("watch from the input revision %d: err %v, compact revision %d, %d events; want compacted at %d",
			cur, wresp.Err(), wresp.CompactRevision, len(wresp.Events), cur+2)
	}
	if r, err := cli.Get(ctx, kRenameOld, clientv3.WithPrefix()); err != nil || len(r.Kvs) != 0 {
		t.Errorf("renamed-away key: %v, %v", r, err)
	}
	next, err := srv.Put(ctx, "/registry/configmaps/demo/next", encodeCM(t, configMap("demo", "next", nil)))
	if err != nil {
		t.Fatal(err)
	}
	if next != cur+3 {
		t.Errorf("first write after restore at revision %d, want %d", next, cur+3)
	}
}

// TestDryRunWritesNothing: the same rules in a dry run report the same
// counts and changes, and nothing appears at Output.
func TestDryRunWritesNothing(t *testing.T) {
	in := bookkeepingInput(t)
	before := testfile.Sum(t, in)
	real, err := transform.Run(context.Background(), transform.Config{Input: in, Output: filepath.Join(t.TempDir(), "real.db"), Rules: bookkeepingRules()})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "dry.db")
	dry, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, DryRun: true, Rules: bookkeepingRules()})
	if err != nil {
		t.Fatal(err)
	}
	assertNoOutput(t, out)
	if !dry.DryRun || dry.Output != nil {
		t.Errorf("dry run report: DryRun=%v Output=%+v", dry.DryRun, dry.Output)
	}
	real.DryRun, real.Output = true, nil
	real.Timing, dry.Timing = nil, nil // wall times differ from run to run
	realObjs, err := real.Objects.Slice()
	if err != nil {
		t.Fatal(err)
	}
	dryObjs, err := dry.Objects.Slice()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(realObjs, dryObjs) {
		t.Errorf("dry run objects differ from the real run's:\n dry  %+v\n real %+v", dryObjs, realObjs)
	}
	real.Objects, dry.Objects = nil, nil // where they spill differs
	if !reflect.DeepEqual(real, dry) {
		t.Errorf("dry run report differs from the real run:\n dry  %+v\n real %+v", dry, real)
	}
	if dry.Replaced != 1 || dry.Created != 3 || dry.Deleted != 2 {
		t.Errorf("dry run counts %+v", dry)
	}
	// Without an output path at all.
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, DryRun: true, Rules: bookkeepingRules()}); err != nil {
		t.Errorf("dry run without Output: %v", err)
	}
	if testfile.Sum(t, in) != before {
		t.Error("input modified")
	}
}

// TestCreatingALiveKeyIsRefused: a created key that is live in the input
// and not deleted by a rule would silently overwrite an object.
func TestCreatingALiveKeyIsRefused(t *testing.T) {
	in := bookkeepingInput(t)
	for _, target := range []string{kChange, kRaw} { // claimed, and outside every prefix
		t.Run(filepath.Base(target), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.db")
			r := &testRule{name: "clobber", prefixes: []string{kKeep},
				apply: func(context.Context, *state.Object) (transform.Result, error) {
					return transform.Result{Create: []transform.NewObject{{Key: target, Value: newCMObject("demo", "x", nil)}}}, nil
				}}
			_, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{r}})
			if !errors.Is(err, transform.ErrRefused) {
				t.Fatalf("Run = %v, want ErrRefused", err)
			}
			if !strings.Contains(err.Error(), target) {
				t.Errorf("error does not name the key: %v", err)
			}
			assertNoOutput(t, out)
		})
	}
	t.Run("deleted then created is allowed", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out.db")
		r := &testRule{name: "recreate", prefixes: []string{kDelete},
			apply: func(context.Context, *state.Object) (transform.Result, error) {
				return transform.Result{Action: transform.Delete, Create: []transform.NewObject{{Key: kDelete, Value: newCMObject("demo", "cm-delete", map[string]string{"k": "new"})}}}, nil
			}}
		if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{r}}); err != nil {
			t.Fatal(err)
		}
		src, got := readLive(t, in), readLive(t, out)
		cur := src.Index.CurrentRevision
		kv := got.Live[kDelete].KV
		if kv.CreateRevision != cur+1 || kv.ModRevision != cur+1 || kv.Version != 1 {
			t.Errorf("re-created key: %+v, want a new generation at %d", kv, cur+1)
		}
	})
	t.Run("created twice", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out.db")
		mk := func(name string) transform.Rule {
			return &testRule{name: name, prefixes: []string{kKeep},
				apply: func(context.Context, *state.Object) (transform.Result, error) {
					return transform.Result{Create: []transform.NewObject{{Key: kCreated, Value: newCMObject("demo", "cm-created", nil)}}}, nil
				}}
		}
		_, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{mk("a"), mk("b")}})
		if err == nil || !strings.Contains(err.Error(), kCreated) {
			t.Fatalf("Run = %v, want an error naming %s", err, kCreated)
		}
		assertNoOutput(t, out)
	})
}

func TestRuleGivenTwiceIsRefused(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	out := filepath.Join(t.TempDir(), "out.db")
	a := &testRule{name: "same", prefixes: []string{"/registry/configmaps/"}}
	b := &testRule{name: "same", prefixes: []string{"/registry/secrets/"}}
	_, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{a, b}})
	if err == nil || !strings.Contains(err.Error(), `"same"`) {
		t.Fatalf("Run = %v, want an error naming the rule", err)
	}
	if len(a.seen)+len(b.seen) != 0 {
		t.Error("rules were applied before the configuration was refused")
	}
	assertNoOutput(t, out)
}

// TestOutputRefusals: the input itself, and an existing file without Force.
func TestOutputRefusals(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	before := testfile.Sum(t, in)
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: in, Force: true}); !errors.Is(err, transform.ErrRefused) {
		t.Errorf("output = input: %v, want ErrRefused", err)
	}
	if testfile.Sum(t, in) != before {
		t.Fatal("input modified")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	if err := os.WriteFile(out, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out}); !errors.Is(err, fsutil.ErrExists) {
		t.Errorf("existing output: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "precious" || len(testfile.Names(t, dir)) != 1 {
		t.Fatal("existing output touched, or temporary files left")
	}
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Force: true}); err != nil {
		t.Fatalf("Force: %v", err)
	}
	if got := readLive(t, out); got.Index.LiveKeys != readLive(t, in).Index.LiveKeys {
		t.Error("forced output is not the transform's")
	}
}

// TestRoundTripRefusal: an object stored by a newer Kubernetes (a protobuf
// field this build does not know) may be copied but never edited.
func TestRoundTripRefusal(t *testing.T) {
	const kNewer = "/registry/configmaps/demo/newer"
	newer := encodeCMWithUnknownField(t, configMap("demo", "newer", map[string]string{"k": "v"}))
	in, _ := buildSnapshot(t, []put{
		{key: kNewer, value: newer},
		{key: kKeep, value: encodeCM(t, configMap("demo", "cm-keep", map[string]string{"k": "keep"}))},
	})
	if err := codec.New().CheckRoundTrip(newer); !errors.Is(err, codec.ErrNotRoundTrip) {
		t.Fatalf("fixture: CheckRoundTrip = %v, want ErrNotRoundTrip", err)
	}

	t.Run("edit refused", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out.db")
		r := &testRule{name: "edit", prefixes: []string{"/registry/configmaps/"},
			apply: func(_ context.Context, o *state.Object) (transform.Result, error) {
				if o.Key != kNewer {
					return transform.Result{}, nil
				}
				o.Value.Obj.(*corev1.ConfigMap).Data["k"] = "edited"
				return transform.Result{Action: transform.Replace}, nil
			}}
		_, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{r}})
		if !errors.Is(err, transform.ErrRefused) || !errors.Is(err, codec.ErrNotRoundTrip) {
			t.Fatalf("Run = %v, want ErrRefused wrapping ErrNotRoundTrip", err)
		}
		if !strings.Contains(err.Error(), kNewer) {
			t.Errorf("error does not name the key: %v", err)
		}
		assertNoOutput(t, out)
	})
	t.Run("keep copies byte for byte", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out.db")
		r := &testRule{name: "look", prefixes: []string{"/registry/configmaps/"}}
		rep, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{r}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(r.seen, kNewer) || rep.Copied != 2 {
			t.Errorf("rule saw %v, copied %d", r.seen, rep.Copied)
		}
		w, g := readLive(t, in).Live[kNewer], readLive(t, out).Live[kNewer]
		if !bytes.Equal(g.Raw, w.Raw) || !bytes.Equal(g.RevKey, w.RevKey) || !bytes.Equal(g.KV.Value, newer) {
			t.Error("kept object was not copied byte for byte")
		}
	})
}

// TestUnclaimedValuesAreNeverDecoded: garbage under a key no rule claims is
// copied; the same garbage under a claimed prefix is an error naming the key.
func TestUnclaimedValuesAreNeverDecoded(t *testing.T) {
	const (
		kGarbageOut = "/registry/unclaimed/garbage"
		kGarbageIn  = "/registry/configmaps/demo/garbage"
		kCM         = "/registry/configmaps/demo/a"
	)
	garbage := []byte("\x00\x01 not a kubernetes value \xff\xfe")
	in, _ := buildSnapshot(t, []put{
		{key: kGarbageOut, value: garbage},
		{key: kGarbageIn, value: garbage},
		{key: kCM, value: encodeCM(t, configMap("demo", "a", nil))},
	})

	out := filepath.Join(t.TempDir(), "out.db")
	r := &testRule{name: "narrow", prefixes: []string{kCM}}
	rep, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{r}})
	if err != nil {
		t.Fatalf("garbage outside every rule's prefixes: %v", err)
	}
	if !slices.Equal(r.seen, []string{kCM}) || rep.Rules[0].Seen != 1 {
		t.Errorf("rule was shown %v (seen %d), want only %s", r.seen, rep.Rules[0].Seen, kCM)
	}
	src, got := readLive(t, in), readLive(t, out)
	for _, k := range []string{kGarbageOut, kGarbageIn} {
		if g := got.Live[k]; !bytes.Equal(g.KV.Value, garbage) || !bytes.Equal(g.Raw, src.Live[k].Raw) {
			t.Errorf("%s not copied byte for byte", k)
		}
	}

	out2 := filepath.Join(t.TempDir(), "out.db")
	wide := &testRule{name: "wide", prefixes: []string{"/registry/configmaps/"}}
	_, err = transform.Run(context.Background(), transform.Config{Input: in, Output: out2, Rules: []transform.Rule{wide}})
	if err == nil {
		t.Fatal("garbage under a claimed prefix was accepted")
	}
	if !strings.Contains(err.Error(), kGarbageIn) || !errors.Is(err, codec.ErrUndecodable) {
		t.Errorf("error %q: want it to name %s and wrap ErrUndecodable", err, kGarbageIn)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	assertNoOutput(t, out2)
}

// TestCancellation: a cancelled context fails the run and leaves nothing.
func TestCancellation(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	before := testfile.Sum(t, in)
	t.Run("before the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out := filepath.Join(t.TempDir(), "out.db")
		if _, err := transform.Run(ctx, transform.Config{Input: in, Output: out}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		assertNoOutput(t, out)
	})
	t.Run("during the stream", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := filepath.Join(t.TempDir(), "out.db")
		r := &testRule{name: "interrupt", prefixes: []string{"/registry/"},
			apply: func(context.Context, *state.Object) (transform.Result, error) {
				cancel() // as a SIGINT arriving mid-run
				return transform.Result{}, nil
			}}
		if _, err := transform.Run(ctx, transform.Config{Input: in, Output: out, Rules: []transform.Rule{r}}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		assertNoOutput(t, out)
	})
	t.Run("dry run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rep, err := transform.Run(ctx, transform.Config{Input: in, DryRun: true})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled dry run = report %v, error %v; want context.Canceled (an interrupted plan must not look complete)", rep != nil, err)
		}
	})
	if testfile.Sum(t, in) != before {
		t.Fatal("input modified")
	}
}

type ctxKey struct{}

// ctxRule records the context value it is given in Prepare and Apply.
type ctxRule struct {
	testRule
	prepared, applied []any
}

func (r *ctxRule) Prepare(ctx context.Context, _ *state.View) error {
	r.prepared = append(r.prepared, ctx.Value(ctxKey{}))
	return nil
}

func (r *ctxRule) Apply(ctx context.Context, o *state.Object) (transform.Result, error) {
	r.applied = append(r.applied, ctx.Value(ctxKey{}))
	return transform.Result{}, ctx.Err()
}

// TestApplyReceivesRunContext: Rule.Apply takes a context; it must be the
// one given to Run (cancellation, deadlines, values), as Prepare's is.
func TestApplyReceivesRunContext(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	r := &ctxRule{testRule: testRule{name: "ctx", prefixes: []string{"/registry/services/specs/"}}}
	ctx := context.WithValue(context.Background(), ctxKey{}, "run")
	if _, err := transform.Run(ctx, transform.Config{Input: in, DryRun: true, Rules: []transform.Rule{r}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.prepared, []any{"run"}) {
		t.Fatalf("Prepare got context values %v", r.prepared)
	}
	if len(r.applied) == 0 {
		t.Fatal("Apply never called")
	}
	for i, v := range r.applied {
		if v != "run" {
			t.Fatalf("Apply call %d got a context without Run's values (%v): the engine passes a fresh context, so a rule cannot see cancellation or deadlines", i, v)
		}
	}
}

// Compile-time checks that the test rules are rules.
var (
	_ transform.Rule     = (*testRule)(nil)
	_ transform.Preparer = (*ctxRule)(nil)
)

// TestBusyClusterEndsWithDeletes: on a busy cluster the newest revisions of
// a snapshot are often deletions (Events expiring with their leases), and
// after a compaction the key bucket ends below the compaction revision. An
// identity transform of such a snapshot must publish (its own check used to
// refuse markers above the last key revision), restore, be served by real
// etcd, and never go back below the source's revision.
func TestBusyClusterEndsWithDeletes(t *testing.T) {
	ctx := context.Background()
	srv := etcdtest.StartT(t)
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("/registry/events/demo/ev-%02d", i)
		if _, err := srv.Put(ctx, key, encodeCM(t, configMap("demo", fmt.Sprintf("ev-%02d", i), nil))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Put(ctx, "/registry/configmaps/demo/stays", encodeCM(t, configMap("demo", "stays", nil))); err != nil {
		t.Fatal(err)
	}
	var srcRev int64
	for i := 0; i < 20; i++ {
		rev, err := srv.Delete(ctx, fmt.Sprintf("/registry/events/demo/ev-%02d", i))
		if err != nil {
			t.Fatal(err)
		}
		srcRev = rev
	}
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compact), func(t *testing.T) {
			if compact {
				if err := srv.Compact(ctx, srcRev); err != nil {
					t.Fatal(err)
				}
			}
			snap := filepath.Join(t.TempDir(), "busy.db")
			if err := srv.SaveSnapshot(ctx, snap); err != nil {
				t.Fatal(err)
			}
			src := readLive(t, snap)
			if src.Index.LiveKeys != 1 {
				t.Fatalf("%d live keys, want 1", src.Index.LiveKeys)
			}
			out := filepath.Join(t.TempDir(), "out.db")
			verifyOut := func(ctx context.Context, path, _ string) error {
				r, err := verify.Run(ctx, verify.Config{Path: path, JustWritten: true, SkipHashCheck: true})
				if err != nil {
					return err
				}
				return r.Err()
			}
			rep, err := transform.Run(ctx, transform.Config{Input: snap, Output: out, VerifyOutput: verifyOut})
			if err != nil {
				t.Fatalf("identity transform of a snapshot ending in deletes: %v", err)
			}
			if rep.CompactRevision != srcRev+1 {
				t.Errorf("CompactRevision %d, want %d", rep.CompactRevision, srcRev+1)
			}
			r, err := verify.Run(ctx, verify.Config{Path: out, Structure: true})
			if err != nil || !r.OK {
				t.Fatalf("verify of the output: %v %+v", err, r)
			}
			restored := restoreAndStart(t, out, false)
			compareEtcdWithState(t, "restored output", liveKVs(t, restored), src)
			rev, err := restored.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rev < srcRev {
				t.Errorf("restored member at revision %d, below the source's %d", rev, srcRev)
			}
			if _, err := restored.Client().Get(ctx, "/registry/configmaps/demo/stays", clientv3.WithRev(srcRev)); err == nil {
				t.Errorf("a read at the source revision %d was served: the history must be closed", srcRev)
			}
		})
	}
}

// TestTimingReport: a transform, a dry run and a fused restore each report
// the phases they went through, none negative, adding up to no more than
// the run's wall time.
func TestTimingReport(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	check := func(ctx context.Context, path, prefix string) error {
		s, err := snapshot.Open(path, snapshot.OpenOptions{AllowNoTrailer: true})
		if err != nil {
			return err
		}
		return s.Close()
	}
	dir := t.TempDir()
	const peer = "http://127.0.0.1:2380"
	member := snapshot.RestoreConfig{Name: "m0", DataDir: filepath.Join(dir, "m0.etcd"), PeerURLs: []string{peer},
		InitialCluster: "m0=" + peer, InitialClusterToken: "t", RevisionBump: snapshot.DefaultRevisionBump, MarkCompacted: true}
	common := []string{transform.PhaseOpen, transform.PhaseIndex, transform.PhaseHashWait, transform.PhasePrepare, transform.PhaseStream}
	writes := []string{transform.PhaseGC, transform.PhaseWrite, transform.PhaseCheck, transform.PhaseFsync, transform.PhasePublish}
	cases := []struct {
		name string
		cfg  transform.Config
		want []string
	}{
		{"transform", transform.Config{Input: in, Output: filepath.Join(dir, "out.db"), VerifyOutput: check},
			append(append(slices.Clone(common), writes...), transform.PhaseTrailer)},
		{"dry run", transform.Config{Input: in, DryRun: true}, common},
		{"fused", transform.Config{Input: in, Restore: []snapshot.RestoreConfig{member}, VerifyOutput: check},
			append(append(slices.Clone(common), writes...), transform.PhaseBootstrap, transform.PhaseMembers)},
	}
	for _, c := range cases {
		rep, err := transform.Run(t.Context(), c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tm := rep.Timing
		if tm == nil || tm.TotalSeconds <= 0 {
			t.Fatalf("%s: timing %+v", c.name, tm)
		}
		var names []string
		sum := 0.0
		for _, ph := range tm.Phases {
			names = append(names, ph.Name)
			if ph.Seconds < 0 {
				t.Errorf("%s: phase %s took %v s", c.name, ph.Name, ph.Seconds)
			}
			sum += ph.Seconds
		}
		slices.Sort(names)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s: phases %v, want %v", c.name, names, want)
		}
		if sum > tm.TotalSeconds*(1+1e-9) {
			t.Errorf("%s: phases add up to %v s, more than the total %v s", c.name, sum, tm.TotalSeconds)
		}
	}
}
