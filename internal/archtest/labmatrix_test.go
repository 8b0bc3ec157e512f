package archtest

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// notInLab are the runbook's faults no scenario makes happen, and why.
var notInLab = map[string]string{
	"gate-failed": "fault deadline fails cp1's health gate (its port taken) and lets the timer roll back; a gate fixed and the apply run again is apply-killed's resume",
}

// ciFaults are the faults a three-member cell CI runs must have.
var ciFaults = []string{"apply-killed", "deadline", "apply-failed"}

// labMatrix is hack/lab/matrix.json: the lab's bring-ups and their
// scenarios.
type labMatrix struct {
	Cells []struct {
		Name          string   `json:"name"`
		ControlPlanes []string `json:"controlPlanes"`
		Workers       []string `json:"workers"`
		CI            bool     `json:"ci"`
		Scenarios     []struct {
			Name     string   `json:"name"`
			CA       string   `json:"ca"`
			Driver   string   `json:"driver"`
			Fault    string   `json:"fault"`
			Down     []string `json:"down"`
			Recovery bool     `json:"recovery"`
			// Conformance: the states after which the conformance
			// suite runs (issue 49).
			Conformance []string `json:"conformance"`
		} `json:"scenarios"`
	} `json:"cells"`
}

// TestLabMatrixCoveredByCI (issue 46): every kind of scenario a cell of
// the lab's matrix runs (a CA by a driver) runs in a cell CI runs; the
// three-member control plane runs both CAs in CI (issue 45's data loss was
// there); every scenario's name is unique in its cell; and make e2e runs
// the cells CI runs from the matrix, not from a list of its own. Issue 51:
// a fault names a case of the runbook's section "When something goes
// wrong" (a fault ID rebuild writes), and CI runs a killed apply, a
// deadline that fires and a failed apply on three members. Issue 49: the
// conformance suite runs after a new-CA migration in CI. A scenario whose
// fault ends in the old cluster proves no migration: it counts for no CA.
func TestLabMatrixCoveredByCI(t *testing.T) {
	rb, err := os.ReadFile("../../rebuild/runbook.go")
	if err != nil {
		t.Fatal(err)
	}
	haFaults := map[string]bool{}
	ciFault := map[string]bool{}
	raw, err := os.ReadFile("../../hack/lab/matrix.json")
	if err != nil {
		t.Fatal(err)
	}
	var m labMatrix
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("hack/lab/matrix.json: %v", err)
	}
	inCI := map[string]bool{}
	conformanceNewCA := false
	all := map[string]string{}
	haCAs := map[string]bool{}
	for _, c := range m.Cells {
		names := map[string]bool{}
		for _, s := range c.Scenarios {
			if names[s.Name] {
				t.Errorf("cell %s has two scenarios named %s", c.Name, s.Name)
			}
			names[s.Name] = true
			if len(s.Down) > 0 && c.CI {
				ciFault["worker-down"] = true
			}
			if s.Recovery && c.CI {
				ciFault["recovery"] = true
			}
			if s.Fault != "" {
				if c.CI {
					ciFault[s.Fault] = true
				}
				if !strings.Contains(string(rb), "= \""+s.Fault+"\"") {
					t.Errorf("cell %s scenario %s: fault %q is no fault of the runbook (rebuild/runbook.go's fault IDs)", c.Name, s.Name, s.Fault)
				}
				if c.CI && len(c.ControlPlanes) == 3 {
					haFaults[s.Fault] = true
				}
				if s.Fault != "apply-killed" && s.Fault != "disk-full" && s.Fault != "gate-failed" && s.Fault != "restart-stuck" && s.Fault != "worker-down" {
					continue // ends in the old cluster
				}
			}
			kind := s.CA + " CA by " + s.Driver
			all[kind] = c.Name + "/" + s.Name
			for _, st := range s.Conformance {
				if c.CI && s.CA == "new" && !s.Recovery && st == "migrated" {
					conformanceNewCA = true
				}
			}
			if c.CI {
				inCI[kind] = true
				if len(c.ControlPlanes) == 3 {
					haCAs[s.CA] = true
				}
			}
		}
	}
	for kind, where := range all {
		if !inCI[kind] {
			t.Errorf("scenario %s (%s) runs in no cell CI runs: add it to a cell with \"ci\": true", where, kind)
		}
	}
	for _, want := range []string{"old CA by runbook", "new CA by runbook", "old CA by ansible", "new CA by ansible"} {
		if !inCI[want] {
			t.Errorf("no cell CI runs migrates with the %s", want)
		}
	}
	// Issue 51 wants a killed apply, a deadline that fires and a failed
	// apply in CI, in the three-member migration CI runs already.
	for _, f := range ciFaults {
		if !haFaults[f] {
			t.Errorf("no three-member cell CI runs has the fault %s", f)
		}
	}
	// Every fault of the runbook's section "When something goes wrong"
	// happens in a cell CI runs (a scenario's fault, or its down workers:
	// worker-down), but those notInLab says why not.
	ids := regexp.MustCompile(`(?m)^\s+fault[A-Z]\w*\s+= "([a-z-]+)"$`).FindAllStringSubmatch(string(rb), -1)
	if len(ids) < 5 {
		t.Fatalf("rebuild/runbook.go: found %d fault IDs, want the const block's", len(ids))
	}
	for _, id := range ids {
		if !ciFault[id[1]] && notInLab[id[1]] == "" {
			t.Errorf("the runbook's fault %s happens in no cell CI runs: give a scenario of a cell with \"ci\": true that fault (or down workers, for worker-down)", id[1])
		}
	}
	if !ciFault["recovery"] {
		t.Errorf("no cell CI runs has a recovery scenario (issue 51 item 7: the control plane lost, rebuilt from the surviving member)")
	}
	// Issue 49: Kubernetes' conformance suite judges a migration with a
	// new CA in CI.
	if !conformanceNewCA {
		t.Errorf("no cell CI runs has a new-CA scenario with \"conformance\": [\"migrated\", ...] (issue 49: the conformance suite after a migration with a new CA)")
	}
	if !haCAs["old"] || !haCAs["new"] {
		t.Errorf("CI's three-member cells run the CAs %v, want old and new", haCAs)
	}
	e2e, err := os.ReadFile("../../hack/e2e.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(e2e), "python3 hack/lab/matrix.py ci") {
		t.Errorf("hack/e2e.sh does not run the lab's cells from hack/lab/matrix.py ci")
	}
}
