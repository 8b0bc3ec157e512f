package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/snapshift/snapshift/internal/fsutil"
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
	// OrderSeed seeds the order of the cases, shuffled anew for every round and mode (roundOrder).
	// Default: taken from the clock; the report says which, so that a run can be repeated.
	OrderSeed int64
	// Cold also measures every case with the page cache dropped just before it, where DropCaches
	// can be written (root): each round then runs the cases warm and cold, in a random order of
	// the two, and both are reported apart. Where the cache cannot be dropped, a note says why and
	// only warm is measured. Default false: warm only.
	Cold bool
	// DropCaches is the file written to drop the page cache. Default DefaultDropCaches.
	DropCaches string
	// SharedCache is where the inputs of sizes of at least SharedFromKeys keys are generated and
	// kept instead of Cache (outside a clone: an 8 GiB input is generated once per machine and
	// generator version). Default: Cache.
	SharedCache string
	// Cases are the cases to run, a subset of Cases (restore needs transform-migrate). Default:
	// every case.
	Cases []string
	// KeepFree is the free disk space a size must leave untouched, beyond its input and the two
	// outputs it keeps at a time; Run refuses a size that would need more than is free.
	KeepFree int64
	// Cgroup also runs snapshift's cases and etcd's restore inside a memory cgroup (v1) of
	// CgroupLimit bytes, cold (ModeCgroup), where one can be created (root, cgroup v1).
	Cgroup bool
	// CgroupLimit is the memory cgroup's limit. Default DefaultCgroupLimit (1 GiB).
	CgroupLimit int64
	// CgroupTimeout ends a case in the memory cgroup that runs longer (a host that thrashes
	// fails as surely as one that kills): its result is "did not finish". Default 10 minutes.
	CgroupTimeout time.Duration
}

// SharedFromKeys is the smallest size whose input goes to Config.SharedCache (xxlarge, ~8 GiB).
const SharedFromKeys = 3_000_000

// Case names, in the order they run within a round.
const (
	CaseFloor            = "floor"
	CaseTransform        = "transform"
	CaseTransformMigrate = "transform-migrate"
	CasePlanMigrate      = "plan-migrate"
	CaseFusedMigrate     = "restore-migrate"
	CaseRestore          = "restore"
	CaseEtcdutlRestore   = "etcdutl-restore"
	CaseFloorBbolt       = "floor-bbolt"
	CaseCopyHash         = "cp+sha256sum"
)

// Cases are every case, in the order of a report.
var Cases = []string{CaseFloor, CaseFloorBbolt, CaseCopyHash, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore, CaseRestore}

// cgroupCases are the cases ModeCgroup runs: snapshift's, and etcd's restore to compare with.
var cgroupCases = []string{CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore, CaseRestore}

// snapshiftCases are the cases that run snapshift (the peak RSS target's).
var snapshiftCases = []string{CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseRestore}

var caseDescriptions = map[string]string{
	CaseFloor:            "copy of every bucket through snapshift's writer (key bucket laid out page by page), one fsync, trailer",
	CaseTransform:        "snapshift transform, no rules",
	CaseTransformMigrate: "snapshift transform, seed migration",
	CasePlanMigrate:      "snapshift plan, seed migration",
	CaseFusedMigrate:     "snapshift restore with the seed migration applied on the way (fused), of the input",
	CaseRestore:          "snapshift restore of transform-migrate's output",
	CaseEtcdutlRestore:   "etcdutl's restore of the input",
	CaseFloorBbolt:       "copy of every bucket through bbolt's own Put, 16 MiB transactions, one fsync, trailer (no snapshift code)",
	CaseCopyHash:         "the physical limit: cp of the input, fsync of the copy (sync FILE), then sha256sum of the input",
}

// Report is the whole benchmark.
type Report struct {
	Started          time.Time    `json:"started"`
	GoVersion        string       `json:"goVersion"`
	OS               string       `json:"os"`
	CPUs             int          `json:"cpus"`
	GeneratorVersion string       `json:"generatorVersion"`
	Seed             int64        `json:"seed"`
	OrderSeed        int64        `json:"orderSeed"`
	Modes            []string     `json:"modes"`
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
	GeneratedSeconds float64 `json:"generatedSeconds,omitempty"`
	// Modes are the measurements, warm and (Config.Cold) cold.
	Modes []ModeReport `json:"modes"`
}

