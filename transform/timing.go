package transform

import (
	"sort"
	"sync"
	"time"

	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/snapshot"
)

// Timing is where one run's wall time went (Report.Timing): the phases
// follow each other on the run's own goroutine, so their seconds add up
// to at most TotalSeconds (what is left is bookkeeping between phases).
// Work on the other core (the input's hash during the index pass, the
// leftover scan during the stream) is not a phase of its own: only the
// wait for it is (PhaseHashWait, PhaseScanWait).
type Timing struct {
	TotalSeconds float64     `json:"totalSeconds"`
	Phases       []PhaseTime `json:"phases"`
}

// PhaseTime is one phase's wall time.
type PhaseTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// The phases, in the order a run that writes goes through them
// (Timing.Phases keeps this order; a phase the run did not go through is
// absent): the rules' Prepare and then the stream read the input while its
// hash finishes on the other core; the stream writes only under temporary
// names, and the hash is waited for after it (hash wait), before anything
// is checked, published or reported. A plan streams the same way.
const (
	// PhaseOpen: the input opened and mapped (its pages read in).
	PhaseOpen = "open"
	// PhaseBootstrap: the fused restore's etcd restore of the small
	// snapshot (WAL, raft snapshot, membership) and the member's new
	// database started with its buckets.
	PhaseBootstrap = "bootstrap"
	// PhaseIndex: the pass over every revision of the key bucket.
	PhaseIndex = "index"
	// PhaseHashWait: waiting for the input's sha256 after the stream (which
	// writes only under temporary names before it has matched).
	PhaseHashWait = "hash wait"
	// PhasePrepare: the rules' Prepare.
	PhasePrepare = "prepare"
	// PhaseStream: every live key through the rules and into the writer
	// (the `key` bucket's pages are written as the entries come, so their
	// writes count here).
	PhaseStream = "stream"
	// PhaseScanWait: waiting for the leftover scan after the stream.
	PhaseScanWait = "scan wait"
	// PhaseGC: the garbage collection between stream and check.
	PhaseGC = "gc"
	// PhaseWrite: starting the output (the other buckets copied) and the
	// end of the database (its last pages, the other buckets in one bbolt
	// transaction, the meta pages: snapshot.StepWrite).
	PhaseWrite = snapshot.StepWrite
	// PhaseCheck: the output's check (verify) before it is published.
	PhaseCheck = snapshot.StepCheck
	// PhaseTrailer: waiting for the output's sha256 after the check.
	PhaseTrailer = snapshot.StepTrailer
	// PhaseFsync: the output's fsync (the part not overlapped by the check).
	PhaseFsync = snapshot.StepFsync
	// PhaseMembers: the copies for the second and later members.
	PhaseMembers = snapshot.StepMembers
	// PhasePublish: renames into place and directory syncs.
	PhasePublish = snapshot.StepPublish
)

var phaseOrder = []string{PhaseOpen, PhaseBootstrap, PhaseIndex, PhasePrepare, PhaseStream, PhaseScanWait, PhaseHashWait,
	PhaseGC, PhaseWrite, PhaseCheck, PhaseTrailer, PhaseFsync, PhaseMembers, PhasePublish}

// Phases are the phases' names in the order Timing.Phases lists them
// (docs/ARCHITECTURE.md names them; internal/archtest compares).
func Phases() []string { return append([]string(nil), phaseOrder...) }

// phaseTimer measures a run phase by phase. The run enters each phase in
// turn; steps inside the snapshot package (a commit during the stream, the
// fsync inside the writer's Commit) are reported through add and moved out
// of the phase they happened in, so that no time is counted twice.
type phaseTimer struct {
	mu     sync.Mutex
	start  time.Time
	last   time.Time
	cur    string
	nested time.Duration // add()ed since the current phase began
	acc    map[string]time.Duration
	now    func() time.Time
}

func newPhaseTimer() *phaseTimer {
	t := &phaseTimer{acc: map[string]time.Duration{}, now: time.Now}
	t.start = t.now()
	t.last = t.start
	return t
}

// enter ends the current phase and begins name.
func (t *phaseTimer) enter(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeLocked()
	t.cur = name
	if _, ok := t.acc[name]; !ok {
		t.acc[name] = 0
	}
}

// closeLocked adds the time since the last switch, less the nested steps,
// to the current phase.
func (t *phaseTimer) closeLocked() {
	now := t.now()
	if t.cur != "" {
		t.acc[t.cur] += max(0, now.Sub(t.last)-t.nested)
	}
	t.last, t.nested = now, 0
}

// add records a step of d inside the current phase as phase name (the
// snapshot package's snapshot.Timing). Nil-safe, so that it can be handed
// on as a method value.
func (t *phaseTimer) add(name string, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.acc[name] += d
	t.nested += d
}

// timing ends the current phase and returns every phase so far.
func (t *phaseTimer) timing() *Timing {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeLocked()
	t.cur = ""
	out := &Timing{TotalSeconds: t.last.Sub(t.start).Seconds()}
	seen := map[string]bool{}
	emit := func(name string) {
		if d, ok := t.acc[name]; ok && !seen[name] {
			seen[name] = true
			out.Phases = append(out.Phases, PhaseTime{Name: name, Seconds: d.Seconds()})
		}
	}
	for _, name := range phaseOrder {
		emit(name)
	}
	var extra []string
	for name := range t.acc { // a step the order does not know: last, by name
		if !seen[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		emit(name)
	}
	return out
}

// heldDone holds back a phase's Done until release: the index phase is
// only done once the input's hash, checked at the same time, has matched.
// By then another phase may have run (plan streams beside the hash): the
// held phase is reported as it ended (progress.Ender), not as a second
// Done of whatever phase runs at release.
type heldDone struct {
	progress.Reporter
	held        bool
	phase, unit string
	done        int64
	start, end  time.Time
}

func (h *heldDone) Start(phase, unit string, total int64) {
	h.phase, h.unit, h.done, h.start = phase, unit, 0, time.Now()
	h.Reporter.Start(phase, unit, total)
}

func (h *heldDone) Add(n int64) {
	h.done += n
	h.Reporter.Add(n)
}

func (h *heldDone) Done() {
	h.held, h.end = true, time.Now()
	if f, ok := h.Reporter.(progress.Finisher); ok {
		f.Finished() // a bar at 100% now, its line once released
	}
}

func (h *heldDone) release() {
	if !h.held {
		return
	}
	h.held = false
	if e, ok := h.Reporter.(progress.Ender); ok {
		e.Ended(h.phase, h.unit, h.done, h.end.Sub(h.start))
		return
	}
	h.Reporter.Done()
}
