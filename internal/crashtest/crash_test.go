//go:build crash

package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/gen"
)

func itoa(n int) string { return strconv.Itoa(n) }

// row is one crash and its aftermath, for the summary table.
type row struct {
	scenario, fault string
	reached         bool
	states          string // the outputs' states after the crash
	leftovers       int    // temporaries of the killed run after the crash
	clean           bool   // none of them left after the next run
	rerun           string // ok, refused
	failed          bool
}

var (
	rowsMu sync.Mutex
	rows   []row
	start  = time.Now()
)

func record(r row) {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	rows = append(rows, r)
}

func TestMain(m *testing.M) {
	code := m.Run()
	printTable()
	os.Exit(code)
}

// printTable prints, per command and fault, how many runs there were and
// what they left: `crash:` lines, kept by make crash's filter.
func printTable() {
	type agg struct {
		runs, reached, intact, failed, leftovers, clean, ok, refused int
		states                                                       map[string]int
	}
	by := map[string]*agg{}
	for _, r := range rows {
		cmd := r.scenario
		key := cmd + "\t" + r.fault
		a := by[key]
		if a == nil {
			a = &agg{states: map[string]int{}}
			by[key] = a
		}
		a.runs++
		if r.reached {
			a.reached++
		}
		if r.failed {
			a.failed++
		}
		if r.leftovers > 0 {
			a.leftovers++
		}
		if r.clean {
			a.clean++
		}
		switch r.rerun {
		case "ok":
			a.ok++
		case "refused":
			a.refused++
		}
		for _, s := range strings.Split(r.states, ",") {
			a.states[s]++
		}
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("crash: scenario\tfault\truns\tcrashed\toutputs after the crash\tleft temporaries\tnone left after rerun\trerun ok/refused\tfailed")
	for _, k := range keys {
		a := by[k]
		var st []string
		for _, s := range []string{stAbsent, stOld, stComplete, stHalf} {
			if a.states[s] > 0 {
				st = append(st, fmt.Sprintf("%s %d", s, a.states[s]))
			}
		}
		fmt.Printf("crash: %s\t%d\t%d\t%s\t%d\t%d\t%d/%d\t%d\n", k, a.runs, a.reached, strings.Join(st, ", "), a.leftovers, a.clean, a.ok, a.refused, a.failed)
	}
	fmt.Printf("crash: %d runs in %s\n", len(rows), time.Since(start).Round(time.Second))
}

func needBinaries(t *testing.T) {
	t.Helper()
	if plainBin == "" || fpBin == "" {
		t.Fatal("SNAPSHIFT_BIN and SNAPSHIFT_FAILPOINTS_BIN are not set: run `make crash`")
	}
}

// prepare takes the input hashes and the outputs' states before, runs the
// command once with the plain binary for the reference (what etcd serves
// from each restored member), and once counting the failpoints' hits.
func (s *scenario) prepare(t *testing.T) []string {
	t.Helper()
	for _, in := range s.inputs {
		s.inputSHA = append(s.inputSHA, sha(t, filepath.Join(s.template, in)))
	}
	for _, o := range s.outputs {
		b := ""
		switch o.kind {
		case "snapshot":
			b = sha(t, filepath.Join(s.template, o.path))
		case "certs":
			b = sha(t, filepath.Join(s.template, o.path, "apiserver.key")) + sha(t, filepath.Join(s.template, o.path, "apiserver.crt"))
		}
		s.before = append(s.before, b)
	}
	ref := t.TempDir()
	copyTree(t, s.template, ref)
	if r := run(t, plainBin, ref, runOpts{}, s.args...); r.code != 0 {
		t.Fatalf("reference run: exit %d: %s", r.code, r.stderr)
	}
	for _, o := range s.outputs {
		var m memberState
		if o.kind == "member" && o.wal == "" {
			m = startMember(t, filepath.Join(ref, o.path), o)
		}
		s.ref = append(s.ref, m)
	}
	counting := t.TempDir()
	copyTree(t, s.template, counting)
	return stepLog(t, counting, s.args, runOpts{})
}

// check checks the input and every output of a work dir; half states are
// allowed only when halfOK (a kill between the renames of a set).
func (s *scenario) check(t *testing.T, work string, halfOK bool) []string {
	t.Helper()
	for i, in := range s.inputs {
		if got := sha(t, filepath.Join(work, in)); got != s.inputSHA[i] {
			t.Errorf("the input %s changed: sha256 %s, was %s", in, got, s.inputSHA[i])
		}
	}
	var states []string
	for i, o := range s.outputs {
		var st string
		switch o.kind {
		case "snapshot":
			st = checkSnapshot(t, work, o, s.before[i])
		case "member":
			st = checkMember(t, work, o, s.ref[i])
		case "bundle":
			st = checkBundle(t, work, o)
		case "certs":
			st = checkCertPair(t, work, o, s.before[i])
		case "manifests":
			st = checkManifests(t, work, o)
		}
		// A WAL dir published before its data dir is allowed at any step
		// between the two (checkMember requires the marker that makes the
		// next run remove it); a certificate or manifest set only between
		// its renames.
		if st == stHalf && !halfOK && o.wal == "" {
			t.Errorf("%s is half written", o.path)
		}
		states = append(states, st)
	}
	return states
}

// rerun runs the command again with the plain binary: it must succeed or
// refuse in one line, leave no file of the killed run (pid) and no
// leftover at all, and then every output must be complete.
func (s *scenario) rerun(t *testing.T, work string, pid int) string {
	t.Helper()
	r := run(t, plainBin, work, runOpts{}, s.args...)
	verdict := "ok"
	switch {
	case r.code == 4 && oneLine(r.stderr):
		verdict = "refused"
	case r.code != 0:
		t.Errorf("rerun: exit %d: %s", r.code, r.stderr)
		verdict = "failed"
	}
	if left := filesOf(work, pid); len(left) > 0 {
		t.Errorf("after the rerun, files of the killed run (pid %d) are left: %v", pid, left)
	}
	if ls, _ := fsutil.FindLeftoversUnder(work); len(ls) > 0 {
		t.Errorf("after the rerun, leftovers: %+v", ls)
	}
	for i, st := range s.check(t, work, false) {
		if st != stComplete {
			t.Errorf("after the rerun (%s), %s is %s", verdict, s.outputs[i].path, st)
		}
	}
	return verdict
}

// crashOnce runs the failpoint binary in a fresh copy of the template with
// env (a failpoint's term), or the plain one killed after killAfter, then
// checks everything and reruns.
func (s *scenario) crashOnce(t *testing.T, fault string, o runOpts, halfOK bool) {
	t.Helper()
	work := t.TempDir()
	copyTree(t, s.template, work)
	bin := fpBin
	if o.kill > 0 || o.fsize > 0 {
		bin = plainBin
	}
	r := run(t, bin, work, o, s.args...)
	// A panic is exit 2, or an error where a recover() took it (the
	// snapshot reader's, made for bbolt's panics on a corrupt file).
	reached := r.signal == syscall.SIGKILL || (r.code != 0 && strings.Contains(r.stderr, "failpoint panic: crash")) || (o.fsize > 0 && r.code != 0)
	if !reached && r.code != 0 {
		t.Errorf("exit %d, signal %v: %s", r.code, r.signal, r.stderr)
	}
	if o.fsize > 0 && r.code != 0 && !oneLine(r.stderr) {
		t.Errorf("a full disk: not one line: %q", r.stderr)
	}
	states := s.check(t, work, halfOK)
	left := len(filesOf(work, r.pid))
	if o.fsize > 0 && left > 0 {
		t.Errorf("a run that failed on a full disk left %d temporaries", left)
	}
	verdict := s.rerun(t, work, r.pid)
	record(row{scenario: s.name, fault: fault, reached: reached, states: strings.Join(states, ","), leftovers: left,
		clean: len(filesOf(work, r.pid)) == 0, rerun: verdict, failed: t.Failed()})
}

// TestCrashAtFailpoints kills every command at every step (each
// failpoint's first, second, middle and last hit), by SIGKILL and by a
// panic, on every input.
func TestCrashAtFailpoints(t *testing.T) {
	needBinaries(t)
	// On the sample every command is killed at the first, second, middle
	// and last hit of every failpoint, by SIGKILL and by a panic; the other
	// inputs take the same paths with more data: SIGKILL at the first and
	// last hit.
	var all []*scenario
	for i, in := range inputs(t, t.TempDir(), 3000) {
		for _, s := range snapshotScenarios(t, in) {
			s.few, s.killOnly = i > 0, i > 0
			all = append(all, s)
		}
	}
	all = append(all, sampleScenarios(t)...)
	for _, s := range all {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			acts := []string{"kill", "panic"}
			if s.killOnly {
				acts = acts[:1]
			}
			for _, p := range points(s.prepare(t), s.few) {
				for _, act := range acts {
					t.Run(p.String()+"/"+act, func(t *testing.T) {
						s.crashOnce(t, act, runOpts{env: []string{"GOFAIL_FAILPOINTS=" + p.term(act)}}, p.between())
					})
				}
			}
		})
	}
}

