// Package archtest holds docs/ARCHITECTURE.md's package table, its
// numbering, the node side's isolation from the engine, docs/DESIGN.md's
// numbering and every citation of it, ARCHITECTURE.md's phase list, file
// paths and package names, and the limit on a function's length as tests
// over the module's real import graph (`go list`) and source, so that a
// change that breaks them, or a doc that no longer says what the code
// does, fails `make test`.
package archtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/snapshift/snapshift/"

const archDoc = "../../docs/ARCHITECTURE.md"

// imports returns each package of the module (relative name) with the
// module packages and selected third-party packages it imports (not its
// tests').
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			switch {
			case strings.HasPrefix(imp, module):
				graph[pkg] = append(graph[pkg], strings.TrimPrefix(imp, module))
			case strings.HasPrefix(imp, "github.com/urfave/cli"):
				graph[pkg] = append(graph[pkg], "urfave/cli")
			}
		}
	}
	if len(graph) < 10 {
		t.Fatalf("go list found %d packages; the test is not looking at the module", len(graph))
	}
	return graph
}

// row is one row of the package table: the packages it names and the
// module packages they may import.
type row struct {
	line   int
	pkgs   []string
	allows map[string]bool
}

var backticked = regexp.MustCompile("`([^`]+)`")

// packageTable reads the table under "## Packages and what each may
// import": the first column names packages in backticks, the last one the
// module packages they may import, in backticks, up to an em dash that
// starts a comment ("nothing" names none).
func packageTable(t *testing.T, doc string) []row {
	t.Helper()
	var rows []row
	in := false
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## Packages and what each may import")
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("ARCHITECTURE.md:%d: a table row needs three columns: %s", i+1, line)
		}
		r := row{line: i + 1, allows: map[string]bool{}}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			r.pkgs = append(r.pkgs, m[1])
		}
		allowed, _, _ := strings.Cut(cells[len(cells)-1], "—")
		for _, m := range backticked.FindAllStringSubmatch(allowed, -1) {
			r.allows[m[1]] = true
		}
		rows = append(rows, r)
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows in ARCHITECTURE.md's package table; is the heading still \"## Packages and what each may import\"?", len(rows))
	}
	return rows
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPackageTable: every package of the module has exactly one row of
// ARCHITECTURE.md's table, every row names a package that exists, and
// every import of a module package is one its row allows.
func TestPackageTable(t *testing.T) {
	graph := imports(t)
	rowOf := map[string]row{}
	for _, r := range packageTable(t, readDoc(t)) {
		for _, p := range r.pkgs {
			if prev, ok := rowOf[p]; ok {
				t.Errorf("ARCHITECTURE.md:%d: %s has a row already (line %d)", r.line, p, prev.line)
			}
			if _, ok := graph[p]; !ok {
				t.Errorf("ARCHITECTURE.md:%d: %s is no package of the module (go list)", r.line, p)
			}
			rowOf[p] = r
		}
	}
	var pkgs []string
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		r, ok := rowOf[pkg]
		if !ok {
			t.Errorf("%s has no row in ARCHITECTURE.md's package table: add one (what it is, what it may import)", pkg)
			continue
		}
		for _, dep := range graph[pkg] {
			if dep != "urfave/cli" && !r.allows[dep] {
				t.Errorf("%s imports %s, which its row in ARCHITECTURE.md (line %d) does not allow: change the code, or the row and the reason", pkg, dep, r.line)
			}
		}
	}
}

// TestLayering holds what the table cannot say: who may import the CLI
// and urfave/cli.
func TestLayering(t *testing.T) {
	for pkg, deps := range imports(t) {
		for _, dep := range deps {
			switch {
			case strings.HasPrefix(dep, "cmd/") && !strings.HasPrefix(pkg, "cmd/"):
				t.Errorf("%s imports %s: nothing outside cmd/ imports the CLI", pkg, dep)
			case dep == "urfave/cli" && !strings.HasPrefix(pkg, "cmd/"):
				t.Errorf("%s imports urfave/cli: library packages know nothing of the command line", pkg)
			}
		}
	}
}

var numbered = regexp.MustCompile(`^(\d+)\. \*\*`)

