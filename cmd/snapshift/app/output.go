package app

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// writeJSON prints a report as JSON, or as YAML when w is the yamlWriter
// that -o yaml puts in place of stdout.
func writeJSON(w io.Writer, v any) error {
	if y, ok := w.(yamlWriter); ok {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = y.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// yamlWriter is stdout under -o yaml: text passes through, and writeJSON
// writes its document as YAML (the same keys as -o json).
type yamlWriter struct{ io.Writer }

type renderer struct {
	mu          sync.Mutex
	w           io.Writer
	tty, json   bool
	phase, unit string
	total, done int64
	start, last time.Time
	// Without a terminal: lines is how many lines the phase printed, said
	// when the last line of any phase was (or the renderer was made).
	lines int
	said  time.Time
	// printed: a line was; finished: the phase's work is over, at
	// finishedAt, its Done held; timer prints the run's first line
	// (firstLineAt), stopped: the command ended.
	printed, finished, stopped bool
	finishedAt                 time.Time
	timer                      *time.Timer
	// now is the clock (tests: a fake one); every is how often a line is
	// printed during a phase without a terminal (default lineEvery).
	now   func() time.Time
	every time.Duration
}

const (
	// lineEvery: without a terminal (CI, nohup, a pipe) a long phase
	// prints a line this often, so that a run does not look hung; its
	// first once nothing was printed for firstLineAfter (since the start
	// of the run, or the last line of the phase before).
	lineEvery      = 5 * time.Second
	firstLineAfter = time.Second
	// rateAfter: a rate and an ETA are shown only after this long in a
	// phase (the first tick's rate is noise: "ETA 0s, 1.3 TiB/s").
	rateAfter = time.Second
)

func (r *renderer) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *renderer) Start(phase, unit string, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.unit, r.total, r.done, r.lines, r.finished = phase, unit, total, 0, 0, false
	r.start, r.last = r.clock(), time.Time{}
	if r.said.IsZero() {
		r.said = r.start
	}
}

func (r *renderer) Add(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done += n
	if r.json {
		return
	}
	now := r.clock()
	if r.tty {
		if now.Sub(r.last) < 100*time.Millisecond {
			return
		}
		r.last = now
		r.draw(now, false)
		return
	}
	every := r.every
	if every == 0 {
		every = lineEvery
	}
	if r.last.IsZero() {
		r.last = r.start
	}
	due := now.Sub(r.last) >= every
	if r.lines == 0 {
		// The phase's first line once the run was silent for a second,
		// not after a silent lineEvery: the index before it, whose end
		// is only printed after the hash, may have printed nothing.
		due = due || now.Sub(r.said) >= firstLineAfter
	}
	if due {
		r.line(now)
	}
}

// line prints the current phase's progress without a terminal.
func (r *renderer) line(now time.Time) {
	r.last, r.said, r.printed = now, now, true
	r.lines++
	if r.finished { // its work is over; its Done waits
		fmt.Fprintf(r.w, "[%s] %s\n", r.phase, r.status(r.finishedAt, true))
		return
	}
	fmt.Fprintf(r.w, "[%s] %s\n", r.phase, r.status(now, false))
}

// firstLineAt makes sure the run's first line comes after d at the latest,
// without a terminal: the phase that runs then, or the one whose Done is
// held, says where it is, even if nothing reports between phases (prepare).
func (r *renderer) firstLineAt(d time.Duration) {
	r.timer = time.AfterFunc(d, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.printed && !r.stopped && r.phase != "" {
			r.line(r.clock())
		}
	})
}

// stop ends the renderer's timer: the command is over.
func (r *renderer) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
}

// amount is n in the phase's unit: a human size for bytes ("1.2 GiB").
func (r *renderer) amount(n int64) string {
	if r.unit == "bytes" {
		return fsutil.FormatSize(n)
	}
	return fmt.Sprintf("%d %s", n, r.unit)
}

