package nodeops

import (
	"errors"
	"math"
	"time"
)

// Result is what one node operation did: its outcome, each step it ran or
// skipped, and how long each phase took (issue 48: the downtime window as
// a number). Apply, Rollback, Confirm and RollbackIfUnconfirmed return one
// whether they succeed or not; the CLI prints it as `-o json|yaml` and as
// the text's closing line.
//
// Durations are wall-clock seconds on the monotonic clock (not
// Config.Now, which dates the record), rounded to the millisecond.
type Result struct {
	// Operation is apply, rollback, confirm or rollback-if-unconfirmed.
	Operation string `json:"operation"`
	Node      string `json:"node"`
	// Backup is the node's backup directory (a host path, without the
	// root), once the bundle was read.
	Backup string `json:"backup,omitempty"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// FailedPhase is the phase of the step that failed or was refused.
	FailedPhase string `json:"failedPhase,omitempty"`
	// Steps are the steps, in the order they ran (or were skipped).
	Steps []StepResult `json:"steps"`
	// Phases are the steps' phases in order of first appearance, each
	// with the time its steps took.
	Phases []PhaseTime `json:"phases"`
	// Seconds is the whole operation, from the call to its return (also
	// the time between the phases: reading the bundle, taking the lock).
	Seconds float64 `json:"seconds"`
}

// Outcomes of a node operation.
const (
	OutcomeDone = "done"
	// OutcomeStopped: apply --stop-only backed up and stopped the node.
	OutcomeStopped = "stopped"
	// OutcomePreflightPassed: apply --preflight-only found nothing to refuse.
	OutcomePreflightPassed = "preflight-passed"
	// OutcomeNothingToDo: rollback-if-unconfirmed found the node confirmed,
	// rolled back already, or never backed up.
	OutcomeNothingToDo = "nothing-to-do"
	// OutcomeRefused: this host's state refused it (ErrRefused); nothing
	// was changed.
	OutcomeRefused = "refused"
	OutcomeFailed  = "failed"
)

// StepResult is one step of a node operation.
type StepResult struct {
	Step  Step   `json:"step"`
	Phase string `json:"phase"`
	// Status is done, skipped (recorded as done by an earlier run, or
	// nothing to do) or failed.
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
}

// Step statuses.
const (
	StatusDone    = "done"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// PhaseTime is one phase and the time its steps took.
type PhaseTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// timing builds an operation's Result as its steps run.
type timing struct {
	res   *Result
	start time.Time
}

func begin(op string, cfg *Config) *timing {
	return &timing{res: &Result{Operation: op, Node: cfg.Node, Outcome: OutcomeDone, Steps: []StepResult{}, Phases: []PhaseTime{}}, start: time.Now()}
}

// do runs one step and records it, done or failed.
func (t *timing) do(id Step, phase string, run func() error) error {
	start := time.Now()
	err := run()
	status := StatusDone
	if err != nil {
		status = StatusFailed
		t.res.FailedPhase = phase
	}
	t.add(id, phase, status, time.Since(start))
	return err
}

// skip records a step that had nothing to do.
func (t *timing) skip(id Step, phase string) { t.add(id, phase, StatusSkipped, 0) }

func (t *timing) add(id Step, phase, status string, d time.Duration) {
	s := seconds(d)
	t.res.Steps = append(t.res.Steps, StepResult{Step: id, Phase: phase, Status: status, Seconds: s})
	for i := range t.res.Phases {
		if t.res.Phases[i].Name == phase {
			t.res.Phases[i].Seconds = seconds(time.Duration((t.res.Phases[i].Seconds + s) * float64(time.Second)))
			return
		}
	}
	t.res.Phases = append(t.res.Phases, PhaseTime{Name: phase, Seconds: s})
}

// finish closes the Result: its total, and the outcome err gives.
func (t *timing) finish(err error) *Result {
	t.res.Seconds = seconds(time.Since(t.start))
	switch {
	case errors.Is(err, ErrRefused):
		t.res.Outcome = OutcomeRefused
	case err != nil:
		t.res.Outcome = OutcomeFailed
	}
	return t.res
}

// seconds is d in seconds, rounded to the millisecond, never negative.
func seconds(d time.Duration) float64 {
	return math.Max(0, math.Round(d.Seconds()*1000)/1000)
}
