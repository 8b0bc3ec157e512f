package nodeops

import (
	"fmt"
	"testing"
	"time"

	"github.com/snapshift/snapshift/bundle"
)

// TestStepsDocumented (issue 46): apply's steps, every one that can run
// (--rollback-after arming the deadline, the health gate), in order and with
// their phases, are bundle.ApplySteps after preflight: the list node apply
// --help and the runbook are rendered from.
func TestStepsDocumented(t *testing.T) {
	a := &applyRun{host: &host{cfg: &Config{RollbackAfter: time.Minute}}, b: &nodeBundle{report: &bundle.Report{}, op: &bundle.Operation{}}}
	got := []string{"preflight preflight"}
	for _, s := range a.steps() {
		got = append(got, string(s.id)+" "+s.phase)
	}
	var want []string
	for _, s := range bundle.ApplySteps {
		want = append(want, s.ID+" "+s.Phase)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("apply's steps and phases:\n %v\nbundle.ApplySteps documents:\n %v", got, want)
	}
}
