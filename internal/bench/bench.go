package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/snapshot"
)

// The seed migration every *-migrate case runs.
const (
	NewServiceCIDR    = "172.24.0.0/16"
	NewPodNetworkCIDR = "10.55.0.0/16"
)

// Config configures Run.
type Config struct {
	// Sizes to measure, in order. Required.
	Sizes []gen.Size
	// Profiles are the generator profiles each size is measured with, in
	// order. Default: gen.ProfileBasic.
	Profiles []string
	// Runs is the number of rounds per size. Default 3.
	Runs int
	// Seed of the generated snapshots. Default 1.
	Seed int64
	// Cache is where generated snapshots are kept and reused (and the work directory). Required.
	Cache string
	// Keep leaves every output (snapshots, restored data dirs) in the work directory.
	Keep bool
	// Snapshift is the command that runs snapshift, e.g. ["bin/snapshift"]. Required.
	Snapshift []string
	// Child is the command that runs ChildMain, e.g. [os.Args[0], ChildCommand]. Required.
	Child []string
	// Log receives progress lines. Optional.
	Log io.Writer
}

// Case names, in the order they run within a round.
const (
	CaseFloor            = "floor"
	CaseTransform        = "transform"
	CaseTransformMigrate = "transform-migrate"
	CasePlanMigrate      = "plan-migrate"
	CaseFusedMigrate     = "restore-migrate"
	CaseRestore          = "restore"
	CaseEtcdutlRestore   = "etcdutl-restore"
)

var caseDescriptions = map[string]string{
	CaseFloor:            "bbolt copy of every bucket, 32 MiB tx, one fsync, trailer",
	CaseTransform:        "snapshift transform, no rules",
	CaseTransformMigrate: "snapshift transform, seed migration",
	CasePlanMigrate:      "snapshift plan, seed migration",
	CaseFusedMigrate:     "snapshift restore with the seed migration applied on the way (fused), of the input",
	CaseRestore:          "snapshift restore of transform-migrate's output",
	CaseEtcdutlRestore:   "etcdutl's restore of the input",
}

// Report is the whole benchmark.
type Report struct {
	Started          time.Time    `json:"started"`
	GoVersion        string       `json:"goVersion"`
	OS               string       `json:"os"`
	CPUs             int          `json:"cpus"`
	GeneratorVersion string       `json:"generatorVersion"`
	Seed             int64        `json:"seed"`
	Runs             int          `json:"runs"`
	Notes            []string     `json:"notes"`
	Sizes            []SizeReport `json:"sizes"`
}

// SizeReport is one size.
type SizeReport struct {
	Name string `json:"name"`
	// Profile is the generator profile (gen.Profiles).
	Profile    string `json:"profile"`
	Input      string `json:"input"`
	InputBytes int64  `json:"inputBytes"`
	Keys       int    `json:"keys"`
	LiveKeys   int    `json:"liveKeys"`
	Entries    int    `json:"entries"`
	// GeneratedSeconds is how long generating took; zero when the cached file was reused.
	GeneratedSeconds float64      `json:"generatedSeconds,omitempty"`
	Cases            []CaseReport `json:"cases"`
	// Targets are issue 16's goals, each met or not.
	Targets []Target `json:"targets,omitempty"`
}

// CaseReport is one case of one size.
type CaseReport struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Runs        []RunResult `json:"runs"`
	// MedianSeconds is the median wall time; RatioToFloor the median of the per-round ratios of
	// wall time to the floor's in the same round.
	MedianSeconds float64 `json:"medianSeconds"`
	RatioToFloor  float64 `json:"ratioToFloor"`
	// MBPerSecond is the case's input bytes (10^6) per median second; KeysPerSecond the input's
	// `key` entries per median second.
	MBPerSecond   float64 `json:"mbPerSecond"`
	KeysPerSecond float64 `json:"keysPerSecond"`
	// PeakRSSBytes and PeakRssAnonBytes are the highest over the runs.
	PeakRSSBytes     int64 `json:"peakRSSBytes"`
	PeakRssAnonBytes int64 `json:"peakRssAnonBytes"`
	InputBytes       int64 `json:"inputBytes"`
	InputEntries     int   `json:"inputEntries"`
}

