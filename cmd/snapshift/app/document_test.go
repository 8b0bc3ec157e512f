package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/clusterops"
	"github.com/snapshift/snapshift/internal/nodetest"
	"github.com/snapshift/snapshift/nodeops"
)

// decodeStrict decodes one JSON document into v, refusing unknown keys
// and anything after it: stdout under -o json is that one document.
func decodeStrict(t *testing.T, what, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: not one %T: %v\n%s", what, v, err, s)
	}
	if dec.More() {
		t.Fatalf("%s: more than one document on stdout:\n%s", what, s)
	}
}

// asJSON is stdout of -o json or -o yaml as JSON.
func asJSON(t *testing.T, what, format, s string) string {
	t.Helper()
	if format != "yaml" {
		return s
	}
	b, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatalf("%s: -o yaml is not YAML: %v\n%s", what, err, s)
	}
	return string(b)
}

// keyPaths are every key of a JSON document, as paths (a list's items
// under "[]"): -o yaml has the same ones as -o json.
func keyPaths(t *testing.T, s string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	set := map[string]bool{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				set[p+"."+k] = true
				walk(p+"."+k, e)
			}
		case []any:
			for _, e := range v {
				walk(p+"[]", e)
			}
		}
	}
	walk("", v)
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkErrorDocument: a failed command line under -o json|yaml prints
// the Error document on stdout, and nothing else: the message of
// stderr's line, the exit code.
func checkErrorDocument(t *testing.T, cmdline, format string, r result) {
	t.Helper()
	var doc struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Message    string   `json:"message"`
		ExitCode   int      `json:"exitCode"`
		Details    []string `json:"details"`
	}
	decodeStrict(t, cmdline, asJSON(t, cmdline, format, r.stdout), &doc)
	lines := r.stderrLines()
	if doc.APIVersion != "snapshift.io/v1alpha1" || doc.Kind != "Error" || doc.ExitCode != r.code || r.code == ExitOK ||
		len(lines) == 0 || "snapshift: "+doc.Message != lines[len(lines)-1] {
		t.Errorf("%s: the error document is %+v; exit %d, stderr %q", cmdline, doc, r.code, r.stderr)
	}
}

// checkFailureDocument: a failed command under -o json prints one
// document: the Error document, or the command's own (a node operation
// refused by this host) with apiVersion, kind and the error's message.
func checkFailureDocument(t *testing.T, cmdline string, r result) {
	t.Helper()
	var doc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Kind == "Error" {
		checkErrorDocument(t, cmdline, "json", r)
		return
	}
	decodeStrict(t, cmdline, r.stdout, new(map[string]any))
	if lines := r.stderrLines(); doc.APIVersion != "snapshift.io/v1alpha1" || doc.Kind == "" || len(lines) == 0 || "snapshift: "+doc.Error != lines[len(lines)-1] {
		t.Errorf("%s: the document is %s %s with error %q; stderr %q", cmdline, doc.APIVersion, doc.Kind, doc.Error, r.stderr)
	}
}

// TestErrorDocument: a usage error under -o json (or yaml) prints the
// Error document on stdout besides the exit code and stderr's line,
// however the flag is spelt, also when the parser refuses the command
// line; without -o json stdout stays empty.
func TestErrorDocument(t *testing.T) {
	work := t.TempDir()
	miniBundle(t, work)
	bundle := filepath.Join(work, "bundle")
	for _, c := range []struct {
		args   []string
		format string
		code   int
		want   string
	}{
		{[]string{"node", "apply", "-o", "json"}, "json", ExitUsage, "give --bundle DIR and --node NAME"},
		{[]string{"node", "rollback", "--bundle", bundle, "--node", "cp9", "--output=json"}, "json", ExitUsage, `--node "cp9" is not a node of the bundle`},
		{[]string{"node", "confirm", "--bundle", work, "--node", "cp1", "-o", "yaml"}, "yaml", ExitUsage, "holds no report.json"},
		{[]string{"cluster", "restart", "-o=json"}, "json", ExitUsage, "give --bundle DIR"},
		{[]string{"cluster", "check", "--bundle", work, "--output", "yaml"}, "yaml", ExitUsage, "report.json"},
		{[]string{"cluster", "check", "--bundle", bundle, "-o", "json", "--probe-imag", "x"}, "json", ExitUsage, "unknown flag --probe-imag; did you mean --probe-image?"},
		{[]string{"node", "apply", "--bundle", bundle, "--node", "cp1", "-o", "json", "--timeout", "soon"}, "json", ExitUsage, `invalid value "soon" for flag --timeout`},
		{[]string{"inspect", filepath.Join(work, "nowhere.db"), "-o", "json"}, "json", ExitBadInput, "nowhere.db"},
		{[]string{"cluster", "restart", "--bundle", bundle}, "", ExitUsage, "report.json has no operation block"},
	} {
		cmdline := strings.Join(c.args, " ")
		r := run(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", cmdline, r.code, r.stderr, c.code, c.want)
		}
		if c.format == "" {
			if r.stdout != "" {
				t.Errorf("%s: stdout %q without -o json", cmdline, r.stdout)
			}
			continue
		}
		checkErrorDocument(t, cmdline, c.format, r)
	}
}

