package app

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/rebuild"
)

func rebuildCommand() *cli.Command {
	return &cli.Command{
		Name:  "rebuild",
		Usage: "run the whole chain from one config file into a bundle: transform, verify, restore, certs, manifests, runbook",
		Description: "Reads a RebuildConfiguration (snapshift.io/v1alpha1) naming the snapshot, the new networks, the etcd\n" +
			"members, the PKI source (an existing cert dir, or none for a whole new PKI) and the manifests source,\n" +
			"and writes a bundle laid out like /etc/kubernetes plus etcd/<member>/, with report.json and a\n" +
			"RUNBOOK.md of the remaining steps for this cluster. The bundle appears only when every phase has\n" +
			"succeeded. --dry-run builds and checks it in a temporary directory and removes it.\n\n" +
			"Example:\n   snapshift rebuild --config testdata/rebuild.yaml",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Required: true, Usage: "the RebuildConfiguration file"},
			&cli.BoolFlag{Name: "dry-run", Usage: "build and check everything in a temporary directory; write nothing"},
			flagOutput(), flagQuiet(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("rebuild takes no arguments (give --config)")
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			cfg, err := rebuild.Load(c.String("config"))
			if err != nil {
				return usagef("%v", err)
			}
			opts := rebuild.Options{DryRun: c.Bool("dry-run"), Progress: newProgress(c)}
			if !c.Bool("quiet") && format == "text" {
				opts.Log = c.App.ErrWriter
			}
			r, err := rebuild.Run(c.Context, cfg, opts)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(c.App.Writer, r)
			}
			printTransform(c.App.Writer, &Result{Report: r.Transform, Plan: r.Plan, Leftovers: r.Leftovers})
			fmt.Fprintln(c.App.Writer)
			for _, p := range r.PKI {
				printCerts(c.App.Writer, p)
			}
			for _, m := range r.Members {
				fmt.Fprintf(c.App.Writer, "[restore] member %s: %s\n", m.Name, filepath.Join(r.Output, m.DataDir))
			}
			for _, m := range r.Manifests {
				fmt.Fprintf(c.App.Writer, "[manifests] %s\n", m)
			}
			if r.JoinCommand != "" {
				fmt.Fprintf(c.App.Writer, "[join] %s\n", r.JoinCommand)
			}
			if r.DryRun {
				fmt.Fprintln(c.App.Writer, "Dry run: nothing was written.")
			} else {
				fmt.Fprintf(c.App.Writer, "Bundle: %s — next: %s\n", r.Output, filepath.Join(r.Output, rebuild.RunbookFile))
			}
			return nil
		},
	}
}