// RunResult is one measured run.
type RunResult struct {
	Round int `json:"round"`
	Measurement
	RatioToFloor float64 `json:"ratioToFloor"`
}

// Target is one goal: a ratio (the median over rounds of the per-round ratio) or a peak memory in
// MiB, at most Limit.
type Target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"` // 0: for reference, no goal
	Unit  string  `json:"unit"`  // "x" or "MiB"
	Met   bool    `json:"met"`
}

func (c *Config) validate() error {
	switch {
	case len(c.Sizes) == 0:
		return errors.New("no sizes")
	case c.Cache == "":
		return errors.New("no cache directory")
	case len(c.Snapshift) == 0 || len(c.Child) == 0:
		return errors.New("the snapshift and child commands are required")
	}
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []string{gen.ProfileBasic}
	}
	for _, p := range c.Profiles {
		if !slices.Contains(gen.Profiles, p) {
			return fmt.Errorf("unknown profile %q (profiles: %v)", p, gen.Profiles)
		}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Run generates (or reuses) each size's snapshot and measures every case on it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Cache, 0o755); err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now().UTC(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), GeneratorVersion: gen.Version, Seed: cfg.Seed, Runs: cfg.Runs,
		Notes: []string{
			"the page cache is not dropped (that needs root): each size's input is read once before its first timed run, so every case starts warm",
			"sync(2) runs before every case (not timed), so that no case pays for the writeback of the one before; every writing case ends with its own fsync, so disk write speed is part of its time",
			"cases run as child processes, all cases once per round; ratios are per round against the floor of the same round, then the median",
			"peak RSS is getrusage ru_maxrss and counts mapped file pages; peak RssAnon is sampled every 50ms from /proc/<pid>/status",
			"floor: " + caseDescriptions[CaseFloor] + "; it does not check the input's trailer",
			"restore, restore-migrate and etcdutl-restore: member default, revision bump 1000000000, marked compacted; etcdutl-restore and restore-migrate read the input, restore reads transform-migrate's output",
		}}
	for _, size := range cfg.Sizes {
		for _, profile := range cfg.Profiles {
			sr, err := runSize(ctx, cfg, size, profile)
			if err != nil {
				return rep, fmt.Errorf("size %s/%s: %w", size.Name, profile, err)
			}
			rep.Sizes = append(rep.Sizes, *sr)
		}
	}
	return rep, nil
}

// cacheMeta is stored beside a generated snapshot.
type cacheMeta struct {
	GeneratorVersion string      `json:"generatorVersion"`
	Profile          string      `json:"profile,omitempty"`
	Keys             int         `json:"keys"`
	Seed             int64       `json:"seed"`
	Result           *gen.Result `json:"result"`
}

// Input returns the cached snapshot of a size and profile, generating it when it is missing or
// stale. The basic profile's files keep their old names (<size>-seed<N>.db).
func Input(ctx context.Context, cacheDir string, size gen.Size, seed int64, profile string, log io.Writer) (res *gen.Result, generated bool, err error) {
	name := fmt.Sprintf("%s-seed%d", size.Name, seed)
	if profile != "" && profile != gen.ProfileBasic {
		name = fmt.Sprintf("%s-%s-seed%d", size.Name, profile, seed)
	} else {
		profile = ""
	}
	base := filepath.Join(cacheDir, name)
	keys := gen.SizedKeys(profile, size.Keys) // about the same file size whatever the profile
	path, metaPath := base+".db", base+".json"
	if b, err := os.ReadFile(metaPath); err == nil {
		var m cacheMeta
		if json.Unmarshal(b, &m) == nil && m.GeneratorVersion == gen.Version && m.Keys == keys && m.Seed == seed && m.Profile == profile && m.Result != nil {
			if st, err := os.Stat(path); err == nil && st.Size() == m.Result.Size {
				m.Result.Path = path
				return m.Result, false, nil
			}
		}
	}
	fmt.Fprintf(log, "[generate] %s: %d keys into %s\n", name, keys, path)
	os.Remove(metaPath)
	res, err = gen.Generate(ctx, gen.Config{Path: path, Keys: keys, Seed: seed, Force: true, Profile: profile})
	if err != nil {
		return nil, false, err
	}
	b, err := json.MarshalIndent(cacheMeta{GeneratorVersion: gen.Version, Profile: profile, Keys: keys, Seed: seed, Result: res}, "", "  ")
	if err != nil {
		return nil, false, err
	}
	if err := os.WriteFile(metaPath, b, 0o644); err != nil {
		return nil, false, err
	}
	fmt.Fprintf(log, "[generate] %s: %s, %d entries in %.1fs\n", size.Name, humanBytes(res.Size), res.Entries, res.Duration.Seconds())
	return res, true, nil
}

