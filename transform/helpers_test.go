package transform_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/state"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
)

// samplePath is the committed sample snapshot (a kubeadm-style cluster
// written by a real etcd, with history, tombstones and a compaction).
const samplePath = "../testdata/sample.db"

var gvkConfigMap = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// assertNoOutput checks that a failed or dry run left nothing in dir (the
// output's directory, which held nothing before the run).
func assertNoOutput(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("%s exists after a run that must not write it (stat: %v)", out, err)
	}
	if names := testfile.Names(t, filepath.Dir(out)); len(names) != 0 {
		t.Errorf("output dir holds %v, want it empty (no temporary files)", names)
	}
}

// liveKV is one live key as stored, copied out of the snapshot's mapping.
type liveKV struct {
	Rev    snapshot.Revision
	RevKey []byte
	Raw    []byte
	KV     snapshot.KV
}

// readState is a snapshot read back through snapshot.Open/Index/Live.
type readState struct {
	Meta  snapshot.Meta
	Index *snapshot.Index
	Live  map[string]liveKV
	Order []string // keys in the order Live yielded them (revision order)
}

func readLive(t *testing.T, path string) *readState {
	t.Helper()
	s, err := snapshot.Open(path, snapshot.OpenOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer s.Close()
	ix, err := s.Index(context.Background(), nil)
	if err != nil {
		t.Fatalf("index %s: %v", path, err)
	}
	st := &readState{Meta: s.Meta, Index: ix, Live: map[string]liveKV{}}
	err = s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		kv := e.KV
		kv.Key = bytes.Clone(kv.Key)
		kv.Value = bytes.Clone(kv.Value)
		k := string(kv.Key)
		if _, dup := st.Live[k]; dup {
			return fmt.Errorf("key %s yielded twice", k)
		}
		st.Live[k] = liveKV{Rev: e.Rev, RevKey: bytes.Clone(e.RevKey), Raw: bytes.Clone(e.Raw), KV: kv}
		st.Order = append(st.Order, k)
		return nil
	})
	if err != nil {
		t.Fatalf("live %s: %v", path, err)
	}
	return st
}

// restoreAndStart restores path into a new data dir with snapshot.Restore
// (peer URL on a free 127.0.0.1 port) and starts it with a real etcd.
func restoreAndStart(t *testing.T, path string, bump bool) *etcdtest.Server {
	t.Helper()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", port)
	dataDir := filepath.Join(t.TempDir(), "m1.etcd")
	cfg := snapshot.RestoreConfig{SnapshotPath: path, Name: "m1", DataDir: dataDir, PeerURLs: []string{peer}}
	if bump {
		cfg.RevisionBump, cfg.MarkCompacted = snapshot.DefaultRevisionBump, true
	}
	if err := snapshot.Restore(context.Background(), cfg); err != nil {
		t.Fatalf("restore %s: %v", path, err)
	}
	return etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "m1", PeerURL: peer})
}

func liveKVs(t *testing.T, srv *etcdtest.Server) []*mvccpb.KeyValue {
	t.Helper()
	kvs, err := srv.LiveKVs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return kvs
}

// compareEtcdWithState checks that a running etcd serves exactly the live
// keys of st, with the same values and revision metadata.
func compareEtcdWithState(t *testing.T, what string, kvs []*mvccpb.KeyValue, st *readState) {
	t.Helper()
	if len(kvs) != len(st.Live) {
		t.Errorf("%s: etcd serves %d keys, the snapshot has %d live keys", what, len(kvs), len(st.Live))
	}
	for _, kv := range kvs {
		want, ok := st.Live[string(kv.Key)]
		if !ok {
			t.Errorf("%s: etcd serves %s, which is not live in the snapshot", what, kv.Key)
			continue
		}
		w := want.KV
		if !bytes.Equal(kv.Value, w.Value) || kv.CreateRevision != w.CreateRevision || kv.ModRevision != w.ModRevision ||
			kv.Version != w.Version || kv.Lease != w.Lease {
			t.Errorf("%s: %s: etcd has create=%d mod=%d version=%d lease=%d (%d bytes), snapshot has create=%d mod=%d version=%d lease=%d (%d bytes)",
				what, kv.Key, kv.CreateRevision, kv.ModRevision, kv.Version, kv.Lease, len(kv.Value),
				w.CreateRevision, w.ModRevision, w.Version, w.Lease, len(w.Value))
		}
	}
}

// configMap returns a typed ConfigMap.
func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Data:       data,
	}
}

// encodeCM encodes a ConfigMap exactly as the apiserver stores it.
func encodeCM(t *testing.T, cm *corev1.ConfigMap) []byte {
	t.Helper()
	b, err := codec.New().EncodeProtobuf(cm, gvkConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// encodeCMWithUnknownField encodes a ConfigMap as a newer apiserver would if
// ConfigMap had a field (number 9999) this build's k8s.io/api does not know.
func encodeCMWithUnknownField(t *testing.T, cm *corev1.ConfigMap) []byte {
	t.Helper()
	raw, err := cm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	raw = protowire.AppendTag(raw, 9999, protowire.BytesType)
	raw = protowire.AppendBytes(raw, []byte("from-a-newer-cluster"))
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Raw: raw}
	b, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), b...)
}

func decodeCM(t *testing.T, value []byte) *corev1.ConfigMap {
	t.Helper()
	o, err := codec.New().Decode(value)
	if err != nil {
		t.Fatal(err)
	}
	cm, ok := o.Obj.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("decoded %T, want a ConfigMap", o.Obj)
	}
	return cm
}

// newCMObject is a ConfigMap to create through a rule.
func newCMObject(ns, name string, data map[string]string) *codec.Object {
	return &codec.Object{Encoding: codec.Protobuf, GVK: gvkConfigMap, Obj: configMap(ns, name, data)}
}

// put is one write to the etcd an input snapshot is made from.
type put struct {
	key    string
	value  []byte
	lease  bool // attach a lease
	delete bool // delete key instead
}

// buildSnapshot writes ops into a fresh real etcd, saves a snapshot (as
// etcdctl snapshot save does) and returns its path and the etcd's live
// state at that point.
func buildSnapshot(t *testing.T, ops []put) (string, []*mvccpb.KeyValue) {
	t.Helper()
	ctx := context.Background()
	srv := etcdtest.StartT(t)
	var leaseID clientv3.LeaseID
	for _, op := range ops {
		switch {
		case op.delete:
			if _, err := srv.Delete(ctx, op.key); err != nil {
				t.Fatal(err)
			}
		case op.lease:
			if leaseID == 0 {
				l, err := srv.Client().Grant(ctx, 3600)
				if err != nil {
					t.Fatal(err)
				}
				leaseID = l.ID
			}
			if _, err := srv.Client().Put(ctx, op.key, string(op.value), clientv3.WithLease(leaseID)); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := srv.Put(ctx, op.key, op.value); err != nil {
				t.Fatal(err)
			}
		}
	}
	live := liveKVs(t, srv)
	path := filepath.Join(t.TempDir(), "in.db")
	if err := srv.SaveSnapshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	return path, live
}

// testRule is a small transform.Rule whose decision is a function.
type testRule struct {
	name     string
	prefixes []string
	apply    func(ctx context.Context, o *state.Object) (transform.Result, error)
	seen     []string
}

func (r *testRule) Name() string       { return r.name }
func (r *testRule) Prefixes() []string { return r.prefixes }
func (r *testRule) Apply(ctx context.Context, o *state.Object) (transform.Result, error) {
	r.seen = append(r.seen, o.Key)
	if r.apply == nil {
		return transform.Result{}, nil
	}
	return r.apply(ctx, o)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
