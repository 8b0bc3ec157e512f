package app

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func lastLine(s string) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\r\033[K")
	return l[len(l)-1]
}
func (r *renderer) with(c *fakeClock) *renderer { r.now = c.now; return r }

// TestProgressBar: on a terminal the first tick shows no rate or ETA (issue 35: "ETA 0s,
// 1.3 TiB/s"), later ticks do, and a phase whose total was an estimate ends at 100%.
func TestProgressBar(t *testing.T) {
	var out bytes.Buffer
	c := newFakeClock()
	r := (&renderer{w: &out, tty: true}).with(c)
	r.Start("index", "bytes", 100<<20)
	c.add(time.Millisecond)
	r.Add(4 << 20)
	first := lastLine(out.String())
	if strings.Contains(first, "ETA") || strings.Contains(first, "/s") || !strings.Contains(first, "4%") {
		t.Errorf("first tick %q: want 4%% and no rate or ETA", first)
	}
	c.add(2 * time.Second)
	r.Add(40 << 20)
	if l := lastLine(out.String()); !strings.Contains(l, "44%") || !strings.Contains(l, "ETA 3s") || !strings.Contains(l, "MiB/s") {
		t.Errorf("tick after 2s %q: want 44%%, ETA 3s and a rate", l)
	}
	c.add(time.Second)
	r.Add(44 << 20) // 88 MiB of an estimated 100 MiB: the phase ends here
	r.Done()
	if l := strings.TrimSpace(lastLine(out.String())); !strings.HasPrefix(l, "[index] #################### 100% 88.0 MiB") || !strings.HasSuffix(l, " in 3.001s") {
		t.Errorf("final line %q: want a full bar at 100%% with the amount done and the time", l)
	}
}

// TestProgressLinesWithoutTerminal: without a terminal (CI, nohup) a long phase prints a line
// after a second and then every few seconds, not only when it ends (issue 35: runs looked hung),
// and a short one prints only its end.
func TestProgressLinesWithoutTerminal(t *testing.T) {
	var out bytes.Buffer
	c := newFakeClock()
	r := (&renderer{w: &out}).with(c)
	r.Start("stream", "keys", 1000)
	for i := 0; i < 120; i++ { // 12 s, a tick every 100 ms
		c.add(100 * time.Millisecond)
		r.Add(5)
	}
	r.Done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || lines[0] != "[stream]   5% 50 keys of 1000 keys ETA 19s, 50 keys/s" ||
		!strings.HasPrefix(lines[1], "[stream]  30% 300 keys") || !strings.HasPrefix(lines[2], "[stream]  55% 550 keys") || lines[3] != "[stream] 600 keys in 12s" {
		t.Errorf("lines:\n%s\nwant one at 1 s, 6 s, 11 s and the end", out.String())
	}
	out.Reset()
	r.Start("open", "bytes", 0)
	c.add(900 * time.Millisecond)
	r.Add(10)
	r.Done()
	if got := out.String(); got != "[open] 10 B in 900ms\n" {
		t.Errorf("short phase: %q", got)
	}
}

// TestPlanPhasesOnce: every phase of a plan is reported once (issue 35: plan, which streams
// beside the input's hash, printed "[transform] N keys in T" twice and its index never).
func TestPlanPhasesOnce(t *testing.T) {
	in := copySample(t)
	for _, args := range [][]string{
		{"plan", in, "--service-cidr", newSvc},
		{"transform", in, "--out", filepath.Join(t.TempDir(), "out.db"), "--service-cidr", newSvc},
	} {
		r := run(t, args...)
		if r.code != ExitOK {
			t.Fatalf("%s: exit %d: %s", args[0], r.code, r.stderr)
		}
		seen := map[string]int{}
		for _, l := range r.stderrLines() {
			if phase, _, ok := strings.Cut(l, "]"); ok && strings.HasPrefix(phase, "[") {
				seen[phase[1:]]++
			}
		}
		for _, p := range []string{"index", "transform"} {
			if seen[p] != 1 {
				t.Errorf("%s: phase %s reported %d times:\n%s", args[0], p, seen[p], r.stderr)
			}
		}
	}
}