// status is the phase's progress: percent and amount of the total when it
// is known, the rate and the ETA once the phase has run for rateAfter.
func (r *renderer) status(now time.Time, final bool) string {
	el := now.Sub(r.start)
	rate := 0.0
	if el > 0 {
		rate = float64(r.done) / el.Seconds()
	}
	amount := r.amount
	line := amount(r.done)
	if r.total > 0 {
		pct := min(100, float64(r.done)*100/float64(r.total))
		if final {
			pct = 100 // the phase is over, whatever the estimate of its total was
		}
		bar := strings.Repeat("#", int(pct/5)) + strings.Repeat(".", 20-int(pct/5))
		if r.tty {
			line = fmt.Sprintf("%s %3.0f%% %s", bar, pct, line)
		} else {
			line = fmt.Sprintf("%3.0f%% %s", pct, line)
		}
		if !final {
			line += " of " + amount(r.total)
			if el >= rateAfter && rate > 0 && r.done < r.total {
				line += fmt.Sprintf(" ETA %s", time.Duration(float64(r.total-r.done)/rate*float64(time.Second)).Round(time.Second))
			}
		}
	}
	if el >= rateAfter || final {
		if r.unit == "bytes" {
			line += fmt.Sprintf(", %s/s", fsutil.FormatSize(int64(rate)))
		} else {
			line += fmt.Sprintf(", %.0f %s/s", rate, r.unit)
		}
	}
	if final {
		line += fmt.Sprintf(" in %s", el.Round(time.Millisecond))
	}
	return line
}

func (r *renderer) draw(now time.Time, final bool) {
	fmt.Fprintf(r.w, "\r\033[K[%s] %s", r.phase, r.status(now, final))
	if final {
		fmt.Fprintln(r.w)
	}
}

// Ended reports a phase that ended while another ran (progress.Ender):
// the index, whose end waited for the input's hash.
func (r *renderer) Ended(phase, unit string, done int64, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type state struct {
		phase, unit string
		total, done int64
		start, last time.Time
	}
	saved := state{r.phase, r.unit, r.total, r.done, r.start, r.last}
	now := r.clock()
	// Its total is what it did: the bar is full, at 100%.
	r.phase, r.unit, r.total, r.done, r.start = phase, unit, done, done, now.Add(-took)
	switch {
	case r.tty:
		r.draw(now, true)
	case r.json:
		_ = json.NewEncoder(r.w).Encode(progressLine{newTypeMeta("Progress"), phase, unit, done, took.Seconds()})
	default:
		r.said, r.printed = now, true
		fmt.Fprintf(r.w, "[%s] %s in %s\n", phase, r.amount(done), took.Round(time.Millisecond))
	}
	r.phase, r.unit, r.total, r.done, r.start, r.last = saved.phase, saved.unit, saved.total, saved.done, saved.start, saved.last
}

func (r *renderer) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	switch {
	case r.tty:
		r.draw(now, true)
	case r.json:
		_ = json.NewEncoder(r.w).Encode(progressLine{newTypeMeta("Progress"), r.phase, r.unit, r.done, now.Sub(r.start).Seconds()})
	default:
		r.said, r.printed = now, true
		fmt.Fprintf(r.w, "[%s] %s in %s\n", r.phase, r.amount(r.done), now.Sub(r.start).Round(time.Millisecond))
	}
}

// Finished shows the current phase's work as over while its Done is held
// back (progress.Finisher): on a terminal its bar is drawn full, at 100%
// of what it did, until the next phase draws over it (the last tick drawn
// was of an estimated total, or not drawn at all). Without a terminal its
// line of the end waits for Ended.
func (r *renderer) Finished() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock()
	r.finished, r.finishedAt = true, now
	if r.tty {
		fmt.Fprintf(r.w, "\r\033[K[%s] %s", r.phase, r.status(now, true))
	}
}
