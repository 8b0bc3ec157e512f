package nodeops

import "errors"

// ErrRefused is wrapped when this host's state refuses the operation: a
// failed preflight, or a rollback with no backup to put back. Nothing was
// changed; the CLI exits 4 (refused), as for any unsafe change.
var ErrRefused = errors.New("refused")

// refused marks err as a refusal without changing its message.
type refused struct{ error }

func (e refused) Unwrap() error        { return e.error }
func (e refused) Is(target error) bool { return target == ErrRefused }
