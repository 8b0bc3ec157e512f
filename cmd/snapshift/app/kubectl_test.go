package app

import (
	"strings"
	"testing"
)

// TestHelpAnywhere: -h and --help show the command's help wherever they stand, after positional
// arguments and other flags too, with exit 0, as kubectl and etcdctl take them (issue 35).
func TestHelpAnywhere(t *testing.T) {
	in := copySample(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", in, "--service-cidr", newSvc, "--help"}, "snapshift plan - "},
		{[]string{"plan", in, "-h"}, "snapshift plan - "},
		{[]string{"transform", in, "-h", "--out", "x.db"}, "snapshift transform - "},
		{[]string{"get", in, "svc/default/kubernetes", "--help"}, "snapshift get - "},
		{[]string{"node", "apply", "--bundle", "b", "-h"}, "snapshift node apply - "},
		{[]string{"node", "-h"}, "snapshift node - "},
		{[]string{"--dry-run=server", "rebuild", "-h"}, "snapshift rebuild - "},
		{[]string{"-h"}, "snapshift - rewrite Kubernetes cluster state offline"},
		{[]string{"help", "plan"}, "snapshift plan - "},
	} {
		r := run(t, c.args...)
		if r.code != ExitOK || !strings.Contains(r.stdout, c.want) || r.stderr != "" {
			t.Errorf("snapshift %s: exit %d, stdout %.80q, stderr %q; want exit 0 and the help %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.want)
		}
	}
	// After "--" it is an argument like any other.
	if r := run(t, "inspect", "--", "-h"); r.code == ExitOK || strings.Contains(r.stdout, "NAME:") {
		t.Errorf("inspect -- -h: exit %d, stdout %.80q: -h after -- is a file name", r.code, r.stdout)
	}
	// A misspelt command with -h is still the misspelling.
	if r := run(t, "tranform", "-h"); r.code != ExitUsage || !strings.Contains(r.stderr, "did you mean transform?") {
		t.Errorf("tranform -h: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestLsNothingUnder: ls of a prefix that holds no live key prints nothing on stdout, says so on
// stderr with the prefix probably meant, and exits 0 (an empty listing is an answer, as kubectl
// get's "No resources found"); -o json prints [].
func TestLsNothingUnder(t *testing.T) {
	in := copySample(t)
	for arg, want := range map[string]string{
		"/nothing/":          "nothing under /nothing/ in " + in + "\n",
		"/registry/servics/": "nothing under /registry/servics/ in " + in + "; did you mean /registry/services/?\n",
		"svc/kube-sytem/":    "nothing under svc/kube-sytem/ in " + in + "; did you mean svc/kube-system/?\n",
		"deploy/no-such-ns/": "nothing under deploy/no-such-ns/ in " + in + "\n",
	} {
		r := run(t, "ls", in, arg)
		if r.code != ExitOK || r.stdout != "" || r.stderr != want {
			t.Errorf("ls %s: exit %d, stdout %q, stderr %q; want exit 0, no stdout, stderr %q", arg, r.code, r.stdout, r.stderr, want)
		}
	}
	if r := run(t, "ls", in, "/nothing/", "-o", "json"); r.code != ExitOK || strings.TrimSpace(r.stdout) != "[]" || r.stderr != "" {
		t.Errorf("ls -o json: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
