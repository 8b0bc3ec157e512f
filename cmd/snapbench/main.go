// Command snapbench benchmarks snapshift on generated Kubernetes etcd snapshots against the floor
// of a plain copy (through the same writer) and etcd's own restore (see internal/bench).
//
//	go run ./cmd/snapbench --sizes small,medium,large --runs 3 --out .bench/results.json
//	go run ./cmd/snapbench generate --size large --out /tmp/large.db
//
// Generated snapshots are kept in --cache and reused while the generator's version is the same.
// snapshift itself is built into <cache>/snapshift first, never into bin/ (make bench gives
// --snapshift bin/snapshift, as make build stamps it).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/bench"
	"github.com/snapshift/snapshift/internal/gen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == bench.ChildCommand {
		os.Exit(bench.ChildMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "snapbench:", err)
		stop()
		os.Exit(1)
	}
}

func sizeNames() string {
	var names []string
	for _, s := range gen.Sizes {
		names = append(names, fmt.Sprintf("%s (%d keys)", s.Name, s.Keys))
	}
	return strings.Join(names, ", ")
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "snapbench",
		Usage:     "benchmark snapshift on generated etcd snapshots",
		UsageText: "snapbench [--sizes small,medium,large] [--profiles basic,churn,services] [--runs 3] [--order-seed N] [--cold=false] [--cgroup] [--cases a,b] [--cache .bench] [--shared-cache DIR] [--out FILE] [--keep]",
		Description: "For each size, generates (or reuses) a snapshot in --cache, then runs in rounds, each case as a child\n" +
			"process, in a random order per round (--order-seed), warm (its input read just before) and, as root, cold (the\n" +
			"page cache dropped just before): the floor (a plain copy through the same writer), the bbolt floor (the same copy through\n" +
			"bbolt's own Put), cp+sha256sum (the physical limit), snapshift transform without rules and\n" +
			"with the seed migration, snapshift plan, snapshift restore with the seed migration applied on the way (fused),\n" +
			"etcdutl's restore of the input, and snapshift restore of transform's migrated file; with --cgroup, snapshift's cases\n" +
			"and etcd's restore again, cold, inside a 1 GiB memory cgroup. Each of issues 28's and 39's targets is printed as met or NOT met.\n" +
			"Prints a table and writes the results as JSON. Sizes: " + sizeNames() + ".\n\n" +
			"Example (smoke, under a minute):\n   go run ./cmd/snapbench --sizes small --runs 1",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "sizes", Value: "small,medium,large", Usage: "comma-separated sizes to measure"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "rounds per size"},
			&cli.StringFlag{Name: "cache", Value: ".bench", Usage: "directory for generated snapshots, work files and results"},
			&cli.StringFlag{Name: "out", Usage: "results JSON (default <cache>/results.json)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep every output of every run in the cache's work directory"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "generator seed"},
			&cli.StringFlag{Name: "snapshift", Usage: "a snapshift binary to measure (default: go build -o <cache>/snapshift ./cmd/snapshift; never bin/snapshift, which is make build's)"},
			&cli.StringFlag{Name: "profiles", Value: strings.Join(gen.Profiles, ","), Usage: "comma-separated generator profiles to measure each size with: " + strings.Join(gen.Profiles, ", ")},
			&cli.Int64Flag{Name: "order-seed", Usage: "seed of the cases' random order in each round (default: from the clock; the table prints it)"},
			&cli.StringFlag{Name: "cases", Usage: "comma-separated cases to run (default all): " + strings.Join(bench.Cases, ", ")},
			&cli.StringFlag{Name: "shared-cache", Usage: "directory for the inputs of sizes of 3M keys and more (xxlarge, ~8 GiB), generated once and kept outside the clone (default ~/.cache/snapshift-bench)"},
			&cli.Float64Flag{Name: "keep-free-gib", Value: 1, Usage: "refuse a size that would leave less than this many GiB free on its disk (input plus two outputs at a time)"},
			&cli.BoolFlag{Name: "cgroup", Usage: "also run snapshift's cases and etcd's restore, cold, inside a cgroup v1 memory cgroup of --cgroup-mib (root), and report success, OOM kill or mmap failure"},
			&cli.IntFlag{Name: "cgroup-mib", Value: bench.DefaultCgroupLimit >> 20, Usage: "the memory cgroup's memory.limit_in_bytes, in MiB"},
			&cli.DurationFlag{Name: "cgroup-timeout", Value: 10 * time.Minute, Usage: "a case in the memory cgroup that runs longer is killed and reported as not finished"},
			&cli.BoolFlag{Name: "cold", Value: true, Usage: "also measure every case with the page cache dropped before it, where " + bench.DefaultDropCaches +
				" is writable (root); --cold=false: warm only"},
		},
		Action: runBench,
		Commands: []*cli.Command{{
			Name:      "generate",
			Usage:     "write one generated snapshot",
			UsageText: "snapbench generate (--size NAME | --keys N) --out FILE [--seed 1] [--force]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "size", Usage: "a named size: " + sizeNames()},
				&cli.IntFlag{Name: "keys", Usage: "number of keys (instead of --size)"},
				&cli.Int64Flag{Name: "seed", Value: 1, Usage: "generator seed"},
				&cli.StringFlag{Name: "out", Required: true, Usage: "the snapshot file to write"},
				&cli.BoolFlag{Name: "force", Usage: "replace an existing --out"},
				&cli.StringFlag{Name: "profile", Value: gen.ProfileBasic, Usage: "the cluster's history: " + strings.Join(gen.Profiles, " or ")},
			},
			Action: runGenerate,
		}},
	}
}