// TestProgressPipedFirstLineSoon: without a terminal (a pipe, CI) the first line of a long phase
// comes within a second of its start, not after lineEvery (issue 52 item 8: five silent
// seconds), the next ones every lineEvery; every amount of bytes is in human sizes, the phase's
// end and an Ended phase's too ("[index] 108212 bytes in 0s" before).
func TestProgressPipedFirstLineSoon(t *testing.T) {
	var out bytes.Buffer
	c := newFakeClock()
	start := c.t
	r := (&renderer{w: &out}).with(c)
	r.Start("index", "bytes", 4<<30)
	var first time.Duration
	for i := 0; i < 34; i++ { // 120 MiB every 100 ms: 3.4 s, 3.98 GiB
		c.add(100 * time.Millisecond)
		r.Add(120 << 20)
		if first == 0 && out.Len() > 0 {
			first = c.t.Sub(start)
		}
	}
	r.Done()
	if first == 0 || first > time.Second {
		t.Errorf("first line after %s, want within a second:\n%s", first, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != "[index]  29% 1.17 GiB of 4.00 GiB ETA 2s, 1.17 GiB/s" || lines[1] != "[index] 3.98 GiB in 3.4s" {
		t.Errorf("lines:\n%s\nwant one at 1 s and the end, in GiB", out.String())
	}
	out.Reset()
	r.Ended("index", "bytes", 108212, 12*time.Millisecond)
	if got := out.String(); got != "[index] 106 KiB in 12ms\n" {
		t.Errorf("ended phase: %q", got)
	}

	// A run whose index takes 0.6 s: its end is printed after the hash, so the next phase's
	// first line comes a second after the start of the run, not a second after its own.
	out.Reset()
	c = newFakeClock()
	start = c.t
	r = (&renderer{w: &out, said: c.t}).with(c)
	c.add(200 * time.Millisecond) // opening the input
	r.Start("index", "bytes", 1<<30)
	for i := 0; i < 6; i++ {
		c.add(100 * time.Millisecond)
		r.Add(150 << 20)
	}
	r.Finished() // its Done is held
	r.Start("transform", "keys", 500_000)
	first = 0
	for i := 0; i < 20 && first == 0; i++ {
		c.add(100 * time.Millisecond)
		r.Add(20_000)
		if out.Len() > 0 {
			first = c.t.Sub(start)
		}
	}
	if first == 0 || first > time.Second || out.String() != "[transform]   8% 40000 keys of 500000 keys\n" {
		t.Errorf("after a held index of 0.6 s, the first line came after %s: %q; want the transform's at 1 s", first, out.String())
	}
}

// TestProgressBarsEndAt100: on a terminal a phase whose total was an estimate (the index: its
// bytes are the key bucket's, its total the file's) and whose Done is held back until the hash
// matched is drawn at 100% with the amount it did as soon as its work is over, and its final
// line (Ended, after the next phase) is at 100% too (issue 52 item 8: it stopped at 81-86%).
func TestProgressBarsEndAt100(t *testing.T) {
	var out bytes.Buffer
	c := newFakeClock()
	r := (&renderer{w: &out, tty: true}).with(c)
	r.Start("index", "bytes", 100<<20)
	for i := 0; i < 42; i++ { // 2 MiB every 50 ms: 84 MiB, every other tick drawn
		c.add(50 * time.Millisecond)
		r.Add(2 << 20)
	}
	if l := lastLine(out.String()); !strings.Contains(l, " 82% 82.0 MiB of 100 MiB") {
		t.Fatalf("premise: the last tick drawn is at 82%%: %q", l)
	}
	r.Finished() // the index is over; its Done waits for the hash
	if l := lastLine(out.String()); !strings.HasPrefix(l, "[index] #################### 100% 84.0 MiB") {
		t.Errorf("index over, its Done held: %q, want a full bar at 100%% with 84.0 MiB", l)
	}
	r.Start("transform", "keys", 1000)
	c.add(time.Second)
	r.Add(1000)
	r.Done()
	r.Ended("index", "bytes", 84<<20, 2100*time.Millisecond)
	draws := strings.Split(out.String(), "\r\033[K")
	var last string
	for _, d := range draws {
		if strings.HasPrefix(d, "[index]") {
			last = d
		}
	}
	if !strings.HasPrefix(last, "[index] #################### 100% 84.0 MiB") || !strings.HasSuffix(last, " in 2.1s\n") {
		t.Errorf("last index draw %q: want a full bar at 100%% with 84.0 MiB, ended", last)
	}
	if l := draws[len(draws)-2]; !strings.HasPrefix(l, "[transform] #################### 100% 1000 keys") {
		t.Errorf("transform's final draw %q", l)
	}
}

// TestProgressFirstLineBetweenPhases: without a terminal the run's first line comes on time even
// when nothing reports then: the index's work is over, its Done held for the hash, and the next
// phase has not started (prepare). Once the command ends (stop), nothing more is printed.
func TestProgressFirstLineBetweenPhases(t *testing.T) {
	var out bytes.Buffer
	r := &renderer{w: &out, said: time.Now()}
	read := func() string { r.mu.Lock(); defer r.mu.Unlock(); return out.String() }
	start := time.Now()
	r.firstLineAt(200 * time.Millisecond)
	r.Start("index", "bytes", 100<<20)
	r.Add(84 << 20)
	r.Finished()
	for read() == "" && time.Since(start) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); !strings.HasPrefix(read(), "[index] 100% 84.0 MiB") || took > time.Second {
		t.Errorf("after %s: %q, want the index at 100%% after 200 ms", took, read())
	}
	idle := &renderer{w: &bytes.Buffer{}, said: time.Now()}
	idle.firstLineAt(50 * time.Millisecond)
	idle.Start("index", "bytes", 100)
	idle.stop()
	time.Sleep(100 * time.Millisecond)
	if s := idle.w.(*bytes.Buffer).String(); s != "" {
		t.Errorf("a stopped renderer printed %q", s)
	}
}
