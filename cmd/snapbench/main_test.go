package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBenchMeasuresTheStampedBuild: every make target that runs hack/bench.sh builds
// bin/snapshift with make build's version stamp first and hands that binary to snapbench, and
// hack/bench.sh passes it on, so a benchmark never leaves an unstamped bin/snapshift behind
// (issue 52 item 12). make -n prints the recipes without running them.
func TestMakeBenchMeasuresTheStampedBuild(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"bench", "bench-xlarge", "bench-8g"} {
		cmd := exec.Command("make", "-n", "--no-print-directory", target)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "MAKEFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		built, ran := false, false
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "go build") && strings.Contains(line, "bin/snapshift") {
				if !strings.Contains(line, "buildinfo.version=") {
					t.Errorf("make %s builds bin/snapshift without the version stamp: %s", target, line)
				}
				built = true
			}
			if strings.Contains(line, "hack/bench.sh") {
				if !built {
					t.Errorf("make %s runs hack/bench.sh before building bin/snapshift", target)
				}
				if !strings.Contains(line, "SNAPSHIFT="+filepath.Join(root, "bin", "snapshift")) {
					t.Errorf("make %s does not hand bin/snapshift to hack/bench.sh: %s", target, line)
				}
				ran = true
			}
		}
		if !built || !ran {
			t.Errorf("make %s: built bin/snapshift %v, ran hack/bench.sh %v:\n%s", target, built, ran, out)
		}
	}
	sh, err := os.ReadFile(filepath.Join(root, "hack", "bench.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sh), `${SNAPSHIFT:+--snapshift "$SNAPSHIFT"}`) {
		t.Error("hack/bench.sh does not pass SNAPSHIFT to snapbench as --snapshift")
	}
}

// TestDefaultBuildStaysInTheCache: snapbench without --snapshift builds into its cache, never
// into bin/snapshift. A stand-in go on PATH records the build instead of compiling.
func TestDefaultBuildStaysInTheCache(t *testing.T) {
	fake := t.TempDir()
	record := filepath.Join(fake, "args")
	script := "#!/bin/sh\nif [ \"$1\" = env ]; then echo " + filepath.Join(fake, "go.mod") + "; exit 0; fi\necho \"$@\" >" + record + "\n"
	if err := os.WriteFile(filepath.Join(fake, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	cache := filepath.Join(t.TempDir(), "cache")
	bin, err := buildSnapshift(context.Background(), cache, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "snapshift"); bin != want {
		t.Errorf("built %s, want %s", bin, want)
	}
	args, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(args)); got != "build -o "+filepath.Join(cache, "snapshift")+" ./cmd/snapshift" {
		t.Errorf("go %s", got)
	}
}
