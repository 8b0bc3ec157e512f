package app

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readmeExitCodes is README.md's table of exit codes, between its markers.
var readmeExitCodes = regexp.MustCompile(`(?s)(<!-- exit codes: [^\n]*-->\n)(.*?)(<!-- end of exit codes -->\n)`)

// TestExitCodesDocumented: README.md's table of exit codes is the code's own table (exitCodes), as
// --help's EXIT CODES is; `make docs` (-update-docs) rewrites it. Every exit code Main returns has
// a row, in order, and no row names a code Main does not return.
func TestExitCodesDocumented(t *testing.T) {
	const path = "../../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := readmeExitCodes.FindSubmatchIndex(b)
	if m == nil {
		t.Fatalf("%s has no exit code table between <!-- exit codes: ... --> and <!-- end of exit codes -->", path)
	}
	want := exitCodeTable()
	if *updateDocs {
		out := string(b[:m[4]]) + want + string(b[m[5]:])
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if got := string(b[m[4]:m[5]]); got != want {
		t.Errorf("README.md's exit code table is not the code's (exitCodes): run make docs\n got:\n%s\nwant:\n%s", got, want)
	}
	var codes []int
	for _, e := range exitCodes {
		codes = append(codes, e.Code)
		if strings.TrimSpace(e.Help) == "" || strings.TrimSpace(e.Doc) == "" {
			t.Errorf("exit code %d has no meaning", e.Code)
		}
	}
	if all := []int{ExitOK, ExitError, ExitUsage, ExitBadInput, ExitRefused, ExitVerify, ExitInterrupted}; !slices.Equal(codes, all) {
		t.Errorf("exitCodes lists %v, want every exit code once, in order: %v", codes, all)
	}
	if help := exitCodeHelp(); !strings.Contains(New(nil, nil, nil).Description, help) {
		t.Errorf("--help does not show exitCodes:\n%s", help)
	}
	for _, l := range strings.Split(exitCodeHelp(), "\n") {
		if len(l) > 112 {
			t.Errorf("--help's EXIT CODES line is %d wide: %q", len(l), l)
		}
	}
}

// TestBadInputCodesAreDocumented: every row of the mistakes table expects a documented exit code.
func TestBadInputCodesAreDocumented(t *testing.T) {
	documented := map[int]bool{}
	for _, e := range exitCodes {
		documented[e.Code] = true
	}
	for _, row := range append(append(badRows(), zipRows()...), messageRows()...) {
		if !documented[row.code] || row.code == ExitOK {
			t.Errorf("row %q expects exit %d: not a documented code for a mistake", row.name, row.code)
		}
	}
}

// troubleshootingHeading is a section of docs/TROUBLESHOOTING.md: "## Exit N: ...".
var troubleshootingHeading = regexp.MustCompile(`(?m)^## Exit (\d+): `)

// TestTroubleshootingCodes: docs/TROUBLESHOOTING.md, linked from README's table, says what every
// exit code of exitCodes means and what to do, one section per code, in the table's order.
func TestTroubleshootingCodes(t *testing.T) {
	b, err := os.ReadFile("../../../docs/TROUBLESHOOTING.md")
	if err != nil {
		t.Fatal(err)
	}
	var got, want []int
	for _, m := range troubleshootingHeading.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	for _, e := range exitCodes {
		want = append(want, e.Code)
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/TROUBLESHOOTING.md has sections for exit codes %v; exitCodes is %v: one \"## Exit N: ...\" per code, in order", got, want)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](docs/TROUBLESHOOTING.md)") {
		t.Error("README.md does not link docs/TROUBLESHOOTING.md")
	}
}
