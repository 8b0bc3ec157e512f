package bench_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
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

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case bench.ChildCommand:
			os.Exit(bench.ChildMain(os.Args[2:], os.Stdout, os.Stderr))
		case snapshiftCommand:
			os.Exit(app.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
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
	if len(m.Cases) != 7 {
		t.Fatalf("%s %s: cases %+v", profile, m.Mode, m.Cases)
	}
	positions := map[int]bool{}
	for _, c := range m.Cases {
		if c.MedianSeconds <= 0 || c.RatioToFloor <= 0 || c.PeakRSSBytes <= 0 || len(c.Runs) != 1 || c.KeysPerSecond <= 0 || c.Runs[0].MinorFaults <= 0 {
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
	if len(positions) != 7 || positions[0] {
		t.Errorf("%s %s: positions %v", profile, m.Mode, positions)
	}
	if ts := m.Targets; len(ts) != 6 || ts[0].Value <= 0 || ts[0].Limit != 0 || ts[2].Limit != 0.35 {
		t.Errorf("%s %s: targets %+v", profile, m.Mode, ts)
	}
}

func TestMeasureReportsChildFailure(t *testing.T) {
	_, err := bench.Measure(t.Context(), []string{os.Args[0], bench.ChildCommand}, []string{os.Args[0], bench.ChildCommand, "floor", "/nonexistent/in.db", filepath.Join(t.TempDir(), "o.db")})
	if err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Fatalf("err = %v", err)
	}
}
