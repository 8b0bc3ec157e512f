package app

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfile: --profile prints the phases of a fused restore and a plan;
// --output json always holds them.
func TestProfile(t *testing.T) {
	dir := t.TempDir()
	r := run(t, "restore", samplePath, "--data-dir", filepath.Join(dir, "m.etcd"), "--service-cidr", "172.24.0.0/16", "--quiet", "--profile")
	if r.code != 0 {
		t.Fatalf("restore: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"Timing (", "  bootstrap ", "  stream ", "  check ", "  fsync ", "  between phases "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("restore --profile lacks %q:\n%s", want, r.stdout)
		}
	}
	r = run(t, "plan", samplePath, "--service-cidr", "172.24.0.0/16", "--quiet")
	if r.code != 0 || strings.Contains(r.stdout, "Timing (") {
		t.Errorf("plan without --profile: exit %d, prints the timing: %v", r.code, strings.Contains(r.stdout, "Timing ("))
	}
	r = run(t, "plan", samplePath, "--service-cidr", "172.24.0.0/16", "--quiet", "-o", "json")
	var rep struct {
		Timing struct {
			TotalSeconds float64 `json:"totalSeconds"`
			Phases       []struct {
				Name    string  `json:"name"`
				Seconds float64 `json:"seconds"`
			} `json:"phases"`
		} `json:"timing"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, r.stdout)
	}
	names := map[string]bool{}
	for _, ph := range rep.Timing.Phases {
		names[ph.Name] = true
	}
	if rep.Timing.TotalSeconds <= 0 || !names["index"] || !names["prepare"] || !names["stream"] || names["fsync"] {
		t.Errorf("plan's timing %+v", rep.Timing)
	}
}