// ModeReport is one size measured in one mode (ModeWarm, ModeCold).
type ModeReport struct {
	Mode  string       `json:"mode"`
	Cases []CaseReport `json:"cases"`
	// Targets are issue 28's goals, each met or not.
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
	// RatioToBboltFloor is the median of the per-round ratios to floor-bbolt's wall time.
	RatioToBboltFloor float64 `json:"ratioToBboltFloor,omitempty"`
	// Failures are the runs that failed where failing is a result (ModeCgroup), by round.
	Failures []string `json:"failures,omitempty"`
	// PeakCgroupBytes is the highest memory.max_usage_in_bytes of its cgroup (ModeCgroup), and
	// MaxFailcnt the highest memory.failcnt.
	PeakCgroupBytes int64 `json:"peakCgroupBytes,omitempty"`
	MaxFailcnt      int64 `json:"maxFailcnt,omitempty"`
	// MedianUserSeconds and MedianSysSeconds are the medians of the child's CPU times;
	// MedianMajorFaults of its major page faults (pages it waited for the disk to read).
	MedianUserSeconds float64 `json:"medianUserSeconds"`
	MedianSysSeconds  float64 `json:"medianSysSeconds"`
	MedianMajorFaults float64 `json:"medianMajorFaults"`
	// MedianReadBytes is the median of what the child read from the disk.
	MedianReadBytes float64 `json:"medianReadBytes"`
	// MedianPhases are the medians of the phases snapshift reported (--profile), in its order.
	MedianPhases []Phase `json:"medianPhases,omitempty"`
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
	// Position is the case's place in its round's order, from 1.
	Position int `json:"position"`
	Measurement
	RatioToFloor      float64 `json:"ratioToFloor"`
	RatioToBboltFloor float64 `json:"ratioToBboltFloor,omitempty"`
}