// caseOrder is the order of the cases in a report.
var caseOrder = []string{CaseFloor, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore, CaseRestore}

// sizeRun is the measurement of one size in progress.
type sizeRun struct {
	cfg     Config
	size    gen.Size
	profile string
	in      *gen.Result
	work    string
	cases   map[string]*CaseReport
	// ratios are per-round ratios of the targets, by target name.
	ratios map[string][]float64
}

func runSize(ctx context.Context, cfg Config, size gen.Size, profile string) (*SizeReport, error) {
	in, generated, err := Input(ctx, cfg.Cache, size, cfg.Seed, profile, cfg.Log)
	if err != nil {
		return nil, err
	}
	sr := &SizeReport{Name: size.Name, Profile: profile, Input: in.Path, InputBytes: in.Size, Keys: in.Keys, LiveKeys: in.LiveKeys, Entries: in.Entries}
	if generated {
		sr.GeneratedSeconds = in.Duration.Seconds()
	}
	work, err := os.MkdirTemp(cfg.Cache, "work-"+size.Name+"-")
	if err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(work)
	}
	if err := warm(in.Path); err != nil {
		return nil, err
	}
	r := &sizeRun{cfg: cfg, size: size, profile: profile, in: in, work: work, cases: map[string]*CaseReport{}, ratios: map[string][]float64{}}
	for _, name := range caseOrder {
		r.cases[name] = &CaseReport{Name: name, Description: caseDescriptions[name], InputBytes: in.Size, InputEntries: in.Entries}
	}
	for round := 1; round <= cfg.Runs; round++ {
		if err := r.round(ctx, round); err != nil {
			return nil, err
		}
	}
	r.summarize(sr)
	return sr, nil
}

// round runs every case once and records the round's measurements.
func (r *sizeRun) round(ctx context.Context, round int) error {
	dir := filepath.Join(r.work, fmt.Sprintf("round%d", round))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	migrated := filepath.Join(dir, "transform-migrate.db")
	outputs := map[string]string{ // removed after their case unless Keep
		CaseFloor: filepath.Join(dir, "floor.db"), CaseTransform: filepath.Join(dir, "transform.db"),
		CaseRestore: filepath.Join(dir, "restore.etcd"), CaseEtcdutlRestore: filepath.Join(dir, "etcdutl-restore.etcd"),
		CaseFusedMigrate: filepath.Join(dir, "restore-migrate.etcd"),
	}
	seq := roundOrder(round)
	got, err := r.measureRound(ctx, round, seq, r.argv(migrated, outputs), outputs)
	if err != nil {
		return err
	}
	if round == 1 {
		// restore reads transform-migrate's output: its throughput is over that file.
		if err := r.setRestoreInput(migrated, []string{CaseRestore}); err != nil {
			return err
		}
	}
	if !r.cfg.Keep {
		os.Remove(migrated)
	}
	floor := got[CaseFloor].Wall.Seconds()
	for _, name := range caseOrder {
		m := got[name]
		r.cases[name].Runs = append(r.cases[name].Runs, RunResult{Round: round, Measurement: m, RatioToFloor: m.Wall.Seconds() / floor})
	}
	etcdutl := got[CaseEtcdutlRestore].Wall.Seconds()
	r.ratios[targetFused] = append(r.ratios[targetFused], got[CaseFusedMigrate].Wall.Seconds()/etcdutl)
	r.ratios[targetTwoSteps] = append(r.ratios[targetTwoSteps], (got[CaseTransformMigrate].Wall+got[CaseRestore].Wall).Seconds()/etcdutl)
	return nil
}