// nodeDoc is the node commands' document, decoded strictly.
type nodeDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	nodeops.Result
	Error string `json:"error"`
}

// checkNodeDoc: the document's kind, operation and outcome; every step's
// and phase's time >= 0, the phases the steps' in order (want), each the
// sum of its steps.
func checkNodeDoc(t *testing.T, what string, d nodeDoc, kind, op, outcome string, phases ...string) {
	t.Helper()
	if d.APIVersion != "snapshift.io/v1alpha1" || d.Kind != kind || d.Operation != op || d.Node != "n1" || d.Outcome != outcome {
		t.Errorf("%s: %s %s, operation %q node %q outcome %q; want %s, %s, n1, %s", what, d.APIVersion, d.Kind, d.Operation, d.Node, d.Outcome, kind, op, outcome)
	}
	sum := map[string]float64{}
	for _, s := range d.Steps {
		if s.Seconds < 0 || s.Step == "" || s.Status == "" {
			t.Errorf("%s: step %+v", what, s)
		}
		sum[s.Phase] += s.Seconds
	}
	var names []string
	for _, p := range d.Phases {
		names = append(names, p.Name)
		if p.Seconds < 0 || p.Seconds > sum[p.Name]+0.002 || p.Seconds < sum[p.Name]-0.002 {
			t.Errorf("%s: phase %s %v s, its steps %v s", what, p.Name, p.Seconds, sum[p.Name])
		}
	}
	if !slices.Equal(names, phases) || d.Seconds < 0 {
		t.Errorf("%s: phases %v in %v s, want %v", what, names, d.Seconds, phases)
	}
}