// TestRandomKills SIGKILLs transform and the one-pass restore at random
// moments on a larger generated snapshot (churned history).
func TestRandomKills(t *testing.T) {
	needBinaries(t)
	big := input{name: "big", path: filepath.Join(t.TempDir(), "big.db")}
	if _, err := gen.Generate(context.Background(), gen.Config{Path: big.path, Keys: 40000, Seed: 23, Profile: gen.ProfileChurn}); err != nil {
		t.Fatal(err)
	}
	for _, s := range snapshotScenarios(t, big) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(23, uint64(time.Now().UnixNano())))
			s.prepare(t)
			ref := t.TempDir()
			copyTree(t, s.template, ref)
			took := run(t, plainBin, ref, runOpts{}, s.args...).took
			for i := range 6 {
				at := time.Duration(float64(took) * (0.05 + rng.Float64()))
				t.Run(fmt.Sprintf("kill-%d-at-%s", i, at.Round(time.Millisecond)), func(t *testing.T) {
					s.crashOnce(t, "random SIGKILL", runOpts{kill: at}, false)
				})
			}
		})
	}
}

// TestDiskFull runs every command with the file size limited at random
// sizes (writes fail with EFBIG, as on a full disk).
func TestDiskFull(t *testing.T) {
	needBinaries(t)
	sample := input{name: "sample", path: samplePath}
	all := append(snapshotScenarios(t, sample), sampleScenarios(t)...)
	rng := rand.New(rand.NewPCG(23, uint64(time.Now().UnixNano())))
	for _, s := range all {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.prepare(t)
			for i := range 4 {
				// One size in each of 64 B-512 B (a key, a manifest),
				// 2-16 KiB, 64-512 KiB and 2-16 MiB (a WAL, a database).
				size := int64(64) << (5*i + rng.IntN(3))
				size += rng.Int64N(size)
				t.Run(fmt.Sprintf("fsize-%d", size), func(t *testing.T) {
					s.crashOnce(t, "disk full", runOpts{fsize: size}, false)
				})
			}
		})
	}
}
