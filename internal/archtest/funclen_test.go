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

// longFunctions lists the functions and methods of the non-test files
// under root (testdata and hidden directories left out) longer than limit
// lines, declaration to closing brace.
func longFunctions(root string, limit int) ([]function, error) {
	fset := token.NewFileSet()
	var out []function
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil // tests' tables are long by nature
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > limit {
				rel, _ := filepath.Rel(root, path)
				out = append(out, function{where: rel + ":" + strconv.Itoa(start.Line) + " " + fd.Name.Name, lines: n})
			}
		}
		return nil
	})
	return out, err
}

// maxFuncLines is the longest a function may be (declaration to closing
// brace), tests left out.
const maxFuncLines = 80

// TestFunctionLength: no function of the module is longer than
// maxFuncLines.
func TestFunctionLength(t *testing.T) {
	long, err := longFunctions("../..", maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Errorf("%s: %d lines, over %d: split it", f.where, f.lines, maxFuncLines)
	}
}

// function is one function that is too long.
type function struct {
	where string
	lines int
}
