package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// cleanOptions are clean's options.
type cleanOptions struct {
	common
	dir    string
	dryRun bool
}

func (o *cleanOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "list the leftovers; remove nothing"},
		o.outputFlag(),
	}
}

func (o *cleanOptions) setup(c *cli.Context) error {
	o.streams(c)
	if c.NArg() != 1 {
		return usagef("clean takes one directory")
	}
	o.dir = c.Args().First()
	return nil
}

func (o *cleanOptions) Validate() error {
	if err := o.validateFormat(); err != nil {
		return err
	}
	switch st, err := os.Stat(o.dir); {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("clean: %s does not exist: give the directory that holds the outputs (snapshift clean /var/lib)", o.dir)
	case err != nil:
		return usagef("clean: %w", err)
	case !st.IsDir():
		return usagef("clean: %s is a file: give the directory that holds it (snapshift clean %s)", o.dir, filepath.Dir(o.dir))
	}
	return nil
}

func (o *cleanOptions) Run(context.Context) error {
	ls, err := fsutil.FindLeftoversUnder(o.dir)
	if err != nil {
		return err
	}
	if !o.dryRun {
		if err := fsutil.RemoveLeftovers(ls); err != nil {
			return err
		}
	}
	if o.json() {
		if ls == nil {
			ls = []fsutil.Leftover{}
		}
		return writeJSON(o.stdout, cleanDocument{typeMeta: newTypeMeta("CleanResult"), Dir: o.dir, DryRun: o.dryRun, Leftovers: ls})
	}
	printLeftovers(o.stdout, o.dir, ls, o.dryRun)
	return nil
}

func printLeftovers(w io.Writer, dir string, ls []fsutil.Leftover, dryRun bool) {
	if len(ls) == 0 {
		fmt.Fprintf(w, "[clean] no leftovers of snapshift runs under %s\n", dir)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tSIZE\tPID\tFOR\tPATH")
	for _, l := range ls {
		state := "removed"
		switch {
		case l.Live:
			state = "kept (its run is still writing)"
		case dryRun:
			state = "would remove"
		}
		if l.HalfPublished {
			state += ", half published"
		}
		rel, err := filepath.Rel(dir, l.Path)
		if err != nil {
			rel = l.Path
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", state, l.Bytes, l.PID, filepath.Base(l.Target), rel)
	}
	tw.Flush()
}

func cleanCommand() *cli.Command {
	o := &cleanOptions{}
	return &cli.Command{
		Name:      "clean",
		Usage:     "list and remove what killed snapshift runs left behind",
		ArgsUsage: "DIR",
		Description: "Every file or directory snapshift writes is first written under a temporary name beside its final\n" +
			"path, .<name>.snapshift-<pid>-<start>-<boot>-<random>: a run killed (kill -9, OOM, power loss) leaves\n" +
			"it behind, holding a copy of the cluster (Secrets, CA keys). clean finds them under DIR (every\n" +
			"directory below it) and removes those whose run is gone: owned by you, not writable by others, and\n" +
			"no process with that pid and start time runs in this boot. A run still writing keeps its files. A\n" +
			"WAL dir published without its data dir (a restore --wal-dir killed between the two) is removed\n" +
			"whole. Every command also removes the leftovers for its own outputs when it starts.\n\n" +
			"Example:\n   snapshift clean /var/lib --dry-run",
		Flags:  o.flags(),
		Action: action(o),
	}
}