func runGenerate(c *cli.Context) error {
	keys := c.Int("keys")
	if name := c.String("size"); name != "" {
		if keys != 0 {
			return errors.New("give --size or --keys, not both")
		}
		n, err := gen.SizeKeys(name)
		if err != nil {
			return err
		}
		keys = gen.SizedKeys(c.String("profile"), n)
	}
	if keys == 0 {
		return errors.New("give --size or --keys")
	}
	res, err := gen.Generate(c.Context, gen.Config{Path: c.String("out"), Keys: keys, Seed: c.Int64("seed"), Force: c.Bool("force"), Profile: c.String("profile")})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %d bytes, %d keys (%d live), %d entries, %d tombstones, revision %d, %d pods, %d services, %d nodes, in %s\n",
		res.Path, res.Size, res.Keys, res.LiveKeys, res.Entries, res.Tombstones, res.Revision, res.Pods, res.Services, res.Nodes, res.Duration.Round(1e6))
	return nil
}

func runBench(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", c.Args().Slice())
	}
	var sizes []gen.Size
	for _, name := range strings.Split(c.String("sizes"), ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		n, err := gen.SizeKeys(name)
		if err != nil {
			return err
		}
		sizes = append(sizes, gen.Size{Name: name, Keys: n})
	}
	cache := c.String("cache")
	out := c.String("out")
	if out == "" {
		out = filepath.Join(cache, "results.json")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := c.String("snapshift")
	if bin == "" {
		if bin, err = buildSnapshift(c.Context, cache, c.App.ErrWriter); err != nil {
			return err
		}
	}
	var profiles []string
	for _, p := range strings.Split(c.String("profiles"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			profiles = append(profiles, p)
		}
	}
	var cases []string
	for _, name := range strings.Split(c.String("cases"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			cases = append(cases, name)
		}
	}
	shared := c.String("shared-cache")
	if shared == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no --shared-cache and no user cache directory: %w", err)
		}
		shared = filepath.Join(dir, "snapshift-bench")
	}
	rep, err := bench.Run(c.Context, bench.Config{Sizes: sizes, Profiles: profiles, Runs: c.Int("runs"), Seed: c.Int64("seed"), Cache: cache, Keep: c.Bool("keep"),
		Snapshift: []string{bin}, Child: []string{self, bench.ChildCommand}, Log: c.App.ErrWriter, OrderSeed: c.Int64("order-seed"), Cold: c.Bool("cold"),
		Cases: cases, SharedCache: shared, KeepFree: int64(c.Float64("keep-free-gib") * (1 << 30)), Cgroup: c.Bool("cgroup"), CgroupLimit: int64(c.Int("cgroup-mib")) << 20, CgroupTimeout: c.Duration("cgroup-timeout")})
	if rep != nil && len(rep.Sizes) > 0 {
		rep.WriteTable(c.App.Writer)
		if werr := writeJSON(out, rep); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "[bench] results in %s\n", out)
	return nil
}

// buildSnapshift builds snapshift into the cache directory and returns its path. Never into
// bin/snapshift: that is make build's, stamped with the version from git, and an unstamped
// build there would say "devel" to whoever runs it next (issue 52 item 12).
func buildSnapshift(ctx context.Context, cache string, log io.Writer) (string, error) {
	mod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(mod)))
	if strings.TrimSpace(string(mod)) == "" || strings.TrimSpace(string(mod)) == os.DevNull {
		return "", errors.New("run snapbench inside the snapshift module, or give --snapshift")
	}
	bin, err := filepath.Abs(filepath.Join(cache, "snapshift"))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "[build] go build -o %s ./cmd/snapshift (unstamped; make bench measures make build's bin/snapshift)\n", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/snapshift")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building snapshift: %w", err)
	}
	return bin, nil
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
