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
	bin, work := completionSetup(t, dir)
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

// completionSetup builds the binary into dir/bin (for PATH) and makes a directory dir/work of
// files to complete: etcd.db, etcd-new.db, rules.yaml, sub/x.
func completionSetup(t *testing.T, dir string) (bin, work string) {
	t.Helper()
	bin = filepath.Join(dir, "bin", "snapshift")
	if out, err := exec.Command("go", "build", "-o", bin, "../").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, f := range []string{"work/etcd.db", "work/etcd-new.db", "work/rules.yaml", "work/sub/x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), "")
	}
	return bin, filepath.Join(dir, "work")
}

// shellEnv is the environment the shells run in: the built binary first in PATH, and a home of
// their own (zsh's compinit writes its .zcompdump there, fish its history and variables).
func shellEnv(dir, bin string) []string {
	home := filepath.Join(dir, "home")
	_ = os.MkdirAll(home, 0o700)
	return append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "HOME="+home, "ZDOTDIR="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local/share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
}

// TestFishCompletion runs the fish script in a real fish (CI installs it: no skip), asking fish's
// own completion engine (complete -C) for what a TAB after the command line would offer: commands,
// subcommands, flags, flag values (--output=j too), files and directories only where the binary
// says files or dirs, never mixed into a list of commands or flags (issue 52).
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Fatalf("fish (apt-get install fish; .ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	bin, work := completionSetup(t, dir)
	script := filepath.Join(dir, "snapshift.fish")
	out, err := exec.Command(bin, "completion", "fish").Output()
	if err != nil {
		t.Fatalf("completion fish: %v", err)
	}
	writeFile(t, script, string(out))
	fishRun := func(code string) (string, string) {
		t.Helper()
		cmd := exec.Command(fish, "--no-config", "-c", code)
		cmd.Dir, cmd.Env = work, shellEnv(dir, bin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("fish -c %q: %v\n%s", code, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	// complete is what fish offers for line (the completions, without their descriptions).
	complete := func(source, line string) string {
		t.Helper()
		stdout, stderr := fishRun(source + "; complete -C " + fishQuote(line))
		if stderr != "" {
			t.Errorf("%s<TAB>: stderr %q", line, stderr)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			c, _, _ := strings.Cut(l, "\t")
			got = append(got, c)
		}
		return strings.Join(got, " ")
	}
	src := "source " + fishQuote(script)
	for _, c := range []struct{ line, want string }{
		{"snapshift ", "inspect ls get plan transform verify restore certs manifests rebuild clean rules node cluster version completion"},
		{"snapshift cl", "clean cluster"},
		{"snapshift tra", "transform"},
		{"snapshift transform --serv", "--service-cidr --service-cidr-map"},
		{"snapshift transform -o ", "text json yaml"},
		{"snapshift plan etcd.db --output=j", "--output=json"},
		{"snapshift get etcd.db svc/x -o ", "yaml json"},
		{"snapshift completion ", "bash zsh fish"},
		{"snapshift node ", "apply rollback confirm rollback-if-unconfirmed"},
		{"snapshift certs --renew ", "apiserver etcd"},
		{"snapshift transform ", "etcd-new.db etcd.db rules.yaml sub/"},
		{"snapshift transform etcd", "etcd-new.db etcd.db"},
		{"snapshift plan etcd.db --rules ru", "rules.yaml"},
		{"snapshift plan etcd.db --rules=ru", "--rules=rules.yaml"},
		{"snapshift inspect etcd.db --tmp-dir ", "sub/"},
		{"snapshift plan etcd.db --service-cidr ", ""}, // a range: nothing, and no files
		{"snapshift help reb", "rebuild"},
		{"snapshift tranform ", ""},
	} {
		if got := complete(src, c.line); sortedWords(got) != sortedWords(c.want) {
			t.Errorf("%s<TAB>: %q, want %q", c.line, got, c.want)
		}
	}
	// A flag list: the flags, and none of the files around.
	flags := strings.Fields(complete(src, "snapshift transform --"))
	if !slices.Contains(flags, "--service-cidr") || !slices.Contains(flags, "--output") || !slices.Contains(flags, "--help") {
		t.Errorf("snapshift transform --<TAB>: %q, want the flags", flags)
	}
	for _, f := range flags {
		if !strings.HasPrefix(f, "--") {
			t.Errorf("snapshift transform --<TAB>: %q among the flags", f)
		}
	}
	// As the script's first line says: snapshift completion fish | source.
	if got := complete("snapshift completion fish | source", "snapshift cl"); got != "clean cluster" {
		t.Errorf("snapshift completion fish | source; snapshift cl<TAB>: %q", got)
	}
	// One completion, the script's: none of urfave/cli's generated ones.
	if stdout, _ := fishRun(src + "; complete -c snapshift"); strings.TrimSpace(stdout) != "complete --no-files snapshift -a '(__snapshift_complete)'" {
		t.Errorf("complete -c snapshift: %q", stdout)
	}
}

// fishQuote is s in fish's single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// TestZshCompletion runs the zsh script in a real zsh -f (no .zshrc, so no compinit; CI installs
// zsh: no skip). Sourced as documented (source <(snapshift completion zsh)) it loads compinit
// itself and registers _snapshift, with nothing on stderr (compdef: command not found, before);
// as a file _snapshift in $fpath, compinit autoloads it from its #compdef line. Then the function
// runs as zsh's completion does, with words and CURRENT set, compadd, compset and _files
// redefined to print what they are given.
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Fatalf("zsh (apt-get install zsh; .ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	bin, work := completionSetup(t, dir)
	zshRun := func(script string) (string, string, error) {
		cmd := exec.Command(zsh, "-f", "-c", script)
		cmd.Dir, cmd.Env = work, shellEnv(dir, bin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	// The documented line, alone.
	if _, stderr, err := zshRun("source <(snapshift completion zsh)"); err != nil || stderr != "" {
		t.Errorf("zsh -f -c 'source <(snapshift completion zsh)': %v, stderr %q", err, stderr)
	}
	fp := filepath.Join(dir, "fpath")
	out, err := exec.Command(bin, "completion", "zsh").Output()
	if err != nil {
		t.Fatalf("completion zsh: %v", err)
	}
	if err := os.MkdirAll(fp, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(fp, "_snapshift"), string(out))
	const stubs = "compadd() { print -r -- \"compadd $*\" }\n" +
		"compset() { print -r -- \"compset $*\" }\n" +
		"_files() { print -r -- \"_files $*\" }\n"
	for how, load := range map[string]string{
		"sourced":                "source <(snapshift completion zsh)",
		"sourced after compinit": "autoload -Uz compinit && compinit -u\nsource <(snapshift completion zsh)",
		"from fpath":             "fpath=(" + fp + " $fpath)\nautoload -Uz compinit && compinit -u",
	} {
		// tab runs one TAB: words after "snapshift", the last one under the cursor.
		tab := func(words ...string) string {
			t.Helper()
			quoted := []string{"snapshift"}
			for _, w := range words {
				quoted = append(quoted, "'"+w+"'")
			}
			script := load + "\n" + "print -r -- \"registered ${_comps[snapshift]}\"\n" + stubs +
				"words=(" + strings.Join(quoted, " ") + ")\nCURRENT=" + itoa(len(quoted)) + "\n_snapshift"
			stdout, stderr, err := zshRun(script)
			if err != nil || stderr != "" {
				t.Errorf("%s: snapshift %s<TAB>: %v, stderr %q", how, strings.Join(words, " "), err, stderr)
			}
			reg, rest, _ := strings.Cut(stdout, "\n")
			if reg != "registered _snapshift" {
				t.Errorf("%s: %q, want _snapshift registered for snapshift", how, reg)
			}
			return strings.TrimSpace(rest)
		}
		for _, c := range []struct {
			words []string
			want  string
		}{
			{[]string{""}, "compadd -- inspect ls get plan transform verify restore certs manifests rebuild clean rules node cluster version completion"},
			{[]string{"cl"}, "compadd -- inspect ls get plan transform verify restore certs manifests rebuild clean rules node cluster version completion"}, // compadd picks by the prefix
			{[]string{"transform", "-o", ""}, "compadd -- text json yaml"},
			{[]string{"plan", "etcd.db", "--output=j"}, "compset -P *=\ncompadd -- text json yaml"},
			{[]string{"completion", ""}, "compadd -- bash zsh fish"},
			{[]string{"node", ""}, "compadd -- apply rollback confirm rollback-if-unconfirmed"},
			{[]string{"transform", ""}, "_files"},
			{[]string{"inspect", "etcd.db", "--tmp-dir", ""}, "_files -/"},
			{[]string{"plan", "etcd.db", "--service-cidr", ""}, ""},
			{[]string{"tranform", ""}, ""},
		} {
			if got := tab(c.words...); got != c.want {
				t.Errorf("%s: snapshift %s<TAB>: %q, want %q", how, strings.Join(c.words, " "), got, c.want)
			}
		}
		flags := tab("transform", "--")
		if !strings.HasPrefix(flags, "compadd -- --") || !strings.Contains(flags, " --service-cidr ") || !strings.HasSuffix(flags, " --help") {
			t.Errorf("%s: snapshift transform --<TAB>: %q, want the flags", how, flags)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func sortedWords(s string) string {
	w := strings.Fields(s)
	slices.Sort(w)
	return strings.Join(w, " ")
}
