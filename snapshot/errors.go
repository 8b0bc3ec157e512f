package snapshot

import (
	"errors"
	"fmt"
)

// ErrInvalidInput is wrapped by every error that means the input file is not
// a usable etcd snapshot (as opposed to an I/O failure or a bug).
var ErrInvalidInput = errors.New("invalid snapshot")

// InputError says what is wrong with an input file, in one sentence.
type InputError struct {
	// What the input is: "snapshot" when empty, "data dir" for a member's.
	What    string
	Path    string
	Problem string
	Err     error // optional underlying cause
}

func (e *InputError) Error() string {
	what := e.What
	if what == "" {
		what = "snapshot"
	}
	if e.Err != nil {
		return fmt.Sprintf("%s %s: %s: %v", what, e.Path, e.Problem, e.Err)
	}
	return fmt.Sprintf("%s %s: %s", what, e.Path, e.Problem)
}

// Unwrap lets errors.Is match both ErrInvalidInput and the cause.
func (e *InputError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidInput, e.Err}
	}
	return []error{ErrInvalidInput}
}

func invalid(path, format string, args ...any) error {
	return &InputError{Path: path, Problem: fmt.Sprintf(format, args...)}
}
