package codec

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// ErrEncrypted is returned for a value encrypted at rest ("k8s:enc:..."): decrypt it first.
	ErrEncrypted = errors.New("value is encrypted at rest")
	// ErrUnknownType is wrapped by *UnknownTypeError.
	ErrUnknownType = errors.New("apiVersion/kind unknown to this build")
	// ErrUndecodable is returned for empty, truncated or otherwise malformed values.
	ErrUndecodable = errors.New("value cannot be decoded")
	// ErrNotRoundTrip is returned by CheckRoundTrip when re-encoding an unmodified value does not
	// give back the same bytes.
	ErrNotRoundTrip = errors.New("value does not round-trip")
)

// UnknownTypeError is returned when a stored value names an apiVersion/kind that this build's
// scheme does not know (e.g. networking.k8s.io/v1alpha1 IPAddress from a 1.27-1.30 cluster, or an
// aggregated API's type). Such values must be copied untouched. It wraps ErrUnknownType.
type UnknownTypeError struct {
	GVK      schema.GroupVersionKind
	Encoding Encoding
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("%s value of apiVersion %q kind %q: %v",
		e.Encoding, e.GVK.GroupVersion().String(), e.GVK.Kind, ErrUnknownType)
}

// Unwrap returns ErrUnknownType.
func (e *UnknownTypeError) Unwrap() error { return ErrUnknownType }

func undecodable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUndecodable, tame(fmt.Sprintf(format, args...)))
}

// maxDetail caps the detail an error carries: messages from the libraries
// below may quote the stored value, which may be large or secret.
const maxDetail = 200

// tame makes a message safe to print on one line: a library's quote of the
// whole value (" in '...'") is dropped, control characters are escaped, and
// the rest is capped.
func tame(s string) string {
	if i := strings.Index(s, " in '"); i >= 0 {
		s = s[:i] + " (value not shown)"
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= maxDetail {
			b.WriteString("...")
			break
		}
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
		} else {
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}
