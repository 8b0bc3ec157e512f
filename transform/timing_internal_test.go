package transform

import (
	"slices"
	"testing"
	"time"
)

// TestPhaseTimer drives the timer with a fake clock: steps reported from
// inside a phase are moved out of it, phases come in the run's order, and
// they add up to the total.
func TestPhaseTimer(t *testing.T) {
	now := time.Unix(0, 0)
	tick := func(d time.Duration) { now = now.Add(d) }
	tm := &phaseTimer{acc: map[string]time.Duration{}, now: func() time.Time { return now }}
	tm.start, tm.last = now, now
	tick(time.Second) // before the first phase: counted in no phase
	tm.enter(PhaseStream)
	tick(3 * time.Second)
	tm.add(PhaseWrite, time.Second) // a commit during the stream
	tick(time.Second)
	tm.enter(PhaseIndex) // out of order on purpose
	tick(2 * time.Second)
	tm.enter(PhaseStream) // a phase entered twice adds up
	tick(time.Second)
	tm.add("odd", 0)
	got := tm.timing()
	want := []PhaseTime{{PhaseIndex, 2}, {PhaseStream, 4}, {PhaseWrite, 1}, {"odd", 0}}
	if !slices.Equal(got.Phases, want) {
		t.Errorf("phases %+v, want %+v", got.Phases, want)
	}
	if got.TotalSeconds != 8 {
		t.Errorf("total %v, want 8", got.TotalSeconds)
	}
	var nilTimer *phaseTimer
	nilTimer.add(PhaseWrite, time.Second) // a writer without a run's timer
}
