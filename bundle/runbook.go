package bundle

import (
	"fmt"
	"regexp"
	"strings"
)

// RunbookJSONFile is the window as data (RunbookKind): the one source of
// RUNBOOK.md, and what the lab and any other engine run by step and block
// ID.
const (
	RunbookJSONFile = "runbook.json"
	RunbookKind     = "Runbook"
)

// Where a block's lines run.
const (
	// WhereOperator is the machine that holds the bundle.
	WhereOperator = "operator"
	// WhereKubectl is wherever the step "kubectl" pointed kubectl (its
	// export line's node, else the operator's machine).
	WhereKubectl = "kubectl"
	// WhereControlPlane is every control-plane node at once, each its own
	// lines (a line's On).
	WhereControlPlane = "control-plane"
	// WhereWorkers is every worker that runs a kubelet; a line with an On
	// runs on that worker only, the others on every worker.
	WhereWorkers = "workers"
	// WhereNone is a step done by hand elsewhere (a DNS record, a load
	// balancer): it has no block.
	WhereNone = "none"
)

// Runbook is the downtime window of one bundle: its steps in order, each
// with its prose and its blocks of commands, and where they run.
type Runbook struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// ReportSHA256 is the sha256 of the report.json this runbook was made
	// with: a runbook of another bundle is refused.
	ReportSHA256 string        `json:"reportSHA256"`
	Steps        []RunbookStep `json:"steps"`
}

// RunbookStep is one step: a heading and what follows it.
type RunbookStep struct {
	// ID is the step's stable name ("apply", "rollback").
	ID string `json:"id"`
	// Number is its number in RUNBOOK.md (0: an unnumbered section).
	Number int `json:"number,omitempty"`
	// Level is the heading's level: 1 for the title, else 2.
	Level int    `json:"level"`
	Title string `json:"title"`
	// Where its blocks run unless a block says otherwise.
	Where string `json:"where"`
	// Undo names the step that rolls this one back.
	Undo string `json:"undo,omitempty"`
	// PointOfNoReturn: once this step has run, a rollback loses what was
	// written to the new cluster.
	PointOfNoReturn bool          `json:"pointOfNoReturn,omitempty"`
	Items           []RunbookItem `json:"items"`
}

// RunbookItem is a line of prose or a block of commands.
type RunbookItem struct {
	Text  *string       `json:"text,omitempty"`
	Block *RunbookBlock `json:"block,omitempty"`
}

// RunbookBlock is one shell block, run as a whole where it says.
type RunbookBlock struct {
	// ID is "<step>.<name>", stable: the lab and the playbook run a block
	// by it.
	ID    string        `json:"id"`
	Where string        `json:"where"`
	Lines []RunbookLine `json:"lines"`
}

// RunbookLine is one line as the operator types it, comment and all.
type RunbookLine struct {
	Text string `json:"text"`
	// On is the node the line is for ("# on NODE" in its comment); empty:
	// every host of the block.
	On string `json:"on,omitempty"`
}

var onNode = regexp.MustCompile(`# on ([A-Za-z0-9.-]+)`)

// NewRunbookLine is text as a line, its On read from a "# on NODE" comment.
func NewRunbookLine(text string) RunbookLine {
	l := RunbookLine{Text: text}
	if m := onNode.FindStringSubmatch(text); m != nil {
		l.On = m[1]
	}
	return l
}

// Step is the step of that ID, or nil.
func (rb *Runbook) Step(id string) *RunbookStep {
	for i := range rb.Steps {
		if rb.Steps[i].ID == id {
			return &rb.Steps[i]
		}
	}
	return nil
}

// Block is the block of that ID, or nil.
func (rb *Runbook) Block(id string) *RunbookBlock {
	for i := range rb.Steps {
		for _, it := range rb.Steps[i].Items {
			if it.Block != nil && it.Block.ID == id {
				return it.Block
			}
		}
	}
	return nil
}

// Markdown is RUNBOOK.md: every heading, line and command of the runbook,
// in order, and nothing else.
func (rb *Runbook) Markdown() string {
	var b strings.Builder
	for _, s := range rb.Steps {
		switch {
		case s.Level == 1:
			fmt.Fprintf(&b, "# %s\n", s.Title)
		case s.Number > 0:
			fmt.Fprintf(&b, "## %d. %s\n", s.Number, s.Title)
		default:
			fmt.Fprintf(&b, "## %s\n", s.Title)
		}
		for _, it := range s.Items {
			if it.Text != nil {
				b.WriteString(*it.Text + "\n")
			}
			if it.Block != nil {
				b.WriteString("```sh\n")
				for _, l := range it.Block.Lines {
					b.WriteString(l.Text + "\n")
				}
				b.WriteString("```\n")
			}
		}
	}
	return b.String()
}
