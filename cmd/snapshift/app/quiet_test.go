package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 52 item 6: quiet means quiet, dry runs write nothing, and "-" is no output path.

// wroteWord finds a past-tense claim of writing: what a dry run must never print.
var wroteWord = regexp.MustCompile(`\bwrote\b`)

// TestRebuildDryRunAndQuiet runs rebuild on a one-member file whose output's parents do not
// exist: --dry-run says "would write" (no "wrote" line) in one line per directory and leaves no
// trace, not even the parents; --quiet prints one line, the bundle's, and nothing on stderr.
func TestRebuildDryRunAndQuiet(t *testing.T) {
	work := t.TempDir()
	_, prepare := rebuildFile("rebuild.yaml", replace("output: "+filepath.Join(work, "bundle"), "output: "+filepath.Join(work, "new", "parent", "bundle")))
	prepare(t, work)
	config := filepath.Join(work, "rebuild.yaml")
	bundle := filepath.Join(work, "new", "parent", "bundle")

	r := run(t, "rebuild", "--config", config, "--dry-run")
	if r.code != ExitOK {
		t.Fatalf("rebuild --dry-run: exit %d: %s", r.code, r.stderr)
	}
	if m := wroteWord.FindAllString(r.stdout, -1); len(m) > 0 {
		t.Errorf("rebuild --dry-run says %q %d times, though it writes nothing:\n%s", m[0], len(m), r.stdout)
	}
	for _, want := range []string{"Keys:   would write ", "/kubernetes/cp1/pki: would write ", "[restore] would restore member cp1 into " + filepath.Join(bundle, "etcd", "cp1"),
		"[manifests] would write 4 manifests in " + filepath.Join(bundle, "kubernetes", "<node>", "manifests"),
		"Dry run: nothing was written to " + bundle} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rebuild --dry-run does not say %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Lstat(filepath.Join(work, "new")); err == nil {
		t.Errorf("rebuild --dry-run left %s behind", filepath.Join(work, "new"))
	}

	r = run(t, "rebuild", "--config", config, "--dry-run", "--quiet")
	if r.code != ExitOK || r.stderr != "" || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "Dry run: nothing was written to "+bundle) {
		t.Errorf("rebuild --dry-run --quiet: exit %d, want 0 and one line on stdout, none on stderr:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
	}

	r = run(t, "rebuild", "--config", config, "--quiet")
	want := "Bundle: " + bundle + " — next: " + filepath.Join(bundle, "RUNBOOK.md") + "\n"
	if r.code != ExitOK || r.stderr != "" || r.stdout != want {
		t.Errorf("rebuild --quiet: exit %d, want 0 and only %q:\n%s--- stderr:\n%s", r.code, want, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(bundle, "report.json")); err != nil {
		t.Errorf("rebuild --quiet: the whole report is to be in the bundle: %v", err)
	}
}

// TestDashIsNoOutputPath: "-" given where a command writes a file or directory is refused with
// exit 2, and no file named "-" appears in the working directory.
func TestDashIsNoOutputPath(t *testing.T) {
	in := copySample(t)
	optionStructNames(t) // read the module's sources (relative paths) before leaving the package's directory
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"transform", in, "--out", "-", "--service-cidr", newSvc}, "--out -: the new snapshot cannot go to standard output: snapshift transform writes it under a temporary name, checks it and renames it into place; give a path (e.g. --out ./etcd-new.db)"},
		{[]string{"transform", in, "--out=-"}, "--out -: the new snapshot cannot go to standard output"},
		{[]string{"restore", in, "--data-dir", "-"}, "--data-dir -: the member's data dir cannot go to standard output"},
		{[]string{"restore", in, "--data-dir", "m1", "--wal-dir", "-"}, "--wal-dir -: the member's WAL dir cannot go to standard output"},
		{[]string{"certs", "--all", "--cert-dir", "-"}, "--cert-dir -: the certificates cannot go to standard output"},
		{[]string{"manifests", "--generate", "--out-dir", "-"}, "--out-dir -: the manifests cannot go to standard output"},
	} {
		r := run(t, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("snapshift %s: exit %d, want %d and %q:\n%s", strings.Join(c.args, " "), r.code, ExitUsage, c.want, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(cwd); len(entries) > 0 {
		t.Errorf("the refusals left %s in the working directory", entries[0].Name())
	}
}
