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
}

func (r *renderer) Start(phase, unit string, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.unit, r.total, r.done = phase, unit, total, 0
	r.start, r.last = time.Now(), time.Time{}
}

func (r *renderer) Add(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done += n
	if !r.tty {
		return
	}
	now := time.Now()
	if now.Sub(r.last) < 100*time.Millisecond {
		return
	}
	r.last = now
	r.draw(now, false)
}

func (r *renderer) draw(now time.Time, final bool) {
	el := now.Sub(r.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(r.done) / el
	}
	amount := func(n int64) string {
		if r.unit == "bytes" {
			return fsutil.FormatSize(n)
		}
		return fmt.Sprintf("%d %s", n, r.unit)
	}
	line := fmt.Sprintf("[%s] %s", r.phase, amount(r.done))
	if r.total > 0 && !final {
		pct := min(100, float64(r.done)*100/float64(r.total))
		bar := strings.Repeat("#", int(pct/5)) + strings.Repeat(".", 20-int(pct/5))
		eta := ""
		if rate > 0 && r.done < r.total {
			eta = fmt.Sprintf(" ETA %s", time.Duration(float64(r.total-r.done)/rate*float64(time.Second)).Round(time.Second))
		}
		line = fmt.Sprintf("[%s] %s %3.0f%% %s of %s%s", r.phase, bar, pct, amount(r.done), amount(r.total), eta)
	}
	if r.unit == "bytes" {
		line += fmt.Sprintf(", %s/s", fsutil.FormatSize(int64(rate)))
	} else {
		line += fmt.Sprintf(", %.0f %s/s", rate, r.unit)
	}
	if final {
		line += fmt.Sprintf(" in %s", now.Sub(r.start).Round(time.Millisecond))
	}
	fmt.Fprintf(r.w, "\r\033[K%s", line)
	if final {
		fmt.Fprintln(r.w)
	}
}

func (r *renderer) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	switch {
	case r.tty:
		r.draw(now, true)
	case r.json:
		_ = json.NewEncoder(r.w).Encode(map[string]any{"phase": r.phase, "unit": r.unit, "done": r.done,
			"seconds": now.Sub(r.start).Seconds()})
	default:
		fmt.Fprintf(r.w, "[%s] %d %s in %s\n", r.phase, r.done, r.unit, now.Sub(r.start).Round(time.Millisecond))
	}
}
