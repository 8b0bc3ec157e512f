package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBashCompletion drives the bash script in a real bash without the bash-completion package
// (--norc: no _get_comp_words_by_ref, no _init_completion), as the shell does on TAB: COMP_WORDS
// and COMP_CWORD set, _snapshift_func called, COMPREPLY read. Commands, subcommands, flags, flag
// values, the completion command's shells, and files for positional arguments (issue 35).
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "snapshift")
	if out, err := exec.Command("go", "build", "-o", bin, "../").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	for _, f := range []string{"work/etcd.db", "work/etcd-new.db", "work/rules.yaml", "work/sub/x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), "")
	}
	// complete runs one TAB: words are COMP_WORDS after "snapshift", the last one under the cursor.
	complete := func(words ...string) string {
		t.Helper()
		quoted := []string{"snapshift"}
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		script := "source <(snapshift completion bash)\n" +
			"type _get_comp_words_by_ref >/dev/null 2>&1 && echo 'bash-completion is loaded' >&2\n" +
			"COMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + itoa(len(words)) + "\n" +
			"_snapshift_func\nprintf '%s\\n' \"${COMPREPLY[@]}\""
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "command not found") || strings.Contains(string(out), "bash-completion") {
			t.Errorf("snapshift %s<TAB>: %v\n%s", strings.Join(words, " "), err, out)
		}
		return strings.Join(strings.Fields(string(out)), " ")
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{""}, "inspect ls get plan transform verify restore certs manifests rebuild clean rules node cluster version completion"},
		{[]string{"tra"}, "transform"},
		{[]string{"transform", "--serv"}, "--service-cidr --service-cidr-map"},
		{[]string{"transform", "etcd.db", "--pod"}, "--pod-network-cidr"},
		{[]string{"plan", "etcd.db", "-o", ""}, "text json yaml"},
		{[]string{"plan", "etcd.db", "--output", "j"}, "json"},
		{[]string{"plan", "etcd.db", "--output", "=", ""}, "text json yaml"}, // --output=<TAB>: bash splits at =
		{[]string{"get", "etcd.db", "svc/x", "-o", ""}, "yaml json"},
		{[]string{"completion", ""}, "bash zsh fish"},
		{[]string{"node", ""}, "apply rollback confirm rollback-if-unconfirmed"},
		{[]string{"node", "apply", "--bu"}, "--bundle"},
		{[]string{"certs", "--renew", ""}, "apiserver etcd"},
		{[]string{"plan", "etcd.db", "--leave-cni-state", ""}, "calico cilium"}, // package cni's leavable CNIs
		{[]string{"transform", ""}, "etcd-new.db etcd.db rules.yaml sub"},
		{[]string{"transform", "etcd"}, "etcd-new.db etcd.db"},
		{[]string{"plan", "etcd.db", "--rules", "ru"}, "rules.yaml"},
		{[]string{"inspect", "etcd.db", "--tmp-dir", ""}, "sub"},
		{[]string{"plan", "etcd.db", "--service-cidr", ""}, ""}, // a range: nothing to offer
		{[]string{"help", "reb"}, "rebuild"},
		{[]string{"tranform", ""}, ""},
	} {
		got := complete(c.words...)
		if sortedWords(got) != sortedWords(c.want) {
			t.Errorf("snapshift %s<TAB>: %q, want %q", strings.Join(c.words, " "), got, c.want)
		}
	}
	// The script registers the function for snapshift, with no option that would suppress the
	// trailing space after a complete word (nospace).
	out, err := exec.Command(bash, "--norc", "--noprofile", "-c", "source <("+bin+" completion bash); complete -p snapshift").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "complete -F _snapshift_func snapshift" {
		t.Errorf("complete -p snapshift: %v: %q", err, out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func sortedWords(s string) string {
	w := strings.Fields(s)
	slices.Sort(w)
	return strings.Join(w, " ")
}
