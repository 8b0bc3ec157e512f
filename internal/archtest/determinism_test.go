package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writePath are the packages whose code decides the bytes of a written
// snapshot or member database: none of them may read the clock or draw
// randomness, or two runs of one migration (members restored one by one)
// write different bytes (DESIGN.md decision 37; rules' TestSameBytes
// checks the outputs, this the sources).
var writePath = []string{"rules", "ruleset", "transform", "encryption", "codec", "state", "snapshot",
	"migrate", "cidr", "wellknown", "internal/yamledit"}

// clockAllowed are the clock reads on the write path that only time a
// phase for the report, never reaching an output.
var clockAllowed = map[string]bool{
	"transform/timing.go": true, // the phase timer of Report.Timing, the held progress phase
	"snapshot/writer.go":  true, // snapshot.Timing, the steps inside Commit
}

// TestWritePathReadsNoClock: no time.Now or time.Since outside the timers,
// no math/rand or crypto/rand, no random UUID, on the write path.
func TestWritePathReadsNoClock(t *testing.T) {
	fset := token.NewFileSet()
	for _, pkg := range writePath {
		files, err := filepath.Glob(filepath.Join("../..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("package %s: no files (renamed? update writePath)", pkg)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			rel := pkg + "/" + filepath.Base(path)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range nondeterministic(fset, f, clockAllowed[rel]) {
				t.Errorf("%s:%s: the write path must not depend on the run (derive it from the input instead)", rel, bad)
			}
		}
	}
}

// nondeterministic lists where f reads the clock (unless clockOK) or draws
// randomness: "line: what".
func nondeterministic(fset *token.FileSet, f *ast.File, clockOK bool) []string {
	var out []string
	names := map[string]string{} // local import name -> path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
		switch p {
		case "math/rand", "math/rand/v2", "crypto/rand":
			out = append(out, strconv.Itoa(fset.Position(imp.Pos()).Line)+": imports "+p)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		line := strconv.Itoa(fset.Position(sel.Pos()).Line)
		switch names[x.Name] + "." + sel.Sel.Name {
		case "time.Now", "time.Since", "time.Until":
			if !clockOK {
				out = append(out, line+": reads the clock ("+x.Name+"."+sel.Sel.Name+")")
			}
		case "github.com/google/uuid.New", "github.com/google/uuid.NewRandom", "github.com/google/uuid.NewString":
			out = append(out, line+": a random UUID")
		}
		return true
	})
	return out
}
