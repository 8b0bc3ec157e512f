package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/verify"
)

// rebuildOptions are rebuild's options: the rest is in the config file.
type rebuildOptions struct {
	common
	config string
	dryRun bool
	cfg    *rebuild.Config
}

func (o *rebuildOptions) setup(c *cli.Context) error {
	o.streams(c)
	if c.NArg() != 0 {
		if c.NArg() == 1 && o.config == "" {
			return usagef("rebuild takes its file as a flag: snapshift rebuild --config %s", c.Args().First())
		}
		return usagef("rebuild takes no arguments (give the RebuildConfiguration as --config FILE)")
	}
	if o.config == "" {
		return usagef("rebuild needs --config FILE, a RebuildConfiguration (see snapshift rebuild --help)")
	}
	return nil
}

func (o *rebuildOptions) Validate() error {
	if err := o.validateFormat(); err != nil {
		return err
	}
	if err := o.validateWriter(); err != nil {
		return err
	}
	cfg, err := rebuild.Load(o.config)
	if err != nil {
		return configError(err)
	}
	if cfg.EncryptionConfig != "" {
		// Read before any work, as plan reads --encryption-config: a
		// missing or broken file is the user's mistake (exit 2).
		if _, err := encryption.Load(cfg.EncryptionConfig); err != nil {
			return usagef("encryptionConfig: %w (remove the line when the cluster does not encrypt at rest)", err)
		}
	}
	o.cfg = cfg
	return nil
}

// configError renders an option error as the rebuild file names the option
// (networking.oldServiceSubnet), as a usage error (exit 2): the file is the
// command line here. An error of another kind that names an option keeps
// its own exit code, in the file's terms: a refusal (4), a snapshot that is
// not usable (3: no trailer, "needs skipHashCheck", as inspect says it).
func configError(err error) error {
	msg, _ := option.Render(err, rebuild.ConfigPath)
	r := renderedError{msg: msg, err: err}
	if refusal(err) || errors.Is(err, snapshot.ErrInvalidInput) || errors.Is(err, verify.ErrFailed) {
		return r
	}
	return usageError{r}
}

func (o *rebuildOptions) Run(ctx context.Context) error {
	opts := rebuild.Options{DryRun: o.dryRun, Progress: o.progress(), Writer: snapshot.WriterKind(o.writer)}
	if !o.quiet && !o.json() {
		opts.Log = o.stderr
	}
	r, err := rebuild.Run(ctx, o.cfg, opts)
	if err != nil {
		var oe *option.Error
		if errors.As(err, &oe) {
			return configError(err)
		}
		return err
	}
	if o.quiet && !o.json() {
		// The whole report is in the bundle's report.json and RUNBOOK.md:
		// --quiet prints the line that says where (issue 52 item 6).
		printRebuildLast(o.stdout, r)
		return nil
	}
	return o.render(r, func(w io.Writer) { printRebuild(w, r) })
}

func printRebuild(w io.Writer, r *rebuild.Report) {
	tr := r.Transform
	if r.DryRun && tr != nil {
		// The transform ran into the temporary bundle: to the reader it is
		// a plan ("would write"), as transform --dry-run says it.
		c := *tr
		c.DryRun, tr = true, &c
	}
	printTransform(w, &migrate.Result{Report: tr, Plan: r.Plan, Leftovers: r.Leftovers})
	fmt.Fprintln(w)
	for _, p := range r.PKI {
		if r.DryRun {
			// One line per directory: the files were written in the
			// temporary bundle and removed with it.
			line := fmt.Sprintf("[certs] %s in %s: would write %d files", p.Operation, p.Dir, len(p.Files))
			if len(p.Reused) > 0 {
				line += fmt.Sprintf(", reuse %d (the CAs)", len(p.Reused))
			}
			fmt.Fprintln(w, line)
			continue
		}
		printCerts(w, p)
	}
	restore := "[restore] member %s: %s\n"
	if r.DryRun {
		restore = "[restore] would restore member %s into %s\n"
	}
	for _, m := range r.Members {
		fmt.Fprintf(w, restore, m.Name, filepath.Join(r.Output, m.DataDir))
	}
	for _, n := range r.ClusterConfiguration {
		fmt.Fprintf(w, "[config] %s\n", n)
	}
	manifests := 0
	for _, m := range r.Manifests {
		if r.DryRun && strings.HasPrefix(m, "wrote ") {
			manifests++
			continue
		}
		fmt.Fprintf(w, "[manifests] %s\n", m)
	}
	if manifests > 0 {
		fmt.Fprintf(w, "[manifests] would write %d manifests in %s\n", manifests, filepath.Join(r.Output, "kubernetes", "<node>", "manifests"))
	}
	for _, n := range r.Nodes {
		fmt.Fprintf(w, "[node] %s (%s, etcd member %s): %s\n", n.Name, n.AdvertiseAddress, n.EtcdMember, filepath.Join(r.Output, n.Dir))
	}
	for _, m := range r.MissingFiles {
		fmt.Fprintf(w, "[missing] %s %s=%s: not in the bundle; put it on every control-plane node\n", m.Component, m.Flag, m.Path)
	}
	if r.JoinCommand != "" {
		fmt.Fprintf(w, "[join] %s\n", r.JoinCommand)
	}
	printRebuildLast(w, r)
}

// printRebuildLast is the report's last line, all that --quiet prints.
func printRebuildLast(w io.Writer, r *rebuild.Report) {
	if r.DryRun {
		fmt.Fprintf(w, "Dry run: nothing was written to %s (the bundle was built and checked in a temporary directory, then removed)\n", r.Output)
	} else {
		fmt.Fprintf(w, "Bundle: %s — next: %s\n", r.Output, filepath.Join(r.Output, bundle.RunbookFile))
	}
}

func rebuildCommand() *cli.Command {
	o := &rebuildOptions{}
	return newCommand(o, []cli.Flag{
		&cli.StringFlag{Name: "config", Destination: &o.config, Usage: "the RebuildConfiguration file"},
		&cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "build and check everything in a temporary directory; write nothing (a switch: --dry-run=client says the same)"},
		o.writerFlag(""), o.outputFlag(),
		o.quietFlagSaying("print only errors and one last line, where the bundle is (its report.json holds the whole report; -o json still prints it)"),
	}, cli.Command{
		Name:  "rebuild",
		Usage: "run the whole chain from one config file into a bundle: transform, verify, restore, certs, manifests, runbook",
		Description: "Reads a RebuildConfiguration (snapshift.io/v1alpha1) naming the snapshot, the new networks, the etcd\n" +
			"members, the PKI source (an existing cert dir, or none for a whole new PKI) and the manifests source,\n" +
			"and writes a bundle laid out like /etc/kubernetes plus etcd/<member>/, with report.json and a\n" +
			"RUNBOOK.md of the remaining steps for this cluster. The bundle appears only when every phase has\n" +
			"succeeded. --dry-run builds and checks it in a temporary directory and removes it.\n\n" +
			"Example:\n   snapshift rebuild --config testdata/rebuild.yaml",
	})
}
