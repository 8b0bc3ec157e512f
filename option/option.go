// Package option is the typed error every library package returns for an
// invalid option. It names the option by its Go field (e.g. "ServiceCIDR",
// "OldServiceCIDR"), never by a command-line flag or a config-file key: the
// CLI renders the same error as "--old-service-cidr needs --service-cidr",
// the rebuild command as "networking.oldServiceSubnet needs
// networking.serviceSubnet".
package option

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Error is an invalid option. Message is one sentence in which every option
// is written as {Field}; Field is the option at fault.
type Error struct {
	Field   string
	Message string
	// Err is the cause, if any (errors.Unwrap reaches it).
	Err error
	// Details is the whole list of what Message lists only in part
	// ("… and 179 more"), for machine output.
	Details []string
}

// Errorf returns an *Error for field. format is a fmt format whose text
// names options as {Field}; "{}" stands for field itself.
func Errorf(field, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Field: field, Message: err.Error(), Err: errors.Unwrap(err)}
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.]*)\}`)

// Render writes the message with every {Field} replaced by name(Field).
func (e *Error) Render(name func(field string) string) string {
	return placeholder.ReplaceAllStringFunc(e.Message, func(m string) string {
		f := m[1 : len(m)-1]
		if f == "" {
			f = e.Field
		}
		return name(f)
	})
}

// Error renders the options by their Go field names.
func (e *Error) Error() string { return e.Render(func(f string) string { return f }) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Render writes err's message with the options of the first *Error in its
// chain named by name, keeping whatever context wraps it ("rule
// service-cidr: ..."). ok is false when err holds no *Error.
func Render(err error, name func(field string) string) (msg string, ok bool) {
	var oe *Error
	if !errors.As(err, &oe) {
		return err.Error(), false
	}
	return strings.Replace(err.Error(), oe.Error(), oe.Render(name), 1), true
}

// Words names a field in plain words ("APIServerBindPort" → "API server
// bind port"), for a front-end that has no flag or key for it: a message
// never shows a Go identifier.
func Words(field string) string {
	var words []string
	rs := []rune(field)
	start := 0
	for i := 1; i <= len(rs); i++ {
		boundary := i == len(rs) ||
			(unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))))
		if !boundary {
			continue
		}
		w := string(rs[start:i])
		if !isUpperWord(w) {
			w = strings.ToLower(w)
		}
		words = append(words, w)
		start = i
	}
	return strings.Join(words, " ")
}

// isUpperWord reports an acronym such as "CIDR" or "API".
func isUpperWord(w string) bool { return len(w) > 1 && strings.ToUpper(w) == w }
