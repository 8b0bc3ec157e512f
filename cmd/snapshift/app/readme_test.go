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
		if readmeSkip.MatchString(parts[i-1]) {
			skipped++
			continue
		}
		run = append(run, body)
	}
	return run, skipped
}

// TestREADME runs the README's walkthrough as a new user would, copied verbatim: every fenced sh
// block not marked "not run by TestREADME", in order, in one bash with -e, from the repository's
// root, with the placeholders the README names (/backup, /var/lib/etcd-*, /etc/kubernetes/pki) under
// a temporary directory and `make build` building into it with the toolchain's VCS stamp off
// (GOFLAGS=-buildvcs=false: the Makefile stamps the version from git). So the README cannot drift
// from the tool (issue 35).
func TestREADME(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, skipped := readmeBlocks(t, string(b))
	if len(blocks) < 8 || skipped < 5 {
		t.Fatalf("%d README blocks to run, %d marked as not run: the walkthrough is missing", len(blocks), skipped)
	}
	tmp := t.TempDir()
	for _, d := range []string{"var/lib", "bin"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The cluster's certificates (step 7 renews the apiserver's): a kubeadm PKI for the old range.
	if r := run(t, "certs", "--all", "--cert-dir", filepath.Join(tmp, "pki"), "--kubeconfig-dir", filepath.Join(tmp, "kubeconfigs"),
		"--service-cidr", "192.168.0.0/16", "--node-name", "cp1", "--apiserver-advertise-address", "10.0.0.11"); r.code != ExitOK {
		t.Fatalf("certs --all: exit %d: %s", r.code, r.stderr)
	}
	placeholders := strings.NewReplacer(
		"/backup/", tmp+"/backup/",
		"/backup ", tmp+"/backup ",
		"/var/lib/etcd-", tmp+"/var/lib/etcd-",
		"/etc/kubernetes/pki", tmp+"/pki",
		`$PWD/bin`, tmp+"/bin",
	)
	script := "set -euo pipefail\n"
	for i, blk := range blocks {
		script += "echo '+++ README block " + itoa(i+1) + "' >&2\n" + placeholders.Replace(blk)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "MAKEFLAGS=BIN="+tmp+"/bin/snapshift")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands, run as written: %v\n%s\n--- the script:\n%s", err, tail(string(out), 60), script)
	}
	for _, want := range []string{"Distribution: kubeadm", "192.168.0.0/16", "172.24.0.0/16"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output lacks %q", want)
		}
	}
	for _, p := range []string{"backup/etcd-new.db", "var/lib/etcd-new/member/snap/db", "var/lib/etcd-onepass/member/snap/db", "pki/apiserver.crt.bak"} {
		if _, err := os.Stat(filepath.Join(tmp, p)); err != nil {
			t.Errorf("after the walkthrough: %v", err)
		}
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
