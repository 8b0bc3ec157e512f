package app

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/option"
)

// typeMeta opens every -o json|yaml document snapshift makes (get's
// object alone keeps the object's own), the error document and each line
// of the progress stream: the format's version (the bundle's,
// snapshift.io/v1alpha1) and what the document is. docs/OUTPUT.md lists
// the kinds and their fields (TestOutputSchemas).
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func newTypeMeta(kind string) typeMeta { return typeMeta{APIVersion: bundle.APIVersion, Kind: kind} }

// errorDocument is what stdout holds under -o json|yaml when a command
// fails before printing its own document (a usage error, a refusal): the
// message stderr's line has, the exit code, and the whole list a long
// message lists only in part ("… and 179 more").
type errorDocument struct {
	typeMeta
	Message  string   `json:"message"`
	ExitCode int      `json:"exitCode"`
	Details  []string `json:"details,omitempty"`
}

// errorMessage is err as the user reads it: options named as flags, one
// line.
func errorMessage(err error) string {
	msg, _ := option.Render(err, flagName)
	// Whatever decoder or parser an error came through, it is said in the
	// user's words: the form a value takes, never Go's or a library's.
	return oneLine(parseerr.Text(msg))
}

// writeErrorDocument prints the error document of err (exit code code) in
// format (json or yaml).
func writeErrorDocument(w io.Writer, format string, err error, msg string, code int) error {
	doc := errorDocument{typeMeta: newTypeMeta("Error"), Message: msg, ExitCode: code}
	var oe *option.Error
	if errors.As(err, &oe) {
		doc.Details = oe.Details
	}
	if format == "yaml" {
		w = yamlWriter{w}
	}
	return writeJSON(w, doc)
}

// requestedFormat is the --output/-o value the command line gives (the
// last one; contradictions refuses two different ones), or "". It reads
// the raw arguments, so that a command line the parser refuses still gets
// its error in the format it asked for.
func requestedFormat(args []string) string {
	format := ""
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "o" && name != "output") {
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				break
			}
			i++
			value = args[i]
		}
		format = value
	}
	return format
}

// countingWriter is stdout, counting what was written: Main prints the
// error document only where the command printed nothing.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// secondsSince is the time since start in seconds, to the millisecond.
func secondsSince(start time.Time) float64 {
	return math.Round(time.Since(start).Seconds()*1000) / 1000
}

// phase is one phase of a node or cluster command and its time
// (nodeops.PhaseTime, a cluster restart's stage, a cluster check).
type phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// closingLine is a command's last text line: what came of it, the total
// and each phase's time, "cluster restart: done in 95.1s (cni 34.0s, ...)".
func closingLine(head string, total float64, phases []phase) string {
	line := fmt.Sprintf("%s in %.1fs", head, total)
	if len(phases) == 0 {
		return line
	}
	parts := make([]string, len(phases))
	for i, p := range phases {
		parts[i] = fmt.Sprintf("%s %.1fs", p.Name, p.Seconds)
	}
	return line + " (" + strings.Join(parts, ", ") + ")"
}
