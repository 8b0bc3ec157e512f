package app

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSkip is the comment that marks a README sh block TestREADME does not run, with why.
var readmeSkip = regexp.MustCompile(`<!-- not run by TestREADME: [^>]+ -->\n$`)

// readmeFirst marks the README's first block, the two commands a new user runs first: TestREADME
// runs its make demo, not its make test, which is the test itself.
const readmeFirst = "<!-- TestREADME runs this block but its make test line, which is the test itself -->\n"

// readmeBlocks are README.md's fenced sh blocks: the ones to run, in order, and how many are
// marked as not run. A block is either run or marked: none is left out silently.
func readmeBlocks(t *testing.T, readme string) (run []string, skipped int) {
	t.Helper()
	parts := strings.Split(readme, "```sh\n")
	for i := 1; i < len(parts); i++ {
		body, _, ok := strings.Cut(parts[i], "```")
		if !ok {
			t.Fatalf("README block %d has no closing fence", i)
		}
		switch {
		case readmeSkip.MatchString(parts[i-1]):
			skipped++
			continue
		case strings.HasSuffix(parts[i-1], readmeFirst):
			var keep []string
			for _, l := range strings.SplitAfter(body, "\n") {
				if !strings.HasPrefix(l, "make test ") {
					keep = append(keep, l)
				}
			}
			body = strings.Join(keep, "")
		}
		run = append(run, body)
	}
	return run, skipped
}

// TestREADME runs the README's walkthrough as a new user would on a fresh machine, copied
// verbatim: every fenced sh block not marked "not run by TestREADME", in order, in one bash with
// -e, from the repository's root, with nothing set up that the README does not show (its
// rehearsal makes its own scratch directory, snapshot and PKI). It starts where the README starts:
// make demo (not make test: this is it). Only where things land is the test's: TMPDIR (the
// rehearsal's mktemp -d) is a temporary directory, and make build builds into it with the
// toolchain's VCS stamp off (GOFLAGS=-buildvcs=false: the Makefile stamps the version from git).
// So the README cannot drift from the tool (issue 35, issue 52 item 11).
func TestREADME(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// A new user's first two commands come first.
	first := "# snapshift\n\n" + readmeFirst + "```sh\nmake demo "
	if !strings.HasPrefix(string(b), first) || !strings.Contains(strings.SplitN(string(b), "```", 3)[1], "\nmake test ") {
		t.Errorf("README.md does not start with its block of make demo and make test (%q...)", first)
	}
	blocks, skipped := readmeBlocks(t, string(b))
	if len(blocks) < 9 || skipped < 4 {
		t.Fatalf("%d README blocks to run, %d marked as not run: the walkthrough is missing", len(blocks), skipped)
	}
	tmp := t.TempDir()
	scratch := filepath.Join(tmp, "tmp")
	for _, d := range []string{"bin", "tmp"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "set -euo pipefail\n"
	for i, blk := range blocks {
		script += "echo '+++ README block " + itoa(i+1) + "' >&2\n" + strings.ReplaceAll(blk, `$PWD/bin`, tmp+"/bin")
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "MAKEFLAGS=BIN="+tmp+"/bin/snapshift", "TMPDIR="+scratch)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands, run as written: %v\n%s\n--- the script:\n%s", err, tail(string(out), 60), script)
	}
	for _, want := range []string{"Distribution: kubeadm", "192.168.0.0/16", "172.24.0.0/16", "demo output in out/demo"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %q", want)
		}
	}
	// The rehearsal's scratch directory, the one mktemp -d made.
	ws, _ := filepath.Glob(filepath.Join(scratch, "tmp.*"))
	if len(ws) != 1 {
		t.Fatalf("the walkthrough made %d scratch directories (%v), want its one W=$(mktemp -d)", len(ws), ws)
	}
	for _, p := range []string{"etcd-new.db", "etcd-new/member/snap/db", "etcd-onepass/member/snap/db", "pki/apiserver.crt.bak"} {
		if _, err := os.Stat(filepath.Join(ws[0], p)); err != nil {
			t.Errorf("after the walkthrough: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "out", "demo", "bundle", "RUNBOOK.md")); err != nil {
		t.Errorf("after make demo: %v", err)
	}
	// make build stamped the version from git although the toolchain did not.
	v, err := exec.Command(filepath.Join(tmp, "bin", "snapshift"), "version", "-o", "json").Output()
	var info struct{ Version, Commit, Date string }
	if err != nil || json.Unmarshal(v, &info) != nil {
		t.Fatalf("version -o json: %v: %s", err, v)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if info.Commit != strings.TrimSpace(string(head)) || info.Date == "" || info.Version == "devel" {
		t.Errorf("make build with GOFLAGS=-buildvcs=false: version %q, commit %q, date %q; want git's", info.Version, info.Commit, info.Date)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