// argv is every case's command line in a round whose transform-migrate writes migrated.
func (r *sizeRun) argv(migrated string, outputs map[string]string) map[string][]string {
	in := r.in.Path
	migrate := []string{"--service-cidr", NewServiceCIDR, "--pod-network-cidr", NewPodNetworkCIDR}
	snapshift := func(args ...string) []string { return append(slices.Clone(r.cfg.Snapshift), args...) }
	childCmd := func(args ...string) []string { return append(slices.Clone(r.cfg.Child), args...) }
	return map[string][]string{
		CaseFloor:            childCmd("floor", in, outputs[CaseFloor]),
		CaseTransform:        snapshift("transform", in, "--out", outputs[CaseTransform], "--quiet"),
		CaseTransformMigrate: snapshift(append([]string{"transform", in, "--out", migrated, "--quiet"}, migrate...)...),
		CasePlanMigrate:      snapshift(append([]string{"plan", in, "--quiet"}, migrate...)...),
		CaseFusedMigrate:     snapshift(append([]string{"restore", in, "--data-dir", outputs[CaseFusedMigrate], "--quiet"}, migrate...)...),
		CaseRestore:          snapshift("restore", migrated, "--data-dir", outputs[CaseRestore]),
		CaseEtcdutlRestore:   childCmd("etcdutl-restore", in, outputs[CaseEtcdutlRestore]),
	}
}

// roundOrder is the order of the cases in a round: the cases that read the input rotate each
// round; restore needs transform-migrate's output and comes last.
func roundOrder(round int) []string {
	first := []string{CaseFloor, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore}
	k := (round - 1) % len(first)
	seq := append(append([]string(nil), first[k:]...), first[:k]...)
	return append(seq, CaseRestore)
}

// measureRound runs the cases of seq in order, each as a child process, and removes each case's
// output after it unless Keep.
func (r *sizeRun) measureRound(ctx context.Context, round int, seq []string, argv map[string][]string, outputs map[string]string) (map[string]Measurement, error) {
	got := map[string]Measurement{}
	for _, name := range seq {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Write back what earlier cases (and other processes) left dirty, so that a case
		// does not pay for its predecessor's writeback. Not timed.
		syscall.Sync()
		m, err := Measure(ctx, r.cfg.Child, argv[name])
		if err != nil {
			return nil, fmt.Errorf("round %d, %s: %w", round, name, err)
		}
		got[name] = m
		fmt.Fprintf(r.cfg.Log, "[bench] %s/%s round %d/%d  %-18s %7.2fs  rss %s  anon %s\n", r.size.Name, r.profile, round, r.cfg.Runs, name,
			m.Wall.Seconds(), humanBytes(m.MaxRSS), humanBytes(m.PeakRssAnon))
		if out := outputs[name]; out != "" && !r.cfg.Keep {
			os.RemoveAll(out)
		}
	}
	return got, nil
}

// setRestoreInput makes the restores' input transform-migrate's output.
func (r *sizeRun) setRestoreInput(migrated string, restores []string) error {
	st, err := os.Stat(migrated)
	if err != nil {
		return err
	}
	n, err := entries(migrated)
	if err != nil {
		return err
	}
	for _, name := range restores {
		r.cases[name].InputBytes, r.cases[name].InputEntries = st.Size(), n
	}
	return nil
}

// summarize fills the per-case medians, peaks and throughputs and the target into sr.
func (r *sizeRun) summarize(sr *SizeReport) {
	for _, name := range caseOrder {
		c := r.cases[name]
		var walls, ratios []float64
		for _, run := range c.Runs {
			walls = append(walls, run.Wall.Seconds())
			ratios = append(ratios, run.RatioToFloor)
			c.PeakRSSBytes = max(c.PeakRSSBytes, run.MaxRSS)
			c.PeakRssAnonBytes = max(c.PeakRssAnonBytes, run.PeakRssAnon)
		}
		c.MedianSeconds, c.RatioToFloor = median(walls), median(ratios)
		if c.MedianSeconds > 0 {
			c.MBPerSecond = float64(c.InputBytes) / 1e6 / c.MedianSeconds
			c.KeysPerSecond = float64(c.InputEntries) / c.MedianSeconds
		}
		sr.Cases = append(sr.Cases, *c)
	}
	sr.Targets = r.targets()
}

