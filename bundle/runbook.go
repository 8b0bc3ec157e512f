package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
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
	ReportSHA256 string `json:"reportSHA256"`
	// Digest is the sha256 of this document with Digest empty (compact
	// JSON, RunbookDigest): a runbook.json edited by hand no longer has
	// it, and node apply and the playbooks' guard refuse it.
	Digest string        `json:"digest,omitempty"`
	Steps  []RunbookStep `json:"steps"`
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
	// Gate is what must hold before the next step, and how long to wait
	// for it (nil: the step's own commands wait, or nothing follows).
	Gate *RunbookGate `json:"gate,omitempty"`
	// Faults is section "When something goes wrong": what can go wrong in
	// the window, the decision and the blocks that carry it out.
	Faults []RunbookFault `json:"faults,omitempty"`
}

// The two states a window ends in (RunbookFault.EndsIn).
const (
	// EndsNew: the new cluster, every node on the bundle's ranges.
	EndsNew = "new"
	// EndsOld: the old cluster, every node back on the old ranges.
	EndsOld = "old"
)

// RunbookFault is one thing that goes wrong during the window and what to
// do about it. Every fault ends in one of two states, never between: the
// new cluster on the new ranges, or the old one on the old ranges.
type RunbookFault struct {
	// ID is stable ("apply-killed"): the lab's fault scenarios name it.
	ID string `json:"id"`
	// When is what happened, as the operator sees it.
	When string `json:"when"`
	// Do is the decision, in words.
	Do string `json:"do"`
	// Why is the reason for it.
	Why string `json:"why"`
	// EndsIn is EndsNew (roll forward) or EndsOld (roll back).
	EndsIn string `json:"endsIn"`
	// Run are the blocks that carry out Do, in order, by ID (on the nodes
	// Do names, where a block runs on several).
	Run []string `json:"run,omitempty"`
}

// Fault is the fault of that ID, or nil.
func (rb *Runbook) Fault(id string) *RunbookFault {
	for i := range rb.Steps {
		for j := range rb.Steps[i].Faults {
			if rb.Steps[i].Faults[j].ID == id {
				return &rb.Steps[i].Faults[j]
			}
		}
	}
	return nil
}

// RunbookGate is a step's condition for going on: a command that exits 0
// once it holds, waiting at most Timeout, run where Where says.
type RunbookGate struct {
	// Text is the condition in words.
	Text    string `json:"text"`
	Where   string `json:"where"`
	Command string `json:"command"`
	// Timeout is how long Command waits (a Go duration, "10m").
	Timeout string `json:"timeout"`
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
		if g := s.Gate; g != nil {
			fmt.Fprintf(&b, "**Check:** %s before the next step (`%s`, up to %s).\n\n", g.Text, g.Command, g.Timeout)
		}
		for _, f := range s.Faults {
			ends := "the new cluster (roll forward)"
			if f.EndsIn == EndsOld {
				ends = "the old cluster (roll back)"
			}
			fmt.Fprintf(&b, "- `%s`: **%s** %s Why: %s Ends in %s", f.ID, f.When, f.Do, f.Why, ends)
			if len(f.Run) > 0 {
				var ids []string
				for _, id := range f.Run {
					ids = append(ids, "`"+id+"`")
				}
				fmt.Fprintf(&b, "; blocks %s", strings.Join(ids, ", "))
			}
			b.WriteString(".\n")
		}
		if len(s.Faults) > 0 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// RunbookDigest is the sha256 (hex) of rb with its Digest empty, as compact
// JSON: what Digest must say.
func RunbookDigest(rb *Runbook) string {
	c := *rb
	c.Digest = ""
	data, err := json.Marshal(&c)
	if err != nil {
		panic(err) // a Runbook is plain data
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ReadRunbook decodes a runbook.json.
func ReadRunbook(path string) (*Runbook, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rb Runbook
	if err := json.Unmarshal(data, &rb); err != nil {
		return nil, fmt.Errorf("%s is not a runbook.json snapshift wrote: %v", path, err)
	}
	if rb.Kind != RunbookKind {
		return nil, fmt.Errorf("%s is not a runbook.json snapshift wrote: its kind is %q, not %s", path, rb.Kind, RunbookKind)
	}
	return &rb, nil
}

// CheckRunbook says, in one sentence, how rb does not belong to the
// bundle whose report.json has sha256 reportSum and these nodes: another
// bundle's runbook, or one edited by hand (a step or a node's line
// removed, a node added); nil when it is the one rebuild wrote.
func CheckRunbook(rb *Runbook, reportSum string, nodes []Node) error {
	if rb.ReportSHA256 != reportSum {
		return fmt.Errorf("runbook.json is another bundle's: it was made with a report.json of sha256 %s, and this bundle's is %s; use the runbook.json of this bundle", short(rb.ReportSHA256), short(reportSum))
	}
	if rb.Digest == RunbookDigest(rb) {
		return nil
	}
	var what []string
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	named := map[string]bool{}
	for _, s := range rb.Steps {
		for _, it := range s.Items {
			if it.Block == nil {
				continue
			}
			for _, l := range it.Block.Lines {
				if l.On != "" {
					named[l.On] = true
				}
				if l.On != "" && !known[l.On] && it.Block.Where == WhereControlPlane {
					what = append(what, fmt.Sprintf("block %s names node %s, which report.json does not hold", it.Block.ID, l.On))
				}
			}
		}
	}
	for _, id := range []string{"apply", "rollback"} {
		if rb.Step(id) == nil {
			what = append(what, "step "+id+" is missing")
		}
	}
	for _, n := range nodes {
		if !named[n.Name] {
			what = append(what, "no line is for node "+n.Name)
		}
	}
	if len(what) == 0 {
		what = append(what, "its digest no longer matches its content")
	}
	return fmt.Errorf("runbook.json was edited after snapshift rebuild wrote it (%s): run snapshift rebuild again, or put back the runbook.json it wrote", strings.Join(what, "; "))
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	if sum == "" {
		return "(none)"
	}
	return sum
}
