// Package archtest holds the layering rules of docs/ARCHITECTURE.md as a
// test over the module's real import graph (`go list`), so a change that
// breaks them fails `make test`.
package archtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/snapshift/snapshift/"

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

func TestLayering(t *testing.T) {
	graph := imports(t)
	// Who may import the engine: the rules (they are its plug-ins), and
	// what drives a stream (rebuild, the CLI).
	driveStream := map[string]bool{"rules": true, "rebuild": true, "cmd/snapshift/app": true}
	for pkg, deps := range graph {
		for _, dep := range deps {
			switch {
			case dep == "transform" && !driveStream[pkg]:
				t.Errorf("%s imports transform: only the rules, rebuild and the CLI drive the stream (read snapshots through package state)", pkg)
			case pkg == "rules" && (dep == "inspect" || dep == "snapshot" || dep == "verify"):
				t.Errorf("rules imports %s: rules see the snapshot only through state and transform", dep)
			case strings.HasPrefix(dep, "cmd/") && !strings.HasPrefix(pkg, "cmd/"):
				t.Errorf("%s imports %s: nothing outside cmd/ imports the CLI", pkg, dep)
			case dep == "urfave/cli" && !strings.HasPrefix(pkg, "cmd/"):
				t.Errorf("%s imports urfave/cli: library packages know nothing of the command line", pkg)
			case pkg == "state" && (dep == "transform" || dep == "rules" || dep == "inspect" || dep == "verify"):
				t.Errorf("state imports %s: state sits below the engine and its users", dep)
			case (pkg == "snapshot" || pkg == "codec" || pkg == "cidr" || pkg == "option" || pkg == "internal/strictyaml") && dep != "internal/fsutil" && dep != "progress" && dep != "option":
				t.Errorf("%s imports %s: the etcd, codec, address and option layers depend on nothing above them", pkg, dep)
			case pkg == "ruleset" && dep != "cidr" && dep != "option" && dep != "internal/strictyaml":
				t.Errorf("ruleset imports %s: the rules file format knows only addresses (verify and rules both read it)", dep)
			}
		}
	}
}