// Target names.
const (
	targetFused    = "restore-migrate / etcdutl-restore"
	targetTwoSteps = "(transform-migrate + restore) / etcdutl-restore"
	targetPlan     = "plan-migrate / floor"
	targetMigrate  = "transform-migrate / floor"
)

// targets are issue 16's goals for this size: the fused restore near etcd's restore of the same
// input, plan and the seed migration near the floor, and the peak anonymous memory of the
// migrations bounded (160 MiB at xlarge and above, 128 MiB below).
func (r *sizeRun) targets() []Target {
	ratio := func(name string, values []float64, limit float64) Target {
		v := median(values)
		return Target{Name: name, Value: v, Limit: limit, Unit: "x", Met: v <= limit}
	}
	floorRatios := func(c string) []float64 {
		var out []float64
		for _, run := range r.cases[c].Runs {
			out = append(out, run.RatioToFloor)
		}
		return out
	}
	memLimit := 128.0
	if r.size.Keys >= 1_000_000 {
		memLimit = 160
	}
	out := []Target{
		ratio(targetFused, r.ratios[targetFused], 1.3),
		{Name: targetTwoSteps, Value: median(r.ratios[targetTwoSteps]), Unit: "x", Met: true}, // what the fused restore replaces
		ratio(targetPlan, floorRatios(CasePlanMigrate), 0.35),
		ratio(targetMigrate, floorRatios(CaseTransformMigrate), 1.3),
	}
	for _, c := range []string{CaseTransformMigrate, CaseFusedMigrate} {
		mib := float64(r.cases[c].PeakRssAnonBytes) / (1 << 20)
		out = append(out, Target{Name: "peak RssAnon " + c, Value: mib, Limit: memLimit, Unit: "MiB", Met: mib <= memLimit})
	}
	return out
}

// entries counts the `key` bucket entries of a snapshot (not timed).
func entries(path string) (int, error) {
	s, err := snapshot.Open(path, snapshot.OpenOptions{})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	ix, err := s.Index(context.Background(), nil)
	if err != nil {
		return 0, err
	}
	return ix.Entries, nil
}

// warm reads a file once so that it starts in the page cache.
func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	return err
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteTable prints the report as a table.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "snapbench: %s, %d CPUs, %s, generator v%s, seed %d, %d run(s) per case (median)\n",
		r.OS, r.CPUs, r.GoVersion, r.GeneratorVersion, r.Seed, r.Runs)
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "\n%s/%s: %s, %d keys (%d live), %d key entries", s.Name, s.Profile, humanBytes(s.InputBytes), s.Keys, s.LiveKeys, s.Entries)
		if s.GeneratedSeconds > 0 {
			fmt.Fprintf(w, ", generated in %.1fs", s.GeneratedSeconds)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  %-18s %9s %8s %8s %10s %10s %12s\n", "case", "median", "x floor", "MB/s", "keys/s", "peak RSS", "peak RssAnon")
		for _, c := range s.Cases {
			fmt.Fprintf(w, "  %-18s %8.2fs %8.2f %8.0f %10.0f %10s %12s\n", c.Name, c.MedianSeconds, c.RatioToFloor, c.MBPerSecond,
				c.KeysPerSecond, humanBytes(c.PeakRSSBytes), humanBytes(c.PeakRssAnonBytes))
		}
		for _, t := range s.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "NOT met"
			}
			switch {
			case t.Limit == 0:
				fmt.Fprintf(w, "  for reference %-41s %6.2fx   (the two steps the fused restore replaces)\n", t.Name, t.Value)
			case t.Unit == "MiB":
				fmt.Fprintf(w, "  target %-48s <= %4.0f MiB: %6.0f MiB  %s\n", t.Name, t.Limit, t.Value, verdict)
			default:
				fmt.Fprintf(w, "  target %-48s <= %4.2fx:    %6.2fx   %s\n", t.Name, t.Limit, t.Value, verdict)
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
