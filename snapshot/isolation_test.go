package snapshot_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/snapshot"
)

// The keys of TestRestoredMembersStayOutOfTheOldCluster: one the snapshot holds, and two written to
// the old cluster after it (one of them put and deleted again).
const (
	keptKey   = "/registry/services/specs/prod/kept"
	labNewKey = "/registry/services/specs/prod/lab-new"
	afterKey  = "/after/snapshot"
)

// TestRestoredMembersStayOutOfTheOldCluster restores a three-member cluster onto the old members'
// names and peer URLs with the default token, and replaces the old members one at a time while the
// others still run, over plain http (nothing stops old and new peers from talking, as with a peer
// CA both trust). The old cluster was bootstrapped with etcd's default token, as kubeadm's are.
//
// With the old cluster's token a restored member gets the old member's ID and the old cluster ID:
// the old members take it for the member they know, it follows their leader and takes the old
// cluster's log on top of the restored data (what was written or deleted after the snapshot comes
// back). With a token of its own the IDs differ and etcd's peers refuse each other's messages
// ("cluster ID mismatch"), so the restored member waits alone until its own peers start.
func TestRestoredMembersStayOutOfTheOldCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()

	// The old cluster, with some data, a snapshot, and writes the snapshot does not hold.
	oldCore, oldLogs := observer.New(zapcore.WarnLevel)
	old := etcdtest.StartClusterT(t, etcdtest.ClusterConfig{Members: 3, Logger: zap.New(oldCore)})
	oldClusterID := uint64(old[0].Etcd().Server.Cluster().ID())
	oldIDs := map[uint64]string{}
	for _, s := range old {
		oldIDs[uint64(s.Etcd().Server.MemberID())] = s.Name()
	}
	if _, err := old[0].Put(ctx, keptKey, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	snapPath := filepath.Join(t.TempDir(), "old.db")
	if err := old[0].SaveSnapshot(ctx, snapPath); err != nil {
		t.Fatal(err)
	}
	if _, err := old[0].Put(ctx, labNewKey, []byte("lab")); err != nil {
		t.Fatal(err)
	}
	if _, err := old[0].Delete(ctx, labNewKey); err != nil {
		t.Fatal(err)
	}
	if _, err := old[0].Put(ctx, afterKey, []byte("written after the snapshot")); err != nil {
		t.Fatal(err)
	}

	// The restore: same names, same peer URLs, the default token, the CLI's revision bump.
	var cluster []string
	for _, s := range old {
		cluster = append(cluster, s.Name()+"="+s.PeerURL())
	}
	initialCluster := strings.Join(cluster, ",")
	dir := t.TempDir()
	members := make([]etcdtest.RestoredConfig, len(old))
	for i, s := range old {
		dataDir := filepath.Join(dir, s.Name())
		err := snapshot.Restore(ctx, snapshot.RestoreConfig{
			SnapshotPath:   snapPath,
			Name:           s.Name(),
			DataDir:        dataDir,
			PeerURLs:       []string{s.PeerURL()},
			InitialCluster: initialCluster,
			RevisionBump:   snapshot.DefaultRevisionBump,
			MarkCompacted:  true,
		})
		if err != nil {
			t.Fatalf("restore %s: %v", s.Name(), err)
		}
		members[i] = etcdtest.RestoredConfig{DataDir: dataDir, Name: s.Name(), PeerURL: s.PeerURL(), InitialCluster: initialCluster}
	}

	// The old leader is replaced first, and it goes down as a crashed member does, without handing
	// its leadership over. The two old members left then elect a leader of their own, which knows
	// nothing of how far the lost member had got, and so sends a member answering with that member's
	// ID the old log from where its log ends: the data loss, had the restored member the old IDs.
	// (A leader that knew how far the lost member had got, as after a graceful stop, would send it
	// heartbeats with a commit index beyond the restored log, and raft would panic that member:
	// here, the whole test binary.)
	first := leaderIndex(ctx, t, old)
	var rest []int
	for i := range old {
		if i != first {
			rest = append(rest, i)
		}
	}
	firstOldID := uint64(old[first].Etcd().Server.MemberID())
	if err := old[first].Crash(); err != nil {
		t.Fatal(err)
	}
	if err := etcdtest.WaitPortFree(ctx, old[first].PeerURL(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	newLead := waitForLeader(ctx, t, old[rest[0]], old[rest[1]], firstOldID)
	if _, err := old[rest[0]].Put(ctx, "/after/leader-change", []byte("x")); err != nil {
		t.Fatal(err)
	}
	oldTerm := old[rest[0]].Etcd().Server.Term()
	t.Logf("old cluster %x: leader %s (%x) stopped; %s (%x) leads at term %d",
		oldClusterID, old[first].Name(), firstOldID, oldIDs[newLead], newLead, oldTerm)

	newCore, newLogs := observer.New(zapcore.WarnLevel)
	cfg1 := members[first]
	cfg1.Logger = zap.New(newCore)
	r1 := etcdtest.LaunchRestoredT(t, cfg1)
	srv1 := r1.Etcd().Server

	// The old members keep sending to the peer URL of the member they lost. Wait until both sides
	// have refused the other's messages and a few election timeouts have passed, or until the
	// restored member took the old cluster's data.
	start := time.Now()
	for {
		mismatch := oldLogs.FilterMessageSnippet("cluster ID mismatch").Len() > 0 &&
			newLogs.FilterMessageSnippet("cluster ID mismatch").Len() > 0
		elapsed := time.Since(start)
		if hasKey(ctx, t, srv1.KV(), afterKey) || (mismatch && elapsed > 3*time.Second) || elapsed > 10*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	if id := uint64(srv1.Cluster().ID()); id == oldClusterID {
		t.Errorf("restored member %s has the old cluster ID %x", r1.Name(), id)
	}
	if id := uint64(srv1.MemberID()); oldIDs[id] != "" {
		t.Errorf("restored member %s has the ID %x of old member %s", r1.Name(), id, oldIDs[id])
	}
	if lead := srv1.Lead(); oldIDs[lead] != "" {
		t.Errorf("restored member %s follows old member %s (%x)", r1.Name(), oldIDs[lead], lead)
	}
	if term := srv1.Term(); term >= oldTerm {
		t.Errorf("restored member %s is at term %d, the old cluster's is %d", r1.Name(), term, oldTerm)
	}
	for _, k := range []string{afterKey, labNewKey} {
		if hasKey(ctx, t, srv1.KV(), k) {
			t.Errorf("restored member %s holds %s, written to the old cluster after the snapshot", r1.Name(), k)
		}
	}
	if !hasKey(ctx, t, srv1.KV(), keptKey) {
		t.Errorf("restored member %s lost %s", r1.Name(), keptKey)
	}
	if _, err := old[rest[0]].Put(ctx, "/after/restored-member-started", []byte("x")); err != nil {
		t.Errorf("old cluster after the restored member started: %v", err)
	}
	if n := oldLogs.FilterMessageSnippet("cluster ID mismatch").Len(); n == 0 {
		t.Error("the old members logged no cluster ID mismatch")
	}
	if n := newLogs.FilterMessageSnippet("request cluster ID mismatch").Len(); n == 0 {
		t.Errorf("restored member %s refused no request for a cluster ID mismatch", r1.Name())
	}
	if t.Failed() {
		return
	}

	// The rest of the replacement: the restored cluster forms, with the snapshot's data only.
	if err := etcdtest.CloseAll(old[rest[0]], old[rest[1]]); err != nil {
		t.Fatal(err)
	}
	restored := []*etcdtest.Server{r1}
	for _, i := range rest {
		if err := etcdtest.WaitPortFree(ctx, old[i].PeerURL(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		restored = append(restored, etcdtest.LaunchRestoredT(t, members[i]))
	}
	for _, s := range restored {
		if err := s.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range restored {
		if id := uint64(s.Etcd().Server.Cluster().ID()); id == oldClusterID {
			t.Errorf("restored member %s has the old cluster ID %x", s.Name(), id)
		}
		for _, k := range []string{keptKey, afterKey, labNewKey} {
			resp, err := s.Client().Get(ctx, k) // linearizable: needs the restored cluster's quorum
			if err != nil {
				t.Fatalf("get %s on restored member %s: %v", k, s.Name(), err)
			}
			if got, want := len(resp.Kvs) == 1, k == keptKey; got != want {
				t.Errorf("restored member %s: %s present %v, want %v", s.Name(), k, got, want)
			}
			if resp.Header.Revision < snapshot.DefaultRevisionBump {
				t.Errorf("restored member %s: revision %d, the bump is missing", s.Name(), resp.Header.Revision)
			}
		}
	}
	list, err := restored[0].Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
		if oldIDs[m.ID] != "" {
			t.Errorf("restored cluster lists member %s with the old ID %x", m.Name, m.ID)
		}
	}
	slices.Sort(names)
	if want := []string{old[0].Name(), old[1].Name(), old[2].Name()}; !slices.Equal(names, want) {
		t.Errorf("restored cluster members %v, want %v", names, want)
	}
}

// leaderIndex is the index of the member all of servers agree leads them.
func leaderIndex(ctx context.Context, t *testing.T, servers []*etcdtest.Server) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		lead := servers[0].Etcd().Server.Lead()
		agree := lead != 0
		for _, s := range servers {
			agree = agree && s.Etcd().Server.Lead() == lead
		}
		if agree {
			for i, s := range servers {
				if uint64(s.Etcd().Server.MemberID()) == lead {
					return i
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no leader all members agree on: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitForLeader waits until a and b agree on a leader other than gone, and returns its ID.
func waitForLeader(ctx context.Context, t *testing.T, a, b *etcdtest.Server, gone uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		lead := a.Etcd().Server.Lead()
		if lead != 0 && lead != gone && b.Etcd().Server.Lead() == lead {
			return lead
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s and %s elected no new leader: %v", a.Name(), b.Name(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hasKey reads key from a member's store directly, without the quorum a client read needs.
func hasKey(ctx context.Context, t *testing.T, kv mvcc.KV, key string) bool {
	t.Helper()
	r, err := kv.Range(ctx, []byte(key), nil, mvcc.RangeOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return len(r.KVs) > 0
}