var (
	// designTitle is a DESIGN.md decision's number and its bold title.
	designTitle = regexp.MustCompile(`(?m)^(\d+)\. \*\*(.+?)\*\*`)
	// archItem is an item of ARCHITECTURE.md's decisions section, its
	// whitespace joined: the DESIGN.md decision it carries out, and its title.
	archItem = regexp.MustCompile(`^- \*\*DESIGN\.md decision (\d+)\. (.+?)\*\*`)
	// archCite is a citation of ARCHITECTURE.md by a number of its own.
	archCite = regexp.MustCompile(`ARCHITECTURE(?:\.md)?\s*§\s*\d+`)
)

const archDecisions = "## The decisions, as the code carries them out"

// TestNumbering: DESIGN.md and ARCHITECTURE.md number the same promises
// the same way, because there is one numbering. Every item of
// ARCHITECTURE.md's decisions section names a DESIGN.md decision by its
// number and its title there, each once, in ascending order; and nothing
// cites ARCHITECTURE.md by a number of its own (the old "§N", which
// counted the same promises differently from 13 on).
func TestNumbering(t *testing.T) {
	b, err := os.ReadFile(designDoc)
	if err != nil {
		t.Fatal(err)
	}
	titles := map[int]string{}
	for _, m := range designTitle.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[1])
		titles[n] = m[2]
	}
	_, sec, ok := strings.Cut(readDoc(t), "\n"+archDecisions+"\n")
	if !ok {
		t.Fatalf("ARCHITECTURE.md has no section %q", archDecisions)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	last, n := 0, 0
	for _, it := range strings.Split(sec, "\n- ")[1:] {
		item := "- " + strings.Join(strings.Fields(it), " ")
		m := archItem.FindStringSubmatch(item)
		if m == nil {
			t.Errorf("ARCHITECTURE.md's decisions: %.60q... does not start **DESIGN.md decision N. Title.**", item)
			continue
		}
		n++
		d, _ := strconv.Atoi(m[1])
		want, ok := titles[d]
		switch {
		case !ok:
			t.Errorf("ARCHITECTURE.md carries out DESIGN.md decision %d, which DESIGN.md does not have", d)
		case strings.TrimRight(m[2], ".:") != strings.TrimRight(want, ".:"):
			t.Errorf("ARCHITECTURE.md's DESIGN.md decision %d is titled %q; DESIGN.md titles it %q", d, m[2], want)
		}
		if d <= last {
			t.Errorf("ARCHITECTURE.md's DESIGN.md decision %d comes after %d: one item per decision, in ascending order", d, last)
		}
		last = d
	}
	if n < 15 {
		t.Errorf("found %d items in ARCHITECTURE.md's decisions section; are they still `- **DESIGN.md decision N. Title.**`?", n)
	}
	for path, text := range sources(t) {
		if path == "internal/archtest/archtest_test.go" {
			continue // the pattern itself
		}
		for _, m := range archCite.FindAllString(text, -1) {
			t.Errorf("%s cites %q: cite the promise by its one number, DESIGN.md decision N (ARCHITECTURE.md carries it out under the same number)", path, m)
		}
	}
}

// engine are the packages of the machine that rebuilds; the node-side
// code (nodeops) may depend on none of them, directly or not, only on the
// bundle's contract.
var engine = []string{"migrate", "rules", "transform", "verify", "leftovers", "rebuild", "pki", "manifests", "state", "snapshot",
	"codec", "encryption", "ruleset", "inspect"}

// TestNodeSideIsolated: `go list -deps ./nodeops` names no package of the
// engine (docs/DESIGN.md decision 31).
func TestNodeSideIsolated(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "../../nodeops")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v: %s", err, stderr.String())
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[strings.TrimPrefix(d, module)] = true
	}
	if !deps["bundle"] {
		t.Fatalf("go list -deps ./nodeops does not name bundle; is the test looking at the module?\n%s", out)
	}
	for _, e := range engine {
		if deps[e] {
			t.Errorf("nodeops depends on %s (go list -deps ./nodeops): the node side reads the bundle through package bundle, never the engine", e)
		}
	}
}
