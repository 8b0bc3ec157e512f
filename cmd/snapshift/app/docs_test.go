package app

import (
	"flag"
	"os"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/CLI.md and docs/snapshift.8 from the command tree, docs/OUTPUT.md from the documents' types (make docs)")

// TestCLIDocsCurrent: docs/CLI.md and the man page docs/snapshift.8 are
// generated from the command tree by urfave/cli; a change to a command,
// flag or usage text that is not regenerated with `make docs` fails here.
func TestCLIDocsCurrent(t *testing.T) {
	app := New(nil, nil, nil)
	md, err := app.ToMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	man, err := app.ToMan()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"../../../docs/CLI.md": md, "../../../docs/snapshift.8": man} {
		if *updateDocs {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not current (%v): run make docs", path, err)
		}
	}
}
