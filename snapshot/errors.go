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
	Path    string
	Problem string
	Err     error // optional underlying cause
}

func (e *InputError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("snapshot %s: %s: %v", e.Path, e.Problem, e.Err)
	}
	return fmt.Sprintf("snapshot %s: %s", e.Path, e.Problem)
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
