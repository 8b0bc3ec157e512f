package archtest

import (
	"fmt"
	"github.com/snapshift/snapshift/internal/testfile"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// userDocs are the documents a user reads, relative to the module's root.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "hack/lab/README.md"}
	for _, d := range docs {
		out = append(out, strings.TrimPrefix(d, "../../"))
	}
	return out
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	mdHeading = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	fence     = regexp.MustCompile("(?ms)^```.*?^```")
)

// TestDocLinks: every relative link of the README and the docs names a
// file that exists, and every #anchor a heading of that file, so that a
// moved section (issue 52 item 11) leaves no dead link behind.
func TestDocLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, _ := os.ReadFile("../../" + path)
		a := map[string]bool{}
		for _, m := range mdHeading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			a[testfile.Anchor(m[1])] = true
		}
		anchors[path] = a
		return a
	}
	n := 0
	for _, doc := range userDocs(t) {
		b, err := os.ReadFile("../../" + doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), file)))
				if _, err := os.Stat("../../" + path); err != nil {
					t.Errorf("%s links %s, which does not exist", doc, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s links %s: %s has no heading with the anchor #%s", doc, target, path, anchor)
			}
		}
	}
	if n < 30 {
		t.Errorf("checked %d links in the docs; is the pattern still matching?", n)
	}
}

// constValue is the value of a Go constant declared in file as
// `name = value` (a number, N << 10, N << 20, or a string).
func constValue(t *testing.T, file, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:const\s+)?` + name + `\s*=\s*(.+?)\s*(?://.*)?$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s declares no constant %s", file, name)
	}
	v := string(m[1])
	if s, err := strconv.Unquote(v); err == nil {
		return s
	}
	if n, shift, ok := strings.Cut(v, " << "); ok {
		base, err1 := strconv.Atoi(n)
		sh, err2 := strconv.Atoi(shift)
		if err1 == nil && err2 == nil {
			switch sh {
			case 10:
				return fmt.Sprintf("%d KiB", base)
			case 20:
				return fmt.Sprintf("%d MiB", base)
			}
		}
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil {
		t.Fatalf("%s: %s = %s: not a value this test reads", file, name, v)
	}
	if e := len(strconv.FormatInt(n, 10)) - 1; n >= 1000 && strconv.FormatInt(n, 10) == "1"+strings.Repeat("0", e) {
		return fmt.Sprintf("10^%d", e)
	}
	return strconv.FormatInt(n, 10)
}

// TestDocFacts: sentences of the docs that state a default, a size or a
// path the code defines say what the code says, so that changing the
// constant without the sentence (or the sentence without the constant)
// fails here.
func TestDocFacts(t *testing.T) {
	for _, f := range []struct{ doc, phrase, file, constant string }{
		{"README.md", "the revision is bumped by %s", "snapshot/restore.go", "DefaultRevisionBump"},
		{"docs/MIGRATION.md", "the revision is bumped by %s", "snapshot/restore.go", "DefaultRevisionBump"},
		{"docs/MIGRATION.md", "Databases are written with %s bbolt pages", "snapshot/writer.go", "DefaultPageSize"},
		{"docs/PERFORMANCE.md", "bbolt's own `Put` in %s transactions", "snapshot/writer.go", "DefaultTxBytes"},
		{"docs/PERFORMANCE.md", "writes them in %s chunks", "snapshot/bulk.go", "chunkBytes"},
		{"docs/PERFORMANCE.md", "starts their writeback every %s", "snapshot/writebehind_linux.go", "writeBehindBytes"},
		{"docs/PERFORMANCE.md", "is kept encoded and spills past %s", "transform/objects.go", "defaultSpillAt"},
		{"docs/SAFETY.md", "past %s, the list of changed objects", "transform/objects.go", "defaultSpillAt"},
		{"docs/PERFORMANCE.md", "runs the collector at GOGC=%s", "cmd/snapshift/app/gc.go", "gcPercent"},
		{"docs/PERFORMANCE.md", "under a soft memory limit of %s", "cmd/snapshift/app/gc.go", "gcFloor"},
		{"docs/PERFORMANCE.md", "or 1/%s of the input, whichever is larger", "cmd/snapshift/app/gc.go", "gcSizeDivisor"},
		{"docs/REBUILD.md", "into `%s/<node>-", "bundle/layout.go", "BackupRoot"},
		{"docs/REBUILD.md", "(`flock` on `%s/<node>.lock`)", "nodeops/deadline.go", "lockDir"},
	} {
		b, err := os.ReadFile("../../" + f.doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ")
		want := fmt.Sprintf(f.phrase, constValue(t, f.file, f.constant))
		if !strings.Contains(text, want) {
			t.Errorf("%s does not say %q (%s's %s): change the sentence with the constant", f.doc, want, f.file, f.constant)
		}
	}
}
