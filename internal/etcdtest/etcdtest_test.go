package etcdtest_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

// source starts a server with a little history (an update and a delete) and saves its snapshot.
func source(t *testing.T) (srv *etcdtest.Server, snapPath string) {
	t.Helper()
	ctx := t.Context()
	srv = etcdtest.StartT(t)
	for i := range 5 {
		if _, err := srv.Put(ctx, fmt.Sprintf("/registry/things/k%d", i), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Put(ctx, "/registry/things/k1", []byte("v1-updated")); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Delete(ctx, "/registry/things/k2"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Delete(ctx, "/registry/things/missing"); err == nil {
		t.Fatal("deleting a missing key: want an error")
	}
	snapPath = filepath.Join(t.TempDir(), "snap.db")
	if err := srv.SaveSnapshot(ctx, snapPath); err != nil {
		t.Fatal(err)
	}
	return srv, snapPath
}

func TestStartPutDeleteSnapshot(t *testing.T) {
	ctx := t.Context()
	srv, snapPath := source(t)

	if !strings.HasPrefix(srv.Endpoint(), "http://127.0.0.1:") || !strings.HasPrefix(srv.PeerURL(), "http://127.0.0.1:") {
		t.Errorf("endpoint %s, peer %s: want 127.0.0.1 only", srv.Endpoint(), srv.PeerURL())
	}
	kvs, err := srv.LiveKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, string(kv.Key))
	}
	want := "/registry/things/k0 /registry/things/k1 /registry/things/k3 /registry/things/k4"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("live keys = %s, want %s", got, want)
	}
	if kvs[1].Version != 2 || string(kvs[1].Value) != "v1-updated" {
		t.Errorf("k1 = %q version %d, want v1-updated version 2", kvs[1].Value, kvs[1].Version)
	}
	rev, err := srv.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev != 8 { // a new store starts at 1; 5 puts, 1 update, 1 delete
		t.Errorf("revision = %d, want 8", rev)
	}

	b, err := os.ReadFile(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%512 != sha256.Size {
		t.Fatalf("snapshot size %d %% 512 = %d, want %d", len(b), len(b)%512, sha256.Size)
	}
	db, trailer := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if sum := sha256.Sum256(db); !bytes.Equal(sum[:], trailer) {
		t.Errorf("trailer %x is not the sha256 of the db %x", trailer, sum)
	}
	if _, err := os.Stat(snapPath + ".part"); !os.IsNotExist(err) {
		t.Errorf("%s.part left behind (err %v)", snapPath, err)
	}
}

func TestRestoreSingleMember(t *testing.T) {
	ctx := t.Context()
	srv, snapPath := source(t)
	want, err := srv.LiveKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Restore exactly as `etcdutl snapshot restore` does, then start the member on the restored peer URL.
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	dataDir := filepath.Join(t.TempDir(), "restored")
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        snapPath,
		Name:                "restored",
		OutputDataDir:       dataDir,
		PeerURLs:            []string{peerURL},
		InitialCluster:      "restored=" + peerURL,
		InitialClusterToken: "restore-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	restored := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{
		DataDir:        dataDir,
		Name:           "restored",
		PeerURL:        peerURL,
		InitialCluster: "restored=" + peerURL,
	})
	got, err := restored.LiveKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertSameKVs(t, got, want)

	srcRev, err := srv.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := restored.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev != srcRev {
		t.Errorf("restored revision = %d, want the source's %d", rev, srcRev)
	}
}

func TestRestoredConfigValidate(t *testing.T) {
	dir := t.TempDir()
	walDir := filepath.Join(dir, "member", "wal")
	if err := os.MkdirAll(walDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ok := etcdtest.RestoredConfig{DataDir: dir, Name: "a", PeerURL: "http://127.0.0.1:2380", InitialCluster: "a=http://127.0.0.1:2380"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mutate := range map[string]func(*etcdtest.RestoredConfig){
		"no name":          func(c *etcdtest.RestoredConfig) { c.Name = "" },
		"no wal":           func(c *etcdtest.RestoredConfig) { c.DataDir = t.TempDir() },
		"other host":       func(c *etcdtest.RestoredConfig) { c.PeerURL = "http://0.0.0.0:2380" },
		"no port":          func(c *etcdtest.RestoredConfig) { c.PeerURL = "http://127.0.0.1" },
		"cluster mismatch": func(c *etcdtest.RestoredConfig) { c.InitialCluster = "a=http://127.0.0.1:2390" },
	} {
		c := ok
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestRestoreThreeMembersFormOneCluster(t *testing.T) {
	ctx := t.Context()
	srv, snapPath := source(t)
	want, err := srv.LiveKVs(ctx)
	if err != nil {
		t.Fatal(err)
	}

	members := etcdtest.RestoreT(t, etcdtest.RestoreConfig{SnapshotPath: snapPath, Members: 3})
	servers := etcdtest.StartRestoredClusterT(t, members)

	list, err := servers[0].Client().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Fatalf("member list has %d members, want 3: %v", len(list.Members), list.Members)
	}
	peers := map[string]string{}
	for _, m := range list.Members {
		if len(m.PeerURLs) != 1 {
			t.Fatalf("member %s has peer URLs %v", m.Name, m.PeerURLs)
		}
		peers[m.Name] = m.PeerURLs[0]
	}
	for _, m := range members {
		if peers[m.Name] != m.PeerURL {
			t.Errorf("member %s: peer URL %q, want %q", m.Name, peers[m.Name], m.PeerURL)
		}
	}

	for _, s := range servers {
		got, err := s.LiveKVs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		assertSameKVs(t, got, want)
	}

	if _, err := servers[0].Put(ctx, "/written/on/m0", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	resp, err := servers[2].Client().Get(ctx, "/written/on/m0") // linearizable: goes through the leader
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "hello" {
		t.Errorf("read on m2 = %v, want the value written on m0", resp.Kvs)
	}
}

// assertSameKVs compares key, value and MVCC metadata of two key lists.
func assertSameKVs(t *testing.T, got, want []*mvccpb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("key %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

// TestFreePortBelowEphemeralRange checks that the ports handed out lie below the kernel's
// ephemeral range, from which outgoing connections take their source ports: a member restarted on
// its old peer URL must not find it taken by a dial to that URL (CI saw "bind: address already in
// use" restarting a peer whose port was in the range).
func TestFreePortBelowEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		t.Fatal(err)
	}
	if first < 21000 {
		t.Fatalf("ephemeral range %d-%d leaves no room below it; FreePort falls back to it", first, last)
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 20000 || p >= first {
			t.Fatalf("FreePort = %d, want a port in [20000, %d)", p, first)
		}
		seen[p] = true
	}
	if len(seen) < 40 {
		t.Errorf("FreePort gave %d distinct ports in 50 calls, want them spread", len(seen))
	}
}
