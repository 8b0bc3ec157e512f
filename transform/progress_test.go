package transform_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/transform"
)

// events records what a Reporter that is also an Ender and a Finisher is told.
type events struct {
	log   []string
	phase string
	done  map[string]int64
}

func (e *events) Start(phase, unit string, total int64) {
	e.phase = phase
	e.log = append(e.log, "start "+phase)
}
func (e *events) Add(n int64) { e.done[e.phase] += n }
func (e *events) Done()       { e.log = append(e.log, "done "+e.phase) }
func (e *events) Finished()   { e.log = append(e.log, "finished "+e.phase) }
func (e *events) Ended(phase, unit string, done int64, took time.Duration) {
	e.log = append(e.log, fmt.Sprintf("ended %s %d", phase, done))
}

// TestIndexFinishedBeforeItsHeldDone: the index's Done waits for the input's hash, but the
// reporter is told its work is over (progress.Finisher) as it ends, before the next phase
// starts: a terminal draws its bar at 100% then, not at the last estimate (issue 52 item 8).
// Its Ended follows, with every byte it reported.
func TestIndexFinishedBeforeItsHeldDone(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	ev := &events{done: map[string]int64{}}
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: filepath.Join(t.TempDir(), "out.db"), Progress: ev}); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(ev.log, "start index")
	if i < 0 || i+1 >= len(ev.log) || ev.log[i+1] != "finished index" {
		t.Fatalf("the index is not finished as it ends: %q", ev.log)
	}
	if want := fmt.Sprintf("ended index %d", ev.done["index"]); !slices.Contains(ev.log, want) || ev.done["index"] == 0 {
		t.Errorf("no %q in %q", want, ev.log)
	}
}
