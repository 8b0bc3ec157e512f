package bench_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/snapshift/snapshift/cmd/snapshift/app"
	"github.com/snapshift/snapshift/internal/bench"
	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/snapshot"
)

// snapshiftCommand makes this test binary run snapshift's CLI, so the smoke test needs no build.
const snapshiftCommand = "__snapshift"

// allocCommand makes this test binary touch N MiB of anonymous memory and exit 0.
const allocCommand = "__alloc"

var sink [][]byte

func alloc(args []string) int {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	for range n {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		sink = append(sink, b)
	}
	return 0
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case bench.ChildCommand:
			os.Exit(bench.ChildMain(os.Args[2:], os.Stdout, os.Stderr))
		case snapshiftCommand:
			os.Exit(app.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		case allocCommand:
			os.Exit(alloc(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

func TestFloorCopy(t *testing.T) {
	dir := t.TempDir()
	in, err := gen.Generate(t.Context(), gen.Config{Path: filepath.Join(dir, "in.db"), Keys: 1000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "floor.db")
	res, err := bench.FloorCopy(t.Context(), in.Path, out, 64<<10) // small transactions: many commits
	if err != nil {
		t.Fatal(err)
	}
	if res.Size%512 != 32 {
		t.Fatalf("size %d has no trailer", res.Size)
	}
	s, err := snapshot.Open(out, snapshot.OpenOptions{}) // checks the trailer
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	st, err := etcdsnapshot.NewV3(zap.NewNop()).Status(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalKey != in.LiveKeys || st.Revision != in.Revision {
		t.Fatalf("status %+v, want %d keys at %d", st, in.LiveKeys, in.Revision)
	}
	if a, b := dump(t, in.Path), dump(t, out); a != b {
		t.Fatal("the copy's buckets differ from the input's")
	}
	if stIn, _ := etcdsnapshot.NewV3(zap.NewNop()).Status(in.Path); stIn.Hash != st.Hash {
		t.Fatalf("content hash %x, input %x", st.Hash, stIn.Hash)
	}
}

// TestBboltFloorCopy: the floor through bbolt's own writer is a valid snapshot (trailer, etcd's
// status) with every bucket, key and value of the input, across many small transactions.
func TestBboltFloorCopy(t *testing.T) {
	dir := t.TempDir()
	in, err := gen.Generate(t.Context(), gen.Config{Path: filepath.Join(dir, "in.db"), Keys: 1000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "floor-bbolt.db")
	res, err := bench.BboltFloorCopy(t.Context(), in.Path, out, 64<<10) // small transactions: many commits
	if err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(out, snapshot.OpenOptions{}) // checks the trailer
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if st, err := os.Stat(out); err != nil || st.Size() != res.Size {
		t.Fatalf("size %d, stat %v %v", res.Size, st, err)
	}
	st, err := etcdsnapshot.NewV3(zap.NewNop()).Status(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalKey != in.LiveKeys || st.Revision != in.Revision {
		t.Fatalf("status %+v, want %d keys at %d", st, in.LiveKeys, in.Revision)
	}
	if a, b := dump(t, in.Path), dump(t, out); a != b {
		t.Fatal("the bbolt copy's buckets differ from the input's")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestMeasureInCgroup runs a child that touches 256 MiB inside a real 64 MiB memory cgroup (v1,
// as root): the OOM killer ends it, and that is the measurement's result, not an error; a child
// within the limit succeeds, and the cgroup recorded its usage. The cgroups are removed.
func TestMeasureInCgroup(t *testing.T) {
	cg, err := bench.NewMemoryCgroups(64 << 20)
	if err != nil {
		t.Fatalf("this machine (root, cgroup v1) should allow memory cgroups: %v", err)
	}
	launcher := []string{os.Args[0], bench.ChildCommand}
	run := func(mib string) bench.Measurement {
		dir, err := cg.Create()
		if err != nil {
			t.Fatal(err)
		}
		m, err := bench.MeasureIn(t.Context(), launcher, dir, []string{os.Args[0], allocCommand, mib})
		if err != nil {
			t.Fatal(err)
		}
		if err := cg.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left: %v", dir, err)
		}
		return m
	}
	m := run("256")
	if !strings.HasPrefix(m.Failure, "OOM-killed") || m.Cgroup == nil || m.Cgroup.OOMKills == 0 || m.Cgroup.LimitBytes != 64<<20 {
		t.Errorf("256 MiB in 64 MiB: %+v, cgroup %+v", m, m.Cgroup)
	}
	m = run("16")
	if m.Failure != "" || m.Cgroup == nil || m.Cgroup.MaxUsageBytes < 16<<20 || m.Cgroup.OOMKills != 0 {
		t.Errorf("16 MiB in 64 MiB: %+v, cgroup %+v", m, m.Cgroup)
	}
}

// TestRefusesShortDisk: a size that would leave less than KeepFree free is refused, with a
// sentence that says how much it needs, before anything is generated.
func TestRefusesShortDisk(t *testing.T) {
	cache := t.TempDir()
	cfg := bench.Config{Sizes: []gen.Size{{Name: "tiny", Keys: 1000}}, Profiles: []string{gen.ProfileBasic}, Runs: 1, Cache: cache,
		Snapshift: []string{os.Args[0], snapshiftCommand}, Child: []string{os.Args[0], bench.ChildCommand}, KeepFree: 1 << 60}
	_, err := bench.Run(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "needs about") || !strings.Contains(err.Error(), "is free") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "*.db")); len(left) != 0 {
		t.Errorf("generated anyway: %v", left)
	}
}

// dump renders every bucket, key and value.
func dump(t *testing.T, path string) string {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b bytes.Buffer
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			b.WriteString("bucket " + string(name) + "\n")
			return bk.ForEach(func(k, v []byte) error { b.Write(k); b.WriteByte('='); b.Write(v); b.WriteByte('\n'); return nil })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSmoke runs the whole benchmark once on a tiny snapshot of every profile, every case in a
// child process, warm and "cold" (through a stand-in for drop_caches, so that the test does not
// drop the machine's page cache).
func TestSmoke(t *testing.T) {
	cache := t.TempDir()
	drop := filepath.Join(t.TempDir(), "drop_caches")
	if err := os.WriteFile(drop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cfg := bench.Config{Sizes: []gen.Size{{Name: "tiny", Keys: 1000}}, Profiles: gen.Profiles, Runs: 1, Cache: cache,
		Snapshift: []string{os.Args[0], snapshiftCommand}, Child: []string{os.Args[0], bench.ChildCommand}, Log: &log,
		OrderSeed: 7, Cold: true, DropCaches: drop}
	rep, err := bench.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(rep.Sizes) != 3 || rep.Sizes[0].Profile != gen.ProfileBasic || rep.Sizes[1].Profile != gen.ProfileChurn || rep.Sizes[2].Profile != gen.ProfileServices {
		t.Fatalf("report %+v", rep)
	}
	if b, c := rep.Sizes[0], rep.Sizes[1]; c.Entries-c.LiveKeys <= b.Entries-b.LiveKeys {
		t.Errorf("the churn profile has %d entries beyond its live keys, basic %d: no more history", c.Entries-c.LiveKeys, b.Entries-b.LiveKeys)
	}
	if b, _ := os.ReadFile(drop); string(b) != "3\n" {
		t.Errorf("the cold cases did not drop the cache: %q", b)
	}
	for _, s := range rep.Sizes {
		if len(s.Modes) != 2 || s.Modes[0].Mode != bench.ModeWarm || s.Modes[1].Mode != bench.ModeCold {
			t.Fatalf("%s: modes %+v", s.Profile, s.Modes)
		}
		for _, m := range s.Modes {
			checkMode(t, s.Profile, m)
		}
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	for _, want := range []string{"tiny/basic", "tiny/churn", "tiny/services", "[warm]", "[cold]", "order seed 7", bench.CaseFloor, bench.CaseEtcdutlRestore,
		bench.CaseFusedMigrate, "[cold] target plan-migrate / floor", "majflt", "[warm] phases of restore-migrate (medians):"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// A second run reuses the generated snapshot; the work directory is gone.
	if _, generated, err := bench.Input(context.Background(), cache, cfg.Sizes[0], 1, gen.ProfileChurn, &log); err != nil || generated {
		t.Errorf("second Input: generated=%v err=%v", generated, err)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "work-*"))
	if len(entries) != 0 {
		t.Errorf("work directories left: %v", entries)
	}
}

// checkMode checks one mode of one size of the smoke run.
func checkMode(t *testing.T, profile string, m bench.ModeReport) {
	t.Helper()
	if len(m.Cases) != len(bench.Cases) {
		t.Fatalf("%s %s: cases %+v", profile, m.Mode, m.Cases)
	}
	positions := map[int]bool{}
	for _, c := range m.Cases {
		if c.MedianSeconds <= 0 || c.RatioToFloor <= 0 || c.RatioToBboltFloor <= 0 || c.PeakRSSBytes <= 0 || len(c.Runs) != 1 || c.KeysPerSecond <= 0 || c.Runs[0].MinorFaults <= 0 {
			t.Errorf("%s %s: case %s: %+v", profile, m.Mode, c.Name, c)
		}
		if c.Name == bench.CaseFloor && c.RatioToFloor != 1 {
			t.Errorf("floor ratio %v", c.RatioToFloor)
		}
		positions[c.Runs[0].Position] = true
		if c.Name == bench.CaseFusedMigrate && !slices.ContainsFunc(c.MedianPhases, func(p bench.Phase) bool { return p.Name == "stream" }) {
			t.Errorf("%s %s: restore-migrate's phases %+v", profile, m.Mode, c.MedianPhases)
		}
	}
	if len(positions) != len(bench.Cases) || positions[0] {
		t.Errorf("%s %s: positions %v", profile, m.Mode, positions)
	}
	want := []string{"restore-migrate / etcdutl-restore", "restore-migrate / etcdutl-restore (8 GiB)", "(transform-migrate + restore) / etcdutl-restore",
		"plan-migrate / floor", "transform-migrate / floor", "plan-migrate / floor-bbolt", "cp+sha256sum / floor-bbolt",
		"peak RssAnon transform-migrate", "peak RssAnon restore-migrate", "peak RSS transform", "peak RSS transform-migrate", "peak RSS plan-migrate",
		"peak RSS restore-migrate", "peak RSS restore"}
	var names []string
	for _, tg := range m.Targets {
		names = append(names, tg.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("%s %s: targets %v, want %v", profile, m.Mode, names, want)
	}
	if ts := m.Targets; ts[0].Value <= 0 || ts[0].Limit != 0 || ts[1].Limit != 0 || ts[3].Limit != 0.35 || ts[5].Limit != 0.35 || ts[5].Value <= 0 || ts[9].Limit != 128 || ts[9].Value <= 0 {
		t.Errorf("%s %s: targets %+v", profile, m.Mode, ts)
	}
}

func TestMeasureReportsChildFailure(t *testing.T) {
	_, err := bench.Measure(t.Context(), []string{os.Args[0], bench.ChildCommand}, []string{os.Args[0], bench.ChildCommand, "floor", "/nonexistent/in.db", filepath.Join(t.TempDir(), "o.db")})
	if err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Fatalf("err = %v", err)
	}
}
