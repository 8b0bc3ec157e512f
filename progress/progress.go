// Package progress is the small interface through which snapshift's library
// packages report long operations. The CLI renders it (a bar on a terminal,
// "[phase] ..." lines otherwise, nothing with --quiet); libraries never print.
package progress

import "time"

// Reporter receives progress events. Implementations must be cheap: Add is
// called from hot loops (callers batch, but not by much).
type Reporter interface {
	// Start begins a phase; total is the expected amount of work in units
	// (bytes or keys, as unit says), or 0 if unknown.
	Start(phase string, unit string, total int64)
	// Add reports n more units done in the current phase.
	Add(n int64)
	// Done ends the current phase.
	Done()
}

// Ender is a Reporter that can also report a phase that ended a while ago,
// while another phase ran: a phase whose Done was held back until a check
// running beside it passed (the index, until the input's hash matched).
// Reporters that are not Enders get Done instead.
type Ender interface {
	Ended(phase, unit string, done int64, took time.Duration)
}

// Finisher is a Reporter that can show the current phase's work as over
// while its Done is held back (the index, until the input's hash matched):
// a bar drawn full. Its Done or Ended follows.
type Finisher interface {
	Finished()
}

// Nop is a Reporter that does nothing.
type Nop struct{}

func (Nop) Start(string, string, int64) {}
func (Nop) Add(int64)                   {}
func (Nop) Done()                       {}

// OrNop returns r, or Nop when r is nil.
func OrNop(r Reporter) Reporter {
	if r == nil {
		return Nop{}
	}
	return r
}
