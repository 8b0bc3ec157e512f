package app

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/inspect"
)

func lsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list live keys with their revision and type",
		ArgsUsage: "SNAPSHOT [PREFIX]",
		Description: "Lists the live keys (newest revision of each, deleted keys left out), sorted by key.\n\n" +
			"Example:\n   snapshift ls snapshot.db /registry/services/specs/",
		Flags: []cli.Flag{flagSkipHash(), flagOutput()},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return usagef("ls needs SNAPSHOT and an optional PREFIX (got %d arguments)", c.NArg())
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			entries, err := inspect.List(c.Context, inspect.ListConfig{Path: c.Args().Get(0), Prefix: c.Args().Get(1), SkipHashCheck: c.Bool("skip-hash-check")})
			if err != nil {
				return err
			}
			if format == "json" {
				if entries == nil {
					entries = []inspect.ListEntry{}
				}
				return writeJSON(c.App.Writer, entries)
			}
			w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tREVISION\tVERSION\tSIZE\tTYPE")
			for _, e := range entries {
				t := e.Type
				if t == "" {
					t = "(" + e.Encoding + ")"
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", e.Key, e.ModRevision, e.Version, e.Size, t)
			}
			return w.Flush()
		},
	}
}
