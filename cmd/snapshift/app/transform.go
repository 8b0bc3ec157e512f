package app

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/transform"
)

func transformCommand() *cli.Command {
	return &cli.Command{
		Name:      "transform",
		Usage:     "write a new snapshot with the chosen rules applied",
		ArgsUsage: "SNAPSHOT",
		Description: "Streams every live key of SNAPSHOT through the rules chosen by flags and writes a new\n" +
			"snapshot to --out (temporary name, fsync, rename; an existing file needs --force). Without rules\n" +
			"it is an identity transform: the same live keys and values, old revisions dropped, marked\n" +
			"compacted. With --dry-run nothing is written and the report says what would change.\n\n" +
			"Example:\n   snapshift transform /backup/etcd.db --out /backup/etcd-new.db",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "the new snapshot file (required unless --dry-run)"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing --out"},
			&cli.BoolFlag{Name: "dry-run", Usage: "write nothing; report what would change"},
			flagSkipHash(), flagOutput(), flagQuiet(),
		},
		Action: func(c *cli.Context) error {
			in, err := oneArg(c, "the snapshot file")
			if err != nil {
				return err
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			cfg := transform.Config{
				Input: in, Output: c.String("out"), Force: c.Bool("force"), DryRun: c.Bool("dry-run"),
				SkipHashCheck: c.Bool("skip-hash-check"), Progress: newProgress(c),
			}
			if !cfg.DryRun && cfg.Output == "" {
				return usagef("transform needs --out FILE (or --dry-run)")
			}
			r, err := transform.Run(c.Context, cfg)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(c.App.Writer, r)
			}
			printTransform(c.App.Writer, r)
			return nil
		},
	}
}

func printTransform(out io.Writer, r *transform.Report) {
	verb := "wrote"
	if r.DryRun {
		verb = "would write"
	}
	fmt.Fprintf(out, "Input:  %s (revision %d, %d live keys, %d revisions)\n", r.Input.Path, r.Input.CurrentRevision, r.Input.LiveKeys, r.Input.Entries)
	if r.Output != nil {
		fmt.Fprintf(out, "Output: %s (%s, sha256 %s)\n", r.Output.Path, humanBytes(r.Output.Size), r.Output.SHA256)
	}
	fmt.Fprintf(out, "Keys:   %s %d unchanged, %d replaced, %d created; %d deleted; %d old revisions and tombstones dropped\n",
		verb, r.Copied, r.Replaced, r.Created, r.Deleted, r.Dropped)
	if r.NewRevision > 0 {
		fmt.Fprintf(out, "Revision: changes at %d; compacted at %d\n", r.NewRevision, r.CompactRevision)
	} else {
		fmt.Fprintf(out, "Revision: no changes; compacted at %d\n", r.CompactRevision)
	}
	if len(r.Rules) > 0 {
		fmt.Fprintln(out, "\nRules:")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  RULE\tSEEN\tCHANGED\tDELETED\tCREATED")
		for _, rr := range r.Rules {
			fmt.Fprintf(w, "  %s\t%d\t%d\t%d\t%d\n", rr.Name, rr.Seen, rr.Changed, rr.Deleted, rr.Created)
		}
		w.Flush()
		for _, rr := range r.Rules {
			for _, n := range rr.Notes {
				fmt.Fprintf(out, "  note (%s): %s\n", rr.Name, n)
			}
		}
	}
	if len(r.Objects) > 0 {
		fmt.Fprintln(out, "\nChanges:")
		for _, o := range r.Objects {
			fmt.Fprintf(out, "  %-7s %s  [%s]\n", o.Action, o.Key, strings.Join(o.Rules, ","))
			for _, ch := range o.Changes {
				switch {
				case ch.Old != "" && ch.New != "":
					fmt.Fprintf(out, "          %s: %s -> %s\n", ch.Field, ch.Old, ch.New)
				case ch.New != "":
					fmt.Fprintf(out, "          %s: %s\n", ch.Field, ch.New)
				default:
					fmt.Fprintf(out, "          %s: %s (removed)\n", ch.Field, ch.Old)
				}
			}
		}
	}
}
