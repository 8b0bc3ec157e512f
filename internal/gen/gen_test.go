package gen

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
)

const testKeys = 2000

func generate(t *testing.T, seed int64, profile ...string) *Result {
	t.Helper()
	cfg := Config{Path: filepath.Join(t.TempDir(), "gen.db"), Keys: testKeys, Seed: seed}
	if len(profile) > 0 {
		cfg.Profile = profile[0]
	}
	res, err := Generate(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGenerate(t *testing.T) {
	for _, profile := range Profiles {
		t.Run(profile, func(t *testing.T) { testGenerate(t, profile) })
	}
}

func testGenerate(t *testing.T, profile string) {
	res := generate(t, 1, profile)
	t.Logf("%d keys (%d live), %d entries, %d tombstones, %d bytes, revision %d", res.Keys, res.LiveKeys, res.Entries, res.Tombstones, res.Size, res.Revision)
	deletes := profile != ProfileServices // whose objects are never deleted
	if res.Keys != testKeys || res.Size%512 != 32 || (res.Tombstones == 0) == deletes || res.Entries <= res.Keys || res.Services == 0 || res.Pods == 0 {
		t.Fatalf("unexpected result %+v", res)
	}

	t.Run("etcdutl status", func(t *testing.T) {
		st, err := etcdsnapshot.NewV3(zap.NewNop()).Status(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		if st.TotalKey != res.LiveKeys || st.Revision != res.Revision || st.Version != "3.7.0" {
			t.Fatalf("status %+v, want %d live keys at revision %d", st, res.LiveKeys, res.Revision)
		}
	})

	t.Run("snapshot package reads it", func(t *testing.T) {
		s, err := snapshot.Open(res.Path, snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.SHA256 != res.SHA256 || s.Meta.FinishedCompact != res.CompactRevision || s.Meta.ScheduledCompact != res.CompactRevision {
			t.Fatalf("snapshot %+v, result %+v", s, res)
		}
		ix, err := s.Index(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ix.Entries != res.Entries || ix.LiveKeys != res.LiveKeys || ix.Tombstones != res.Tombstones {
			t.Fatalf("index: %d entries, %d live, %d tombstones; result %+v", ix.Entries, ix.LiveKeys, ix.Tombstones, res)
		}
		kc, err := s.CheckKeys(t.Context(), 10)
		if err != nil || kc.Count != 0 {
			t.Fatalf("revision metadata: %v %+v", err, kc)
		}
		probs, err := s.CheckStructure(10)
		if err != nil || len(probs) > 0 {
			t.Fatalf("bbolt check: %v %v", err, probs)
		}
	})

	t.Run("verify with the old networks", func(t *testing.T) {
		r, err := verify.Run(t.Context(), verify.Config{Path: res.Path, ServiceCIDR: sample.ServiceCIDR, PodNetworkCIDR: sample.PodCIDR, Structure: true})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK {
			t.Fatalf("verify failed: %v", r.Err())
		}
	})

	t.Run("seed migration", func(t *testing.T) {
		rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "migrated.db")
		rep, err := transform.Run(t.Context(), transform.Config{Input: res.Path, Output: out, Rules: rs})
		if err != nil {
			t.Fatal(err)
		}
		// Every bulk Service and Node moves, with the sample's.
		if rep.Replaced < res.Services+res.Nodes {
			t.Errorf("replaced %d objects; want at least %d Services + %d Nodes", rep.Replaced, res.Services, res.Nodes)
		}
		r, err := verify.Run(t.Context(), verify.Config{Path: out, ServiceCIDR: "172.24.0.0/16", PodNetworkCIDR: "10.55.0.0/16", Structure: true})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK {
			t.Fatalf("verify of the migrated snapshot failed: %v", r.Err())
		}
	})

	t.Run("restore and start etcd", func(t *testing.T) {
		port, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		peer := "http://" + etcdtest.Host + ":" + strconv.Itoa(port)
		dir := filepath.Join(t.TempDir(), "m0")
		err = snapshot.Restore(t.Context(), snapshot.RestoreConfig{SnapshotPath: res.Path, Name: "m0", DataDir: dir,
			PeerURLs: []string{peer}, RevisionBump: snapshot.DefaultRevisionBump, MarkCompacted: true})
		if err != nil {
			t.Fatal(err)
		}
		srv := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dir, Name: "m0", PeerURL: peer})
		kvs, err := srv.LiveKVs(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(kvs) != res.LiveKeys {
			t.Fatalf("restored etcd serves %d keys, want %d", len(kvs), res.LiveKeys)
		}
		s, err := snapshot.Open(res.Path, snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ix, err := s.Index(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		checked := map[string]bool{}
		for i, kv := range kvs {
			k := string(kv.Key)
			parts := strings.SplitN(k, "/", 4)
			prefix := strings.Join(parts[:min(3, len(parts))], "/")
			if checked[prefix] && i%97 != 0 {
				continue
			}
			checked[prefix] = true
			rev, ok := ix.Lookup(kv.Key)
			if !ok {
				t.Fatalf("%s is live in etcd but not in the snapshot", k)
			}
			want, _, err := s.Get(rev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kv.Value, want.Value) || kv.ModRevision != want.ModRevision || kv.CreateRevision != want.CreateRevision ||
				kv.Version != want.Version || kv.Lease != want.Lease {
				t.Errorf("%s: etcd has rev %d/%d v%d lease %x, snapshot %d/%d v%d lease %x (values equal: %v)", k, kv.CreateRevision, kv.ModRevision, kv.Version,
					kv.Lease, want.CreateRevision, want.ModRevision, want.Version, want.Lease, bytes.Equal(kv.Value, want.Value))
			}
		}
		if len(checked) < 15 {
			t.Errorf("compared only %d resources: %v", len(checked), checked)
		}
		// The sample's objects are there byte for byte.
		objs, err := sample.Objects()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Get(t.Context(), objs[0].Key)
		if err != nil || len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, objs[0].Value) {
			t.Errorf("sample object %s not served as written (%v)", objs[0].Key, err)
		}
	})
}

func TestDeterministic(t *testing.T) {
	a, b, c := generate(t, 7), generate(t, 7), generate(t, 8)
	if a.SHA256 != b.SHA256 || a.Size != b.Size {
		t.Fatalf("same seed, different files: %s %s", a.SHA256, b.SHA256)
	}
	if a.SHA256 == c.SHA256 {
		t.Fatal("different seeds, same file")
	}
}

func TestMarshalKVMatchesProto(t *testing.T) {
	for _, kv := range []*mvccpb.KeyValue{
		{Key: []byte("/registry/pods/a/b"), CreateRevision: 5, ModRevision: 9, Version: 3, Value: bytes.Repeat([]byte("x"), 300), Lease: 1<<60 | 77},
		{Key: []byte("/registry/pods/a/b")}, // a tombstone's value
		{Key: []byte("k"), CreateRevision: 1, ModRevision: 1, Version: 1, Value: []byte("v")},
	} {
		want, err := proto.Marshal(kv)
		if err != nil {
			t.Fatal(err)
		}
		got := marshalKV(string(kv.Key), kv.CreateRevision, kv.ModRevision, kv.Version, kv.Value, kv.Lease)
		if !bytes.Equal(got, want) {
			t.Errorf("marshalKV(%v) = %x, proto.Marshal %x", kv, got, want)
		}
	}
}

func TestPodCIDRAllocatorFitsManyNodes(t *testing.T) {
	for _, n := range []int{10, 650, 1000} {
		a, err := newPodCIDRAllocator(netip.MustParsePrefix(sample.PodCIDR))
		if err != nil {
			t.Fatal(err)
		}
		var all []netip.Prefix
		for _, node := range sample.Nodes() {
			p := netip.MustParsePrefix(node.PodCIDR)
			if err := a.reserve(p); err != nil {
				t.Fatal(err)
			}
			all = append(all, p)
		}
		masks := map[int]int{}
		for j := 0; j < n; j++ {
			p, err := a.next(j, n-j-1)
			if err != nil {
				t.Fatalf("%d nodes: %v", n, err)
			}
			masks[p.Bits()]++
			all = append(all, p)
		}
		for i := range all {
			for j := i + 1; j < len(all); j++ {
				if all[i].Overlaps(all[j]) {
					t.Fatalf("%d nodes: %s and %s overlap", n, all[i], all[j])
				}
			}
		}
		if n <= 650 && (masks[24] == 0 || masks[26] == 0) {
			t.Errorf("%d nodes: want a mix of /24 and /26, got %v", n, masks)
		}
		t.Logf("%d nodes: masks %v", n, masks)
	}
}

func TestSizeKeys(t *testing.T) {
	if n, err := SizeKeys("large"); err != nil || n != 650_000 {
		t.Fatalf("large: %d %v", n, err)
	}
	if _, err := SizeKeys("huge"); err == nil || !strings.Contains(err.Error(), "small") {
		t.Fatalf("huge: %v", err)
	}
}

// TestChurnProfile checks what makes the churn profile: Events and Pods
// deleted, Pods created again under their old names, Deployments with
// several revisions, and deletes as the newest revisions of the file.
func TestChurnProfile(t *testing.T) {
	basic, churn := generate(t, 3), generate(t, 3, ProfileChurn)
	t.Logf("basic: %d entries, %d tombstones; churn: %d entries, %d tombstones, %d live keys", basic.Entries, basic.Tombstones,
		churn.Entries, churn.Tombstones, churn.LiveKeys)
	if churn.Entries < 2*basic.Entries || churn.Tombstones < 10*basic.Tombstones {
		t.Errorf("churn has %d entries and %d tombstones, basic %d and %d: not much more history", churn.Entries, churn.Tombstones, basic.Entries, basic.Tombstones)
	}
	s, err := snapshot.Open(churn.Path, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type keyState struct {
		generations, revisions int
		deleted                bool
	}
	keys := map[string]*keyState{}
	var lastTombs int
	c := s.ForEachInBucket(snapshot.KeyBucket, func(k, v []byte) error {
		_, tomb, err := snapshot.ParseRevisionKey(k)
		if err != nil {
			return err
		}
		kv, err := snapshot.ParseKV(v)
		if err != nil || len(kv.Key) == 0 {
			return err
		}
		st := keys[string(kv.Key)]
		if st == nil {
			st = &keyState{}
			keys[string(kv.Key)] = st
		}
		st.revisions++
		st.deleted = tomb
		if !tomb && kv.Version == 1 {
			st.generations++
		}
		if tomb {
			lastTombs++
		} else {
			lastTombs = 0
		}
		return nil
	})
	if c != nil {
		t.Fatal(c)
	}
	var recreated, deployments int
	for k, st := range keys {
		if strings.HasPrefix(k, "/registry/pods/") && st.generations > 1 {
			recreated++
		}
		if strings.HasPrefix(k, "/registry/deployments/") && st.revisions >= 3 {
			deployments++
		}
	}
	if recreated == 0 || deployments == 0 || lastTombs < 50 {
		t.Errorf("recreated Pods %d, Deployments with 3+ revisions %d, deletes at the end %d: want some of each (50+ deletes)", recreated, deployments, lastTombs)
	}
	live := 0
	for _, st := range keys {
		if !st.deleted {
			live++
		}
	}
	if churn.LiveKeys != live {
		t.Errorf("the result says %d live keys, the file holds %d", churn.LiveKeys, live)
	}
}

// TestServicesProfile checks what makes the services profile: a Service
// and an IPAddress for about one key in eleven each, Pods several KiB
// larger than the basic profile's, and every bulk object but the
// IPAddresses with exactly two revisions.
func TestServicesProfile(t *testing.T) {
	basic, svc := generate(t, 3), generate(t, 3, ProfileServices)
	if svc.Services*100 < svc.Keys*6 || svc.Services <= 2*basic.Services {
		t.Errorf("%d Services in %d keys (basic: %d): want about 9%%", svc.Services, svc.Keys, basic.Services)
	}
	podBytes := func(path string) (revs map[string]int, avg int) {
		s, err := snapshot.Open(path, snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		revs = map[string]int{}
		n, total := 0, 0
		err = s.ForEachInBucket(snapshot.KeyBucket, func(k, v []byte) error {
			kv, err := snapshot.ParseKV(v)
			if err != nil {
				return err
			}
			revs[string(kv.Key)]++
			if strings.HasPrefix(string(kv.Key), "/registry/pods/") {
				n, total = n+1, total+len(kv.Value)
			}
			return nil
		})
		if err != nil || n == 0 {
			t.Fatalf("%v, %d pods", err, n)
		}
		return revs, total / n
	}
	_, basicPod := podBytes(basic.Path)
	revs, svcPod := podBytes(svc.Path)
	if svcPod < basicPod+2048 {
		t.Errorf("a Pod is %d bytes on average, basic %d: not large", svcPod, basicPod)
	}
	var ips, once, other int
	for k, n := range revs {
		switch {
		case strings.HasPrefix(k, "/registry/ipaddresses/"):
			ips++
			if n != 1 {
				t.Errorf("%s has %d revisions", k, n)
			}
		case n == 2:
			once++
		default:
			other++
		}
	}
	if ips < svc.Services || once < svc.Keys*8/10 || svc.Tombstones > basic.Tombstones {
		t.Errorf("%d IPAddresses for %d Services, %d keys with two revisions and %d others of %d, %d tombstones",
			ips, svc.Services, once, other, svc.Keys, svc.Tombstones)
	}
}