// TestNodeOutput: node apply, confirm and rollback on a real node root
// (nodeops's fixtures, recorders for systemctl, crictl and ip) print one
// document under -o json and -o yaml (the same keys), with the phases'
// times; their "[phase]" lines go to stderr then. The text ends with the
// closing line of the phases' times.
func TestNodeOutput(t *testing.T) {
	b, root := t.TempDir(), t.TempDir()
	nodetest.Bundle(t, b)
	nodetest.Node(t, root)
	bin := t.TempDir()
	nodetest.Recorders(t, bin, "")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	node := func(op string, extra ...string) result {
		return run(t, append([]string{"node", op, "--bundle", b, "--node", "n1", "--root", root}, extra...)...)
	}
	applyPhases := []string{"preflight", "backup", "stop", "install", "cni", "peers", "start"}

	r := node("apply", "--skip-health", "-o", "json")
	var first nodeDoc
	decodeStrict(t, "apply -o json", r.stdout, &first)
	firstJSON := r.stdout
	if r.code != ExitOK || !strings.Contains(r.stderr, "[backup] copied /etc/kubernetes") || !strings.Contains(r.stderr, "[apply] done: n1 runs") {
		t.Errorf("apply -o json: exit %d; the [phase] lines are not on stderr:\n%s", r.code, r.stderr)
	}
	checkNodeDoc(t, "apply -o json", first, "NodeApplyResult", "apply", "done", applyPhases...)

	// Again, as YAML: the steps that ran once are skipped; the same keys.
	r = node("apply", "--skip-health", "-o", "yaml")
	js := asJSON(t, "apply -o yaml", "yaml", r.stdout)
	var again nodeDoc
	decodeStrict(t, "apply -o yaml", js, &again)
	checkNodeDoc(t, "apply -o yaml", again, "NodeApplyResult", "apply", "done", applyPhases...)
	if again.Steps[1].Step != nodeops.StepBackup || again.Steps[1].Status != "skipped" {
		t.Errorf("a second apply: step %+v, want the backup skipped", again.Steps[1])
	}
	if k, want := keyPaths(t, js), keyPaths(t, firstJSON); !slices.Equal(k, want) {
		t.Errorf("-o yaml's keys %v, -o json's %v", k, want)
	}

	r = node("confirm", "-o", "json", "--quiet")
	var conf nodeDoc
	decodeStrict(t, "confirm -o json", r.stdout, &conf)
	checkNodeDoc(t, "confirm -o json --quiet", conf, "NodeConfirmResult", "confirm", "done", "confirm")
	if r.code != ExitOK || r.stderr != "" {
		t.Errorf("confirm -o json --quiet: exit %d, stderr %q", r.code, r.stderr)
	}

	// Text: the log lines, then the closing line with every phase's time.
	r = node("rollback", "--skip-health")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	closing := regexp.MustCompile(`^node rollback n1: done in \d+\.\ds \(stop \d+\.\ds, restore \d+\.\ds, cni \d+\.\ds, peers \d+\.\ds, start \d+\.\ds\)$`)
	if r.code != ExitOK || len(lines) < 2 || !closing.MatchString(lines[len(lines)-1]) || !strings.HasPrefix(lines[len(lines)-2], "[rollback] done") {
		t.Errorf("rollback: exit %d, stdout:\n%s", r.code, r.stdout)
	}

	// A refusal: the document says so (and is the only one on stdout).
	r = node("confirm", "-o", "json")
	var refused nodeDoc
	decodeStrict(t, "confirm after rollback -o json", r.stdout, &refused)
	checkNodeDoc(t, "confirm after rollback", refused, "NodeConfirmResult", "confirm", "refused")
	if r.code != ExitRefused || refused.Error == "" || "snapshift: "+refused.Error != strings.TrimSpace(r.stderr) {
		t.Errorf("confirm after rollback -o json: exit %d, error %q, stderr %q", r.code, refused.Error, r.stderr)
	}
	// In text, a refusal before any step is stderr's line alone; one in
	// a phase closes with the phases' times.
	if r = node("confirm"); r.code != ExitRefused || r.stdout != "" {
		t.Errorf("confirm after rollback: exit %d, stdout %q", r.code, r.stdout)
	}
	nodetest.Write(t, filepath.Join(b, "kubernetes/n1/pki/ca.key"), "another key\n", 0o600)
	r = node("apply")
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	closing = regexp.MustCompile(`^node apply n1: refused at preflight in \d+\.\ds \(preflight \d+\.\ds\)$`)
	if r.code != ExitRefused || !closing.MatchString(lines[len(lines)-1]) || !strings.Contains(r.stderr, "sha256 differs") {
		t.Errorf("apply of a tampered bundle: exit %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestClusterCheckOutput: cluster check's document (apiVersion, kind, ok,
// each check with its time, the checks again as phases, the total), the
// same keys under -o yaml, and the text's closing line; a failed check is
// exit 5 after the report.
func TestClusterCheckOutput(t *testing.T) {
	res := []clusterops.CheckResult{
		{Name: "nodes", OK: true, Detail: "3 Nodes Ready", Seconds: 0.012},
		{Name: "dns-probe", OK: false, Detail: "nslookup timed out", Read: "kubectl logs", Seconds: 4.26},
	}
	out := map[string]string{}
	for _, format := range []string{"json", "yaml", "text"} {
		var stdout bytes.Buffer
		o := &clusterOptions{check: true}
		o.outputFlag()
		o.format = format
		o.stdout = &stdout
		if format == "yaml" {
			o.stdout = yamlWriter{&stdout}
		}
		err := o.reportCheck(res, 4.5)
		if ExitCode(t.Context(), err) != ExitVerify || !strings.Contains(err.Error(), "1 of 2 checks failed (dns-probe)") {
			t.Errorf("-o %s: %v", format, err)
		}
		out[format] = stdout.String()
	}
	var doc struct {
		APIVersion string                   `json:"apiVersion"`
		Kind       string                   `json:"kind"`
		OK         bool                     `json:"ok"`
		Checks     []clusterops.CheckResult `json:"checks"`
		Phases     []phase                  `json:"phases"`
		Seconds    float64                  `json:"seconds"`
	}
	decodeStrict(t, "check -o json", out["json"], &doc)
	if doc.APIVersion != "snapshift.io/v1alpha1" || doc.Kind != "ClusterCheckResult" || doc.OK || len(doc.Checks) != 2 || doc.Seconds != 4.5 ||
		!slices.Equal(doc.Phases, []phase{{"nodes", 0.012}, {"dns-probe", 4.26}}) {
		t.Errorf("check -o json: %+v", doc)
	}
	if k, want := keyPaths(t, asJSON(t, "check -o yaml", "yaml", out["yaml"])), keyPaths(t, out["json"]); !slices.Equal(k, want) {
		t.Errorf("-o yaml's keys %v, -o json's %v", k, want)
	}
	lines := strings.Split(strings.TrimSpace(out["text"]), "\n")
	if want := "cluster check: 1 of 2 passed in 4.5s (nodes 0.0s, dns-probe 4.3s)"; lines[len(lines)-1] != want {
		t.Errorf("check's text ends with %q, want %q", lines[len(lines)-1], want)
	}
}
