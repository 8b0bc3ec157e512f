package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/transform"
)

const designDoc = "../../docs/DESIGN.md"

// designDecisions are the numbers of docs/DESIGN.md's decisions, checked
// to run 1, 2, 3, ... without a gap or a duplicate.
func designDecisions(t *testing.T) map[int]bool {
	t.Helper()
	b, err := os.ReadFile(designDoc)
	if err != nil {
		t.Fatalf("docs/DESIGN.md: %v (the design lives in the repository)", err)
	}
	got := map[int]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		m := numbered.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if got[n] {
			t.Errorf("DESIGN.md:%d: decision %d is numbered twice", i+1, n)
		}
		got[n] = true
	}
	for n := 1; n <= len(got); n++ {
		if !got[n] {
			t.Errorf("DESIGN.md has %d decisions but no decision %d: number them 1..N without a gap", len(got), n)
		}
	}
	if len(got) < 20 {
		t.Fatalf("found %d numbered decisions in DESIGN.md; are they still written `N. **Title.**`?", len(got))
	}
	return got
}

// sources are the module's Go and Markdown files (not testdata), each with
// its comment lines joined, so that a citation wrapped over two comment
// lines is read whole.
func sources(t *testing.T) map[string]string {
	t.Helper()
	join := regexp.MustCompile(`\n[ \t]*(//[ \t]*)?`)
	out := map[string]string{}
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "bin" || d.Name() == "out") {
			return filepath.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(path, "../../")] = join.ReplaceAllString(string(b), " ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	// designCite is "DESIGN decision 23", "DESIGN.md decisions 2 and 3",
	// "DESIGN.md decisions 2–3", "DESIGN §23".
	designCite = regexp.MustCompile(`DESIGN(?:\.md)?\s+(?:decisions?\s+|§\s?)(\d+)(?:\s*(?:–|-|and|to|,)\s*§?(\d+))?`)
	// anyDecision is every "decision N" and what stands before it.
	anyDecision = regexp.MustCompile(`(\S*\s+)?decisions?\s+(\d+)`)
)

// TestDesignCitations: every citation of a design decision in the code
// and the docs names one docs/DESIGN.md has, and every "decision N" says
// which document it means: DESIGN.md, the one numbering.
func TestDesignCitations(t *testing.T) {
	have := designDecisions(t)
	n := 0
	for path, text := range sources(t) {
		for _, m := range designCite.FindAllStringSubmatch(text, -1) {
			for _, s := range m[1:] {
				if d, err := strconv.Atoi(s); err == nil {
					n++
					if !have[d] {
						t.Errorf("%s cites DESIGN.md decision %d, which docs/DESIGN.md does not have (1..%d)", path, d, len(have))
					}
				}
			}
		}
		if path == "docs/DESIGN.md" {
			continue // its own "decision N" are its own
		}
		for _, m := range anyDecision.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(m[1], "DESIGN") {
				t.Errorf("%s: %q: say which document: DESIGN.md decision N (ARCHITECTURE.md carries the decisions out under DESIGN.md's numbers)", path, strings.TrimSpace(m[0]))
			}
		}
	}
	if n < 5 {
		t.Errorf("found %d DESIGN citations; is the pattern still matching the code's?", n)
	}
}

// TestPhaseList: ARCHITECTURE.md names the run's phases in the order of
// transform.Phases(), every one and no other.
func TestPhaseList(t *testing.T) {
	doc := strings.Join(strings.Fields(readDoc(t)), " ")
	const marker = "in the order of `transform.Phases()`:"
	_, after, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("ARCHITECTURE.md does not list the phases after %q", marker)
	}
	list, _, _ := strings.Cut(after, "(")
	var got []string
	for _, m := range backticked.FindAllStringSubmatch(list, -1) {
		got = append(got, m[1])
	}
	if want := transform.Phases(); !slices.Equal(got, want) {
		t.Errorf("ARCHITECTURE.md's phase list is %q; transform.Phases() is %q", got, want)
	}
}

var (
	goPath   = regexp.MustCompile("`((?:[a-z0-9_]+/)+[a-z0-9_]+\\.go)`")
	qualName = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Z][A-Za-z0-9]*)[`(]")
)

// TestDocNames: every Go file ARCHITECTURE.md names by path exists, and
// every `pkg.Name` it gives for a package of the module is declared there.
func TestDocNames(t *testing.T) {
	doc := readDoc(t)
	n := 0
	for _, m := range goPath.FindAllStringSubmatch(doc, -1) {
		n++
		if _, err := os.Stat("../../" + m[1]); err != nil {
			t.Errorf("ARCHITECTURE.md names %s, which does not exist", m[1])
		}
	}
	for _, m := range qualName.FindAllStringSubmatch(doc, -1) {
		pkg, name := m[1], m[2]
		if st, err := os.Stat("../../" + pkg); err != nil || !st.IsDir() {
			continue // another module's (etcdutl, bbolt...)
		}
		n++
		if !declares("../../"+pkg, name) {
			t.Errorf("ARCHITECTURE.md names %s.%s, which package %s does not declare", pkg, name, pkg)
		}
	}
	if n < 20 {
		t.Errorf("checked %d names in ARCHITECTURE.md; are the patterns still matching?", n)
	}
	// The worked example's registry line: "`X,` after `Y`".
	ex := regexp.MustCompile("`rules/registry.go`\\*\\*: `(\\w+),` after `(\\w+)`").FindStringSubmatch(doc)
	if ex == nil {
		t.Fatal("ARCHITECTURE.md's worked example no longer names its registry line")
	}
	reg, err := os.ReadFile("../../rules/registry.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(reg))
	i := slices.Index(lines, ex[1]+",")
	if i < 1 || lines[i-1] != ex[2]+"," {
		t.Errorf("ARCHITECTURE.md's worked example puts %s after %s; rules/registry.go does not", ex[1], ex[2])
	}
}

// declares says whether a non-test Go file in dir declares name at the
// top level (a func, a method's receiver type aside, a type, a var or a
// const, alone or in a block).
func declares(dir, name string) bool {
	re := regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?|type |var |const |\t)` + name + `\b`)
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if b, err := os.ReadFile(f); err == nil && re.Match(b) {
			return true
		}
	}
	return false
}
