package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"

	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/snapshot"
)

// samplePath is the committed sample snapshot.
const samplePath = "../../../testdata/sample.db"

// result is one in-process run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) stderrLines() []string {
	s := strings.TrimRight(r.stderr, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// run runs the app in-process, like `snapshift args...`. Unless the command
// asks for --show-secrets, it also checks that no secret of the sample
// appears in anything the command printed.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"snapshift"}, args...), strings.NewReader(""), &stdout, &stderr)
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	// Every error any test provokes names flags and keys, never Go identifiers.
	if lines := r.stderrLines(); code != ExitOK && len(lines) > 0 {
		if n := goIdentifierIn(optionStructNames(t), lines[len(lines)-1]); n != "" {
			t.Errorf("snapshift %s: the error names the Go identifier %s: %q", strings.Join(args, " "), n, lines[len(lines)-1])
		}
		// ... nor a decoder's or parser's words (issue 52 item 3).
		if w := libraryWordingIn(lines[len(lines)-1]); w != "" {
			t.Errorf("snapshift %s: the error says %q, a library's words: %q", strings.Join(args, " "), w, lines[len(lines)-1])
		}
	}
	if !slices.Contains(args, "--show-secrets") {
		if leak := findSecret(r.stdout + r.stderr); leak != "" {
			t.Errorf("snapshift %s: output contains secret material %q", strings.Join(args, " "), leak)
		}
	}
	return r
}

// secretForms are the sample's secret values as they could appear in
// output: raw, base64 (Secret data in JSON/YAML), and quoted (escaped
// newlines); plus the marker every sample secret but one carries.
func secretForms() []string {
	var forms []string
	for _, s := range sample.SecretValues() {
		q := strconv.Quote(s)
		forms = append(forms, s, base64.StdEncoding.EncodeToString([]byte(s)), q[1:len(q)-1])
	}
	return append(forms, "SAMPLE-SECRET")
}

// findSecret returns the first secret form found in s, or "".
func findSecret(s string) string {
	for _, f := range secretForms() {
		if strings.Contains(s, f) {
			return f
		}
	}
	return ""
}

// copySample copies the sample snapshot into a new temporary directory.
func copySample(t *testing.T) string {
	t.Helper()
	return testfile.CopyTo(t, samplePath, filepath.Join(t.TempDir(), "sample.db"))
}

// liveState reads a snapshot's live keys with the snapshot package.
func liveState(t *testing.T, path string) (map[string]snapshot.KV, *snapshot.Index) {
	t.Helper()
	s, ix := testfile.OpenIndexed(t, path)
	live := map[string]snapshot.KV{}
	err := s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		kv := e.KV
		kv.Key, kv.Value = bytes.Clone(kv.Key), bytes.Clone(kv.Value)
		live[string(kv.Key)] = kv
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return live, ix
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
