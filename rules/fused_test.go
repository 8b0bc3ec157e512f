package rules_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
)

// fusedMembers are n members on free 127.0.0.1 ports, data dirs in dir.
func fusedMembers(t *testing.T, dir string, n int) ([]snapshot.RestoreConfig, []etcdtest.RestoredConfig) {
	t.Helper()
	var cluster []string
	var cfgs []snapshot.RestoreConfig
	var served []etcdtest.RestoredConfig
	for i := range n {
		port, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		name, peer := fmt.Sprintf("m%d", i), "http://127.0.0.1:"+strconv.Itoa(port)
		cluster = append(cluster, name+"="+peer)
		cfgs = append(cfgs, snapshot.RestoreConfig{Name: name, DataDir: filepath.Join(dir, name+".etcd"), PeerURLs: []string{peer},
			InitialClusterToken: "snapshift-e2e", RevisionBump: snapshot.DefaultRevisionBump, MarkCompacted: true})
		served = append(served, etcdtest.RestoredConfig{Name: name, DataDir: filepath.Join(dir, name+".etcd"), PeerURL: peer})
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(cluster, ",")
		served[i].InitialCluster = cfgs[i].InitialCluster
	}
	return cfgs, served
}

// fusedRestore runs the seed migration of in straight into the members'
// data dirs, checking the first one's database with verify as the CLI does.
func fusedRestore(t *testing.T, in string, opts rules.Options, members []snapshot.RestoreConfig, route string) (*transform.Report, error) {
	t.Helper()
	rs, _, err := rules.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	return transform.Run(context.Background(), transform.Config{Input: in, Rules: rs, Restore: members, Route: route,
		VerifyOutput: func(ctx context.Context, path, prefix string) error {
			r, err := verify.Run(ctx, verify.Config{Path: path, EtcdPrefix: prefix, ServiceCIDR: opts.ServiceCIDR,
				PodNetworkCIDR: opts.PodNetworkCIDR, JustWritten: true, SkipHashCheck: true})
			if err != nil {
				return err
			}
			return r.Err()
		}})
}

func liveByKey(t *testing.T, srv *etcdtest.Server) (map[string]*mvccpb.KeyValue, int64) {
	t.Helper()
	resp, err := srv.Client().Get(t.Context(), "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv
	}
	return out, resp.Header.Revision
}

// TestFusedRestore checks that a restore with the rules applied on the way
// (transform.Config.Restore) gives real etcd members that serve exactly
// what the two steps (transform to a file, then etcd's restore of it)
// serve, with the source revision compacted, for one member and for a
// three-member cluster, and that the input is untouched.
func TestFusedRestore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := testfile.Copy(t, samplePath, dir)
	sum := testfile.Sum(t, in)
	opts := rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String()},
		PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR.String()}}

	out := filepath.Join(dir, "migrated.db")
	twoStep, _, _, err := runRules(t, in, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, wantRev := liveByKey(t, restoreAndServe(t, out))

	for _, tc := range []struct {
		members int
		route   string
	}{{1, transform.RouteRewrite}, {3, transform.RouteRewrite}} {
		n := tc.members
		t.Run(fmt.Sprintf("%d members, %s", n, tc.route), func(t *testing.T) {
			members, served := fusedMembers(t, t.TempDir(), n)
			rep, err := fusedRestore(t, in, opts, members, tc.route)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Route != tc.route {
				t.Errorf("route %q, want %q", rep.Route, tc.route)
			}
			if testfile.Sum(t, in) != sum {
				t.Fatal("the fused restore modified its input")
			}
			if rep.Output != nil || len(rep.Restored) != n {
				t.Errorf("report: output %v, restored %v; want no file and %d members", rep.Output, rep.Restored, n)
			}
			if rep.Replaced != twoStep.Replaced || rep.Created != twoStep.Created || rep.Deleted != twoStep.Deleted {
				t.Errorf("fused %d/%d/%d replaced/created/deleted, two steps %d/%d/%d", rep.Replaced, rep.Created, rep.Deleted,
					twoStep.Replaced, twoStep.Created, twoStep.Deleted)
			}
			// etcd's restore writes the same membership for every member (only
			// the WAL names the member): the later members get the first one's
			// database byte for byte.
			first := testfile.Sum(t, filepath.Join(members[0].DataDir, "member", "snap", "db"))
			for _, m := range members[1:] {
				if testfile.Sum(t, filepath.Join(m.DataDir, "member", "snap", "db")) != first {
					t.Errorf("member %s's database differs from member %s's", m.Name, members[0].Name)
				}
			}
			// The members are written with 16 KiB pages; etcd keeps the page
			// size of the file it is given, and must serve and write it.
			if ps := pageSize(t, filepath.Join(members[0].DataDir, "member", "snap", "db")); ps != snapshot.DefaultPageSize {
				t.Errorf("member database page size %d, want %d", ps, snapshot.DefaultPageSize)
			}
			servers := etcdtest.StartRestoredClusterT(t, served)
			for _, srv := range servers {
				got, rev := liveByKey(t, srv)
				compareLive(t, srv.Name(), got, want)
				if rev != wantRev {
					t.Errorf("%s: revision %d, the two steps give %d", srv.Name(), rev, wantRev)
				}
				for _, old := range []int64{twoStep.Input.CurrentRevision, twoStep.NewRevision} {
					_, err := srv.Client().Get(t.Context(), "/registry/", clientv3.WithPrefix(), clientv3.WithRev(old))
					if !errors.Is(err, rpctypes.ErrCompacted) {
						t.Errorf("%s: a read at revision %d: %v, want %v", srv.Name(), old, err, rpctypes.ErrCompacted)
					}
				}
			}
			if _, err := servers[0].Put(t.Context(), "/registry/configmaps/default/after-restore", []byte("x")); err != nil {
				t.Errorf("a write after the restore: %v", err)
			}
			ms, err := servers[0].Client().MemberList(t.Context())
			if err != nil || len(ms.Members) != n {
				t.Errorf("member list %v (%v), want %d members", ms, err, n)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(members[0].DataDir), ".*"))
			if len(left) > 0 {
				t.Errorf("temporary files left beside the data dirs: %v", left)
			}
		})
	}
}