// Target is one goal: a ratio (the median over rounds of the per-round ratio) or a peak memory in
// MiB, at most Limit.
type Target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"` // 0: for reference, no goal
	Unit  string  `json:"unit"`  // "x" or "MiB"
	Met   bool    `json:"met"`
	// Note says why a ratio is for reference only.
	Note string `json:"note,omitempty"`
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
	if c.OrderSeed == 0 {
		c.OrderSeed = clockSeed()
	}
	if c.DropCaches == "" {
		c.DropCaches = DefaultDropCaches
	}
	if c.SharedCache == "" {
		c.SharedCache = c.Cache
	}
	if len(c.Cases) == 0 {
		c.Cases = slices.Clone(Cases)
	}
	for _, name := range c.Cases {
		if !slices.Contains(Cases, name) {
			return fmt.Errorf("unknown case %q (cases: %v)", name, Cases)
		}
	}
	if slices.Contains(c.Cases, CaseRestore) && !slices.Contains(c.Cases, CaseTransformMigrate) {
		return fmt.Errorf("case %s reads %s's output: give both", CaseRestore, CaseTransformMigrate)
	}
	if c.CgroupLimit <= 0 {
		c.CgroupLimit = DefaultCgroupLimit
	}
	if c.CgroupTimeout <= 0 {
		c.CgroupTimeout = 10 * time.Minute
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
		CPUs: runtime.NumCPU(), GeneratorVersion: gen.Version, Seed: cfg.Seed, OrderSeed: cfg.OrderSeed, Runs: cfg.Runs, Modes: []string{ModeWarm},
		Notes: []string{
			fmt.Sprintf("cases run in a random order, shuffled anew for every round and mode (order seed %d; --order-seed repeats it); restore comes somewhere after transform-migrate, whose output it reads", cfg.OrderSeed),
			"warm: the case's input is read just before it (not timed); cold: sync(2) and the page cache dropped just before it (not timed)",
			"sync(2) runs before every case (not timed), so that no case pays for the writeback of the one before; every writing case ends with its own fsync, so disk write speed is part of its time",
			"cases run as child processes, all cases once per round and mode; ratios are per round against the baseline (floor, etcdutl-restore) of the same round and mode, then the median",
			"peak RSS is getrusage ru_maxrss and counts mapped file pages; peak RssAnon is sampled every 50ms from /proc/<pid>/status; sys time, major faults and disk read (ru_inblock) are the child's getrusage; major faults count only mapped pages (snapshift and the floor read through mmap), disk read also counts read(2) (etcdutl)",
			"floor: " + caseDescriptions[CaseFloor] + "; it does not check the input's trailer",
			"restore, restore-migrate and etcdutl-restore: member default, revision bump 1000000000, marked compacted; etcdutl-restore and restore-migrate read the input, restore reads transform-migrate's output",
		}}
	var dropper *cacheDropper
	if cfg.Cold || cfg.Cgroup {
		d, err := newCacheDropper(cfg.DropCaches)
		switch {
		case err != nil:
			rep.Notes = append(rep.Notes, "cold not measured: "+err.Error())
		case cfg.Cold:
			dropper = d
			rep.Modes = append(rep.Modes, ModeCold)
		default:
			dropper = d
		}
	}
	var cgroups *memoryCgroups
	if cfg.Cgroup {
		cg, err := newMemoryCgroups(cfg.CgroupLimit)
		if err != nil {
			rep.Notes = append(rep.Notes, "memory cgroup not measured: "+err.Error())
		} else {
			cgroups = cg
			rep.Modes = append(rep.Modes, ModeCgroup)
			rep.Notes = append(rep.Notes, fmt.Sprintf("cgroup: snapshift's cases and etcdutl-restore each in a fresh cgroup v1 memory cgroup, memory.limit_in_bytes %s "+
				"(page cache included; the kernel reclaims it at the limit, counted in memory.failcnt), the page cache dropped just before where it can be; "+
				"a case fails by OOM kill (memory.oom_control oom_kill, SIGKILL), an mmap failure, another error, or by running longer than %s, and the failure is the result", fsutil.FormatSize(cfg.CgroupLimit), cfg.CgroupTimeout))
		}
	}
	rep.Notes = append(rep.Notes, "floor-bbolt: "+caseDescriptions[CaseFloorBbolt]+"; cp+sha256sum: "+caseDescriptions[CaseCopyHash])
	rng := newOrderRNG(cfg.OrderSeed)
	for _, size := range cfg.Sizes {
		for _, profile := range cfg.Profiles {
			sr, err := runSize(ctx, sizeSetup{cfg: cfg, size: size, profile: profile, modes: rep.Modes, rng: rng, dropper: dropper, cgroups: cgroups})
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
	name := inputName(size, seed, profile)
	if profile == gen.ProfileBasic {
		profile = ""
	}
	base := filepath.Join(cacheDir, name)
	keys := gen.SizedKeys(profile, size.Keys) // about the same file size whatever the profile
	path, metaPath := base+".db", base+".json"
	if res, ok := readCacheMeta(base, size, seed, profile); ok {
		return res, false, nil
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
	fmt.Fprintf(log, "[generate] %s: %s, %d entries in %.1fs\n", size.Name, fsutil.FormatSize(res.Size), res.Entries, res.Duration.Seconds())
	return res, true, nil
}

// inputName is the cached input's file name without extension. The basic profile's files keep
// their old names (<size>-seed<N>).
func inputName(size gen.Size, seed int64, profile string) string {
	if profile != "" && profile != gen.ProfileBasic {
		return fmt.Sprintf("%s-%s-seed%d", size.Name, profile, seed)
	}
	return fmt.Sprintf("%s-seed%d", size.Name, seed)
}

// readCacheMeta returns the cached input at base (.db, described by .json) if it is current: the
// same generator version, keys, seed and profile, and the file of the recorded size.
func readCacheMeta(base string, size gen.Size, seed int64, profile string) (*gen.Result, bool) {
	if profile == gen.ProfileBasic {
		profile = ""
	}
	keys := gen.SizedKeys(profile, size.Keys)
	b, err := os.ReadFile(base + ".json")
	if err != nil {
		return nil, false
	}
	var m cacheMeta
	if json.Unmarshal(b, &m) != nil || m.GeneratorVersion != gen.Version || m.Keys != keys || m.Seed != seed || m.Profile != profile || m.Result == nil {
		return nil, false
	}
	if st, err := os.Stat(base + ".db"); err != nil || st.Size() != m.Result.Size {
		return nil, false
	}
	m.Result.Path = base + ".db"
	return m.Result, true
}

// sizeSetup is what one size and profile is measured with.
type sizeSetup struct {
	cfg     Config
	size    gen.Size
	profile string
	modes   []string
	rng     *rand.Rand     // the orders (shared by every size: one seed gives a whole run's orders)
	dropper *cacheDropper  // nil: warm only
	cgroups *memoryCgroups // nil: no ModeCgroup
}

// sizeRun is the measurement of one size in progress.
type sizeRun struct {
	sizeSetup
	in   *gen.Result
	work string
	// cases and ratios are per mode: the case reports, and the per-round ratios of the
	// targets by target name.
	cases  map[string]map[string]*CaseReport
	ratios map[string]map[string][]float64
	// restoreInput: restore's input size is known (transform-migrate's output measured), by mode.
	restoreInput map[string]bool
}

func runSize(ctx context.Context, setup sizeSetup) (*SizeReport, error) {
	cfg := setup.cfg
	inDir := cfg.Cache
	if setup.size.Keys >= SharedFromKeys {
		inDir = cfg.SharedCache
		if err := os.MkdirAll(inDir, 0o755); err != nil {
			return nil, err
		}
	}
	if err := checkDisk(inDir, cfg.Cache, setup.size, cfg.Seed, setup.profile, cfg.KeepFree); err != nil {
		return nil, err
	}
	in, generated, err := Input(ctx, inDir, setup.size, cfg.Seed, setup.profile, cfg.Log)
	if err != nil {
		return nil, err
	}
	sr := &SizeReport{Name: setup.size.Name, Profile: setup.profile, Input: in.Path, InputBytes: in.Size, Keys: in.Keys, LiveKeys: in.LiveKeys, Entries: in.Entries}
	if generated {
		sr.GeneratedSeconds = in.Duration.Seconds()
	}
	work, err := os.MkdirTemp(cfg.Cache, "work-"+setup.size.Name+"-")
	if err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(work)
	}
	r := &sizeRun{sizeSetup: setup, in: in, work: work, cases: map[string]map[string]*CaseReport{}, ratios: map[string]map[string][]float64{}, restoreInput: map[string]bool{}}
	for _, mode := range setup.modes {
		r.cases[mode], r.ratios[mode] = map[string]*CaseReport{}, map[string][]float64{}
		for _, name := range r.modeCases(mode) {
			r.cases[mode][name] = &CaseReport{Name: name, Description: caseDescriptions[name], InputBytes: in.Size, InputEntries: in.Entries}
		}
	}
	for round := 1; round <= cfg.Runs; round++ {
		for _, mode := range modeOrder(r.rng, setup.modes) {
			if err := r.round(ctx, round, mode); err != nil {
				return nil, err
			}
		}
	}
	for _, mode := range setup.modes {
		sr.Modes = append(sr.Modes, r.summarize(mode))
	}
	return sr, nil
}

// round runs every case once in one mode, in a random order, and records the round's
// measurements.
func (r *sizeRun) round(ctx context.Context, round int, mode string) error {
	dir := filepath.Join(r.work, fmt.Sprintf("round%d-%s", round, mode))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	migrated := filepath.Join(dir, "transform-migrate.db")
	outputs := map[string]string{ // removed after their case unless Keep
		CaseFloor: filepath.Join(dir, "floor.db"), CaseTransform: filepath.Join(dir, "transform.db"),
		CaseRestore: filepath.Join(dir, "restore.etcd"), CaseEtcdutlRestore: filepath.Join(dir, "etcdutl-restore.etcd"),
		CaseFusedMigrate: filepath.Join(dir, "restore-migrate.etcd"), CaseFloorBbolt: filepath.Join(dir, "floor-bbolt.db"),
		CaseCopyHash: filepath.Join(dir, "copy.db"),
	}
	seq := roundOrder(r.rng, r.modeCases(mode))
	fmt.Fprintf(r.cfg.Log, "[bench] %s/%s round %d/%d %s: %v\n", r.size.Name, r.profile, round, r.cfg.Runs, mode, seq)
	got, err := r.measureRound(ctx, roundCases{round: round, mode: mode, seq: seq, argv: r.argv(migrated, outputs), outputs: outputs, migrated: migrated})
	if err != nil {
		return err
	}
	if m, ok := got[CaseTransformMigrate]; ok && m.Failure == "" && r.cases[mode][CaseRestore] != nil && !r.restoreInput[mode] {
		r.restoreInput[mode] = true
		// restore reads transform-migrate's output: its throughput is over that file.
		if err := r.setRestoreInput(mode, migrated, []string{CaseRestore}); err != nil {
			return err
		}
	}
	if !r.cfg.Keep {
		os.Remove(migrated)
	}
	// ratio is a/b of this round's wall times, 0 where either is missing or failed.
	ratio := func(a time.Duration, b string) float64 {
		mb, ok := got[b]
		if !ok || mb.Failure != "" || mb.Wall <= 0 {
			return 0
		}
		return a.Seconds() / mb.Wall.Seconds()
	}
	for i, name := range seq {
		m := got[name]
		c := r.cases[mode][name]
		if m.Failure != "" {
			c.Failures = append(c.Failures, fmt.Sprintf("round %d: %s", round, m.Failure))
		}
		c.Runs = append(c.Runs, RunResult{Round: round, Position: i + 1, Measurement: m, RatioToFloor: ratio(m.Wall, CaseFloor), RatioToBboltFloor: ratio(m.Wall, CaseFloorBbolt)})
	}
	ratios := r.ratios[mode]
	add := func(name string, v float64) {
		if v > 0 {
			ratios[name] = append(ratios[name], v)
		}
	}
	if m, ok := got[CaseFusedMigrate]; ok && m.Failure == "" {
		add(targetFused, ratio(m.Wall, CaseEtcdutlRestore))
	}
	a, aok := got[CaseTransformMigrate]
	b, bok := got[CaseRestore]
	if aok && bok && a.Failure == "" && b.Failure == "" {
		add(targetTwoSteps, ratio(a.Wall+b.Wall, CaseEtcdutlRestore))
	}
	if m, ok := got[CasePlanMigrate]; ok && m.Failure == "" {
		add(targetPlanBbolt, ratio(m.Wall, CaseFloorBbolt))
	}
	if m, ok := got[CaseCopyHash]; ok {
		add(targetCopyHash, ratio(m.Wall, CaseFloorBbolt))
	}
	return nil
}

// modeCases are the cases a mode runs.
func (r *sizeRun) modeCases(mode string) []string {
	if mode != ModeCgroup {
		return slices.Clone(r.cfg.Cases)
	}
	return slices.DeleteFunc(slices.Clone(r.cfg.Cases), func(c string) bool { return !slices.Contains(cgroupCases, c) })
}

// argv is every case's command line in a round whose transform-migrate writes migrated.
func (r *sizeRun) argv(migrated string, outputs map[string]string) map[string][]string {
	in := r.in.Path
	migrate := []string{"--service-cidr", NewServiceCIDR, "--pod-network-cidr", NewPodNetworkCIDR}
	snapshift := func(args ...string) []string { return append(slices.Clone(r.cfg.Snapshift), args...) }
	childCmd := func(args ...string) []string { return append(slices.Clone(r.cfg.Child), args...) }
	return map[string][]string{
		CaseFloor:            childCmd("floor", in, outputs[CaseFloor]),
		CaseTransform:        snapshift("transform", in, "--out", outputs[CaseTransform], "--quiet", "--profile"),
		CaseTransformMigrate: snapshift(append([]string{"transform", in, "--out", migrated, "--quiet", "--profile"}, migrate...)...),
		CasePlanMigrate:      snapshift(append([]string{"plan", in, "--quiet", "--profile"}, migrate...)...),
		CaseFusedMigrate:     snapshift(append([]string{"restore", in, "--data-dir", outputs[CaseFusedMigrate], "--quiet", "--profile"}, migrate...)...),
		CaseRestore:          snapshift("restore", migrated, "--data-dir", outputs[CaseRestore]),
		CaseEtcdutlRestore:   childCmd("etcdutl-restore", in, outputs[CaseEtcdutlRestore]),
		CaseFloorBbolt:       childCmd("floor-bbolt", in, outputs[CaseFloorBbolt]),
		CaseCopyHash:         {"sh", "-c", `cp --reflink=never -- "$1" "$2" && sync -- "$2" && sha256sum -- "$1" >/dev/null`, "cp+sha256sum", in, outputs[CaseCopyHash]},
	}
}

// roundCases are the cases of one round and mode, in the order they run.
type roundCases struct {
	round    int
	mode     string
	seq      []string
	argv     map[string][]string
	outputs  map[string]string
	migrated string // transform-migrate's output, restore's input
}

// measureRound runs the cases of rc in order, each as a child process, and removes each case's
// output after it unless Keep.
func (r *sizeRun) measureRound(ctx context.Context, rc roundCases) (map[string]Measurement, error) {
	got := map[string]Measurement{}
	for _, name := range rc.seq {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if name == CaseRestore {
			if m := got[CaseTransformMigrate]; m.Failure != "" {
				got[name] = Measurement{Failure: "skipped: transform-migrate failed"}
				continue
			}
		}
		if err := r.prepareCase(rc, name); err != nil {
			return nil, err
		}
		m, err := r.measure(ctx, rc.mode, rc.argv[name])
		if err != nil {
			return nil, fmt.Errorf("round %d %s, %s: %w", rc.round, rc.mode, name, err)
		}
		got[name] = m
		fmt.Fprintf(r.cfg.Log, "[bench] %s/%s round %d/%d %s  %-18s %7.2fs  sys %5.2fs  majflt %6d  rss %s  anon %s%s\n", r.size.Name, r.profile,
			rc.round, r.cfg.Runs, rc.mode, name, m.Wall.Seconds(), m.Sys.Seconds(), m.MajorFaults, fsutil.FormatSize(m.MaxRSS), fsutil.FormatSize(m.PeakRssAnon), cgroupLog(m))
		if out := rc.outputs[name]; out != "" && !r.cfg.Keep {
			os.RemoveAll(out)
		}
	}
	return got, nil
}

// measure runs one case's argv, in ModeCgroup inside a fresh memory cgroup, removed after.
func (r *sizeRun) measure(ctx context.Context, mode string, argv []string) (Measurement, error) {
	if mode != ModeCgroup {
		return Measure(ctx, r.cfg.Child, argv)
	}
	dir, err := r.cgroups.create()
	if err != nil {
		return Measurement{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CgroupTimeout)
	m, err := MeasureIn(cctx, r.cfg.Child, dir, argv)
	cancel()
	if err != nil && ctx.Err() == nil {
		// Timed out, or the launcher itself died (the OOM killer may pick it too): the cgroup
		// says what it saw.
		if u, uerr := readCgroupUsage(dir); uerr == nil {
			if errors.Is(cctx.Err(), context.DeadlineExceeded) {
				m = Measurement{Cgroup: u, Wall: r.cfg.CgroupTimeout, Failure: fmt.Sprintf("did not finish in %s (killed; memory.failcnt %d: reclaiming at the limit)", r.cfg.CgroupTimeout, u.Failcnt)}
			} else {
				m = Measurement{Cgroup: u}
				m.Failure = classifyFailure(m, fmt.Errorf("the launcher failed: %w", err))
			}
			err = nil
		}
	}
	if rerr := r.cgroups.remove(dir); err == nil {
		err = rerr
	}
	return m, err
}

// cgroupLog is the cgroup part of a case's progress line.
func cgroupLog(m Measurement) string {
	s := ""
	if m.Cgroup != nil {
		s = fmt.Sprintf("  cgroup peak %s failcnt %d oom_kill %d", fsutil.FormatSize(m.Cgroup.MaxUsageBytes), m.Cgroup.Failcnt, m.Cgroup.OOMKills)
	}
	if m.Failure != "" {
		s += "  FAILED: " + m.Failure
	}
	return s
}

// prepareCase sets the page cache up for a case (not timed): cold, dropped; warm, the case's
// input read. Either way what earlier cases (and other processes) left dirty is written back
// first, so that a case does not pay for its predecessor's writeback.
func (r *sizeRun) prepareCase(rc roundCases, name string) error {
	if rc.mode == ModeCold || (rc.mode == ModeCgroup && r.dropper != nil) {
		return r.dropper.drop() // syncs first
	}
	syscall.Sync()
	input := r.in.Path
	if name == CaseRestore {
		input = rc.migrated
	}
	return warm(input)
}

// setRestoreInput makes the restores' input transform-migrate's output.
func (r *sizeRun) setRestoreInput(mode, migrated string, restores []string) error {
	st, err := os.Stat(migrated)
	if err != nil {
		return err
	}
	n, err := entries(migrated)
	if err != nil {
		return err
	}
	for _, name := range restores {
		r.cases[mode][name].InputBytes, r.cases[mode][name].InputEntries = st.Size(), n
	}
	return nil
}

// summarize is one mode's per-case medians, peaks and throughputs, and its targets.
func (r *sizeRun) summarize(mode string) ModeReport {
	mr := ModeReport{Mode: mode}
	for _, name := range Cases {
		c := r.cases[mode][name]
		if c == nil {
			continue
		}
		var walls, ratios, bratios, users, syss, majs, reads []float64
		for _, run := range c.Runs {
			if run.Cgroup != nil {
				c.PeakCgroupBytes = max(c.PeakCgroupBytes, run.Cgroup.MaxUsageBytes)
				c.MaxFailcnt = max(c.MaxFailcnt, run.Cgroup.Failcnt)
			}
			if run.Failure != "" {
				continue
			}
			walls = append(walls, run.Wall.Seconds())
			if run.RatioToFloor > 0 {
				ratios = append(ratios, run.RatioToFloor)
			}
			if run.RatioToBboltFloor > 0 {
				bratios = append(bratios, run.RatioToBboltFloor)
			}
			users, syss = append(users, run.User.Seconds()), append(syss, run.Sys.Seconds())
			majs, reads = append(majs, float64(run.MajorFaults)), append(reads, float64(run.ReadBytes))
			c.PeakRSSBytes = max(c.PeakRSSBytes, run.MaxRSS)
			c.PeakRssAnonBytes = max(c.PeakRssAnonBytes, run.PeakRssAnon)
		}
		c.MedianSeconds, c.RatioToFloor, c.RatioToBboltFloor = median(walls), median(ratios), median(bratios)
		c.MedianUserSeconds, c.MedianSysSeconds, c.MedianMajorFaults = median(users), median(syss), median(majs)
		c.MedianPhases, c.MedianReadBytes = medianPhases(c.Runs), median(reads)
		if c.MedianSeconds > 0 {
			c.MBPerSecond = float64(c.InputBytes) / 1e6 / c.MedianSeconds
			c.KeysPerSecond = float64(c.InputEntries) / c.MedianSeconds
		}
		mr.Cases = append(mr.Cases, *c)
	}
	mr.Targets = r.targets(mode)
	return mr
}

// medianPhases is each phase's median over the runs that reported it, in the first run's order.
func medianPhases(runs []RunResult) []Phase {
	var names []string
	by := map[string][]float64{}
	for _, run := range runs {
		for _, p := range run.Phases {
			if _, ok := by[p.Name]; !ok {
				names = append(names, p.Name)
			}
			by[p.Name] = append(by[p.Name], p.Seconds)
		}
	}
	var out []Phase
	for _, n := range names {
		out = append(out, Phase{Name: n, Seconds: median(by[n])})
	}
	return out
}

// Target names.
const (
	targetFused     = "restore-migrate / etcdutl-restore"
	targetTwoSteps  = "(transform-migrate + restore) / etcdutl-restore"
	targetPlan      = "plan-migrate / floor"
	targetMigrate   = "transform-migrate / floor"
	targetPlanBbolt = "plan-migrate / floor-bbolt"
	targetCopyHash  = "cp+sha256sum / floor-bbolt"
)

// Issue 28's limits.
const (
	limitFused   = 1.2 // on medium and larger
	limitPlan    = 0.35
	limitMigrate = 1.3 // issue 16's, kept
	limitAnonMiB = 128
	// fusedFromKeys is the smallest size the fused target holds for (medium): below, fixed costs
	// (etcd's restore of the small snapshot, a 64 MB WAL) dominate a run of a fraction of a second.
	fusedFromKeys = 200_000
)

// Issue 39's limits.
const (
	// limitFusedCeiling is the one pass against etcd's restore at etcd's suggested maximum (8 GiB,
	// SharedFromKeys and up), cold.
	limitFusedCeiling = 0.8
	// limitPlanBbolt is plan against the floor made with bbolt's own writer.
	limitPlanBbolt = 0.35
	// limitRSSMiB is every snapshift case's peak RSS (ru_maxrss), at every size.
	limitRSSMiB = 128
)

// targets are the goals for this size in one mode: issue 28's (the fused restore near etcd's
// restore of the same input, plan and the seed migration near the floor, the peak anonymous
// memory of the migrations bounded) and issue 39's (the one pass at 0.8 of etcd's restore cold
// at 8 GiB, plan at 0.35 of the bbolt floor, every snapshift case's peak RSS at most 128 MiB).
// A target whose cases did not run is left out.
func (r *sizeRun) targets(mode string) []Target {
	ran := func(names ...string) bool {
		for _, n := range names {
			if c := r.cases[mode][n]; c == nil || len(c.Runs) == 0 {
				return false
			}
		}
		return true
	}
	ratio := func(name string, values []float64, limit float64) Target {
		v := median(values)
		return Target{Name: name, Value: v, Limit: limit, Unit: "x", Met: v <= limit && len(values) > 0}
	}
	floorRatios := func(c string) []float64 {
		var out []float64
		for _, run := range r.cases[mode][c].Runs {
			if run.RatioToFloor > 0 {
				out = append(out, run.RatioToFloor)
			}
		}
		return out
	}
	var out []Target
	if ran(CaseFusedMigrate, CaseEtcdutlRestore) {
		fused := ratio(targetFused, r.ratios[mode][targetFused], limitFused)
		if r.size.Keys < fusedFromKeys {
			fused = Target{Name: targetFused, Value: fused.Value, Unit: "x", Met: true, Note: "the target holds from medium up"}
		}
		out = append(out, fused)
		ceiling := ratio(targetFused+" (8 GiB)", r.ratios[mode][targetFused], limitFusedCeiling)
		if r.size.Keys < SharedFromKeys || mode != ModeCold {
			ceiling = Target{Name: ceiling.Name, Value: ceiling.Value, Unit: "x", Met: true, Note: "issue 39's 0.8 holds cold at 8 GiB"}
		}
		out = append(out, ceiling)
	}
	if ran(CaseTransformMigrate, CaseRestore, CaseEtcdutlRestore) {
		out = append(out, Target{Name: targetTwoSteps, Value: median(r.ratios[mode][targetTwoSteps]), Unit: "x", Met: true, Note: "the two steps the fused restore replaces"})
	}
	if ran(CasePlanMigrate, CaseFloor) {
		out = append(out, ratio(targetPlan, floorRatios(CasePlanMigrate), limitPlan))
	}
	if ran(CaseTransformMigrate, CaseFloor) {
		out = append(out, ratio(targetMigrate, floorRatios(CaseTransformMigrate), limitMigrate))
	}
	if ran(CasePlanMigrate, CaseFloorBbolt) {
		out = append(out, ratio(targetPlanBbolt, r.ratios[mode][targetPlanBbolt], limitPlanBbolt))
	}
	if ran(CaseCopyHash, CaseFloorBbolt) {
		out = append(out, Target{Name: targetCopyHash, Value: median(r.ratios[mode][targetCopyHash]), Unit: "x", Met: true, Note: "the physical limit beside the bbolt floor"})
	}
	for _, c := range []string{CaseTransformMigrate, CaseFusedMigrate} {
		if ran(c) {
			mib := float64(r.cases[mode][c].PeakRssAnonBytes) / (1 << 20)
			out = append(out, Target{Name: "peak RssAnon " + c, Value: mib, Limit: limitAnonMiB, Unit: "MiB", Met: mib <= limitAnonMiB})
		}
	}
	for _, c := range snapshiftCases {
		if ran(c) {
			mib := float64(r.cases[mode][c].PeakRSSBytes) / (1 << 20)
			out = append(out, Target{Name: "peak RSS " + c, Value: mib, Limit: limitRSSMiB, Unit: "MiB", Met: mib <= limitRSSMiB})
		}
	}
	if mode == ModeCgroup {
		for _, c := range r.modeCases(mode) {
			if ran(c) {
				cr := r.cases[mode][c]
				t := Target{Name: "succeeds in the memory cgroup: " + c, Unit: "runs", Value: float64(len(cr.Runs) - len(cr.Failures)), Limit: float64(len(cr.Runs)), Met: len(cr.Failures) == 0}
				if len(cr.Failures) > 0 {
					t.Note = strings.Join(cr.Failures, "; ")
				}
				out = append(out, t)
			}
		}
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

// WriteTable prints the report as a table: per size and mode the cases, then every target met or
// NOT met with its mode, and a summary line with the order seed.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "snapbench: %s, %d CPUs, %s, generator v%s, seed %d, order seed %d, %d run(s) per case and mode (median), modes %v\n",
		r.OS, r.CPUs, r.GoVersion, r.GeneratorVersion, r.Seed, r.OrderSeed, r.Runs, r.Modes)
	met, missed := 0, 0
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "\n%s/%s: %s, %d keys (%d live), %d key entries", s.Name, s.Profile, fsutil.FormatSize(s.InputBytes), s.Keys, s.LiveKeys, s.Entries)
		if s.GeneratedSeconds > 0 {
			fmt.Fprintf(w, ", generated in %.1fs", s.GeneratedSeconds)
		}
		fmt.Fprintln(w)
		for _, m := range s.Modes {
			writeMode(w, m)
			for _, t := range m.Targets {
				switch {
				case t.Limit == 0:
				case t.Met:
					met++
				default:
					missed++
				}
			}
		}
	}
	fmt.Fprintf(w, "\ntargets of issues 28 and 39 (order seed %d, modes %v): %d met, %d NOT met\n", r.OrderSeed, r.Modes, met, missed)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// writeMode prints one mode of one size: the cases and the targets.
func writeMode(w io.Writer, m ModeReport) {
	fmt.Fprintf(w, "  [%s]\n", m.Mode)
	fmt.Fprintf(w, "  %-18s %9s %8s %8s %8s %10s %8s %8s %9s %10s %12s\n", "case", "median", "x floor", "x bbolt", "MB/s", "keys/s", "sys", "majflt", "disk read", "peak RSS", "peak RssAnon")
	ratio := func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, c := range m.Cases {
		fmt.Fprintf(w, "  %-18s %8.2fs %8s %8s %8.0f %10.0f %7.2fs %8.0f %9s %10s %12s", c.Name, c.MedianSeconds, ratio(c.RatioToFloor), ratio(c.RatioToBboltFloor), c.MBPerSecond,
			c.KeysPerSecond, c.MedianSysSeconds, c.MedianMajorFaults, fsutil.FormatSize(int64(c.MedianReadBytes)), fsutil.FormatSize(c.PeakRSSBytes), fsutil.FormatSize(c.PeakRssAnonBytes))
		if c.PeakCgroupBytes > 0 {
			fmt.Fprintf(w, "  cgroup peak %s, failcnt %d", fsutil.FormatSize(c.PeakCgroupBytes), c.MaxFailcnt)
		}
		if len(c.Failures) > 0 {
			fmt.Fprintf(w, "  FAILED %d of %d", len(c.Failures), len(c.Runs))
		}
		fmt.Fprintln(w)
	}
	for _, c := range m.Cases {
		if len(c.MedianPhases) == 0 || (c.Name != CaseFusedMigrate && c.Name != CaseTransformMigrate && c.Name != CasePlanMigrate) {
			continue
		}
		fmt.Fprintf(w, "  [%s] phases of %s (medians):", m.Mode, c.Name)
		for _, p := range c.MedianPhases {
			if p.Seconds >= 0.005 {
				fmt.Fprintf(w, " %s %.2fs", p.Name, p.Seconds)
			}
		}
		fmt.Fprintln(w)
	}
	for _, t := range m.Targets {
		verdict := "met"
		if !t.Met {
			verdict = "NOT met"
		}
		switch {
		case t.Limit == 0:
			fmt.Fprintf(w, "  [%s] for reference %-41s  %6.2fx   (%s)\n", m.Mode, t.Name, t.Value, t.Note)
		case t.Unit == "runs":
			fmt.Fprintf(w, "  [%s] target %-48s %.0f of %.0f runs  %s %s\n", m.Mode, t.Name, t.Value, t.Limit, verdict, t.Note)
		case t.Unit == "MiB":
			fmt.Fprintf(w, "  [%s] target %-48s <= %4.0f MiB: %6.0f MiB  %s\n", m.Mode, t.Name, t.Limit, t.Value, verdict)
		default:
			fmt.Fprintf(w, "  [%s] target %-48s <= %4.2fx:    %6.2fx   %s\n", m.Mode, t.Name, t.Limit, t.Value, verdict)
		}
	}
}
