package app

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/buildinfo"
)

// TestVersionOfABuiltBinary builds the real binary as `make release` does
// (-ldflags -X for version, commit and date) and checks that `snapshift
// version -o json` reports those values, and the etcd, bbolt and
// Kubernetes library versions go.mod selects; and, since it has a real
// binary, the shell completion candidates.
func TestVersionOfABuiltBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "snapshift")
	pkg := "github.com/snapshift/snapshift/internal/buildinfo."
	ld := "-X " + pkg + "version=v9.8.7-test -X " + pkg + "commit=0123456789abcdef -X " + pkg + "date=2026-11-25T12:00:00Z"
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ld, "-o", bin, "../")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("snapshift version -o json: %v", err)
	}
	var got buildinfo.Info
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	if got.Version != "v9.8.7-test" || got.Commit != "0123456789abcdef" || got.Date != "2026-11-25T12:00:00Z" {
		t.Errorf("version, commit, date = %q, %q, %q; want the -ldflags values", got.Version, got.Commit, got.Date)
	}
	if !strings.HasPrefix(got.GoVersion, "go") || !strings.Contains(got.Platform, "/") {
		t.Errorf("goVersion %q, platform %q", got.GoVersion, got.Platform)
	}
	for _, m := range []string{"go.etcd.io/etcd/server/v3", "go.etcd.io/bbolt", "k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"} {
		want := goModVersion(t, m)
		if got.Dependencies[m] == "" || got.Dependencies[m] != want {
			t.Errorf("dependency %s = %q, want go.mod's %q", m, got.Dependencies[m], want)
		}
	}
	// --version, -v and -o yaml say the same.
	text, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(text), "snapshift v9.8.7-test (commit 0123456789ab, ") {
		t.Errorf("snapshift --version: %v\n%s", err, text)
	}
	if short, err := exec.Command(bin, "-v").Output(); err != nil || string(short) != string(text) {
		t.Errorf("snapshift -v: %v\n%s", err, short)
	}
	// The candidates the completion scripts ask for (TestBashCompletion drives them in bash).
	cands, err := exec.Command(bin, "__complete", "").Output()
	for _, c := range []string{"words", "transform", "rebuild", "version", "completion"} {
		if !slices.Contains(strings.Fields(string(cands)), c) {
			t.Errorf("snapshift __complete '': %v, candidates %q lack %s", err, cands, c)
		}
	}
	flags, err := exec.Command(bin, "__complete", "transform", "--serv").Output()
	if !slices.Contains(strings.Fields(string(flags)), "--service-cidr") {
		t.Errorf("snapshift transform --serv<TAB>: %v, candidates %q lack --service-cidr", err, flags)
	}
	y, err := exec.Command(bin, "version", "-o", "yaml").Output()
	var fromYAML buildinfo.Info
	if err != nil || yaml.Unmarshal(y, &fromYAML) != nil || fromYAML.Version != got.Version || fromYAML.Dependencies["go.etcd.io/bbolt"] != got.Dependencies["go.etcd.io/bbolt"] {
		t.Errorf("snapshift version -o yaml: %v\n%s", err, y)
	}
}

// goModVersion is the version of module m that go.mod requires.
func goModVersion(t *testing.T, m string) string {
	t.Helper()
	b, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == m {
			return f[1]
		}
	}
	t.Fatalf("go.mod does not require %s", m)
	return ""
}

// TestVerifyJSONNamesItsMaker: verify's machine report carries the
// identity of the snapshift that checked, beside the checks.
func TestVerifyJSONNamesItsMaker(t *testing.T) {
	r := run(t, "verify", samplePath, "-o", "json", "--quiet")
	if r.code != ExitOK {
		t.Fatalf("verify: exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		OK        bool           `json:"ok"`
		Checks    []any          `json:"checks"`
		Snapshift buildinfo.Info `json:"snapshift"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Checks) == 0 || rep.Snapshift.Version == "" || !strings.HasPrefix(rep.Snapshift.GoVersion, "go") {
		t.Errorf("verify -o json: ok %v, %d checks, snapshift %+v", rep.OK, len(rep.Checks), rep.Snapshift)
	}
	r = run(t, "verify", samplePath, "-o", "yaml", "--quiet")
	if r.code != ExitOK || !strings.Contains(r.stdout, "\nsnapshift:\n") || !strings.Contains(r.stdout, "checks:") {
		t.Errorf("verify -o yaml: exit %d:\n%s", r.code, r.stdout)
	}
}

// TestYAMLWhereverJSON: every command whose --output takes json takes yaml
// too, and -o yaml is the same document as -o json.
func TestYAMLWhereverJSON(t *testing.T) {
	for _, c := range New(nil, nil, nil).Commands {
		for _, f := range c.Flags {
			if !slices.Contains(f.Names(), "output") {
				continue
			}
			usage := f.(interface{ GetUsage() string }).GetUsage()
			if strings.Contains(usage, "json") && !strings.Contains(usage, "yaml") {
				t.Errorf("%s --output: %q has json but not yaml", c.Name, usage)
			}
		}
	}
	j, y := run(t, "rules", "-o", "json"), run(t, "rules", "-o", "yaml")
	var fromJSON, fromYAML any
	if err := json.Unmarshal([]byte(j.stdout), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(y.stdout), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("rules -o yaml is not rules -o json as YAML:\n%s", y.stdout)
	}
}