// TestFusedRestoreHistory runs the same comparison on a generated snapshot (the churn profile)
// with history: keys with several revisions, keys deleted (tombstones), etcd
// leases and compaction markers, so the copy the fused restore edits holds
// older revisions that etcd must compact at boot.
func TestFusedRestoreHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "gen.db")
	res, err := gen.Generate(t.Context(), gen.Config{Path: in, Keys: 3000, Seed: 5, Profile: gen.ProfileChurn})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries <= res.Keys || res.Tombstones == 0 {
		t.Fatalf("generated %d entries for %d keys, %d tombstones: no history to test", res.Entries, res.Keys, res.Tombstones)
	}
	opts := rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String()},
		PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR.String()}}
	out := filepath.Join(dir, "migrated.db")
	twoStep, _, _, err := runRules(t, in, out, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, wantRev := liveByKey(t, restoreAndServe(t, out))
	// The fused restore rewrites: none of that history reaches the member.
	for route, wantRoute := range map[string]string{"": transform.RouteRewrite, transform.RouteRewrite: transform.RouteRewrite} {
		members, served := fusedMembers(t, t.TempDir(), 1)
		rep, err := fusedRestore(t, in, opts, members, route)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Route != wantRoute {
			t.Errorf("route %s on a snapshot of %d entries for %d live keys: took %q, want %q", route, rep.Input.Entries, rep.Input.LiveKeys, rep.Route, wantRoute)
		}
		srv := etcdtest.StartRestoredT(t, served[0])
		got, rev := liveByKey(t, srv)
		compareLive(t, route, got, want)
		if rev != wantRev {
			t.Errorf("%s: revision %d, the two steps give %d", route, rev, wantRev)
		}
		if _, err := srv.Client().Get(t.Context(), "/registry/", clientv3.WithPrefix(), clientv3.WithRev(twoStep.Input.CurrentRevision)); !errors.Is(err, rpctypes.ErrCompacted) {
			t.Errorf("%s: a read at the source revision %d: %v, want %v", route, twoStep.Input.CurrentRevision, err, rpctypes.ErrCompacted)
		}
	}
}

func compareLive(t *testing.T, what string, got, want map[string]*mvccpb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", what, k)
		case !bytes.Equal(g.Value, w.Value) || g.CreateRevision != w.CreateRevision || g.ModRevision != w.ModRevision ||
			g.Version != w.Version || g.Lease != w.Lease:
			t.Errorf("%s: %s: create=%d mod=%d version=%d lease=%d, want create=%d mod=%d version=%d lease=%d (values equal: %v)", what, k,
				g.CreateRevision, g.ModRevision, g.Version, g.Lease, w.CreateRevision, w.ModRevision, w.Version, w.Lease, bytes.Equal(g.Value, w.Value))
		}
	}
}

// TestFusedRestoreLeavesNothing checks that a fused restore whose check of
// its result fails, or whose data dir is taken, leaves no data dir and no
// temporary file behind.
func TestFusedRestoreLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := testfile.Copy(t, samplePath, dir)
	rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: newServiceCIDR.String()}})
	if err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	members, _ := fusedMembers(t, outDir, 2)
	bad := errors.New("the check failed")
	for _, route := range []string{"", transform.RouteRewrite} {
		_, err = transform.Run(context.Background(), transform.Config{Input: in, Rules: rs, Restore: members, Route: route,
			VerifyOutput: func(context.Context, string, string) error { return bad }})
		if !errors.Is(err, bad) {
			t.Fatalf("%s: err %v, want the check's", route, err)
		}
		if ents, _ := os.ReadDir(outDir); len(ents) > 0 {
			t.Errorf("%s: left behind after a failed check: %v", route, ents)
		}
	}

	if err := os.MkdirAll(filepath.Join(members[1].DataDir, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = transform.Run(context.Background(), transform.Config{Input: in, Rules: rs, Restore: members})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err %v, want the taken data dir refused", err)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Errorf("after a refused data dir the directory holds %v, want only the taken one", ents)
	}
}

// TestFusedRestoreCopyRouteRemoved: the removed copy route is refused by
// name, before any work.
func TestFusedRestoreCopyRouteRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	members, _ := fusedMembers(t, dir, 1)
	_, err := transform.Run(context.Background(), transform.Config{Input: samplePath, Restore: members, Route: "copy"})
	if err == nil || !strings.Contains(err.Error(), "removed") {
		t.Fatalf("route copy: %v, want it refused as removed", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// pageSize is the bbolt page size of the database at path.
func pageSize(t *testing.T, path string) int {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.Info().PageSize
}
