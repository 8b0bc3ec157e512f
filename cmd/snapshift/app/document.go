package app

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/option"
)

// typeMeta opens every -o json|yaml document of the node and cluster
// commands: the format's version (the bundle's,
// snapshift.io/v1alpha1) and what the document is.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func newTypeMeta(kind string) typeMeta { return typeMeta{APIVersion: bundle.APIVersion, Kind: kind} }

// errorMessage is err as the user reads it: options named as flags, one
// line.
func errorMessage(err error) string {
	msg, _ := option.Render(err, flagName)
	return oneLine(msg)
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
