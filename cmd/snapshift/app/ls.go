package app

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/inspect"
	"github.com/snapshift/snapshift/wellknown"
)

type lsOptions struct {
	common
	path, prefix string
	arg          string // PREFIX as given
	prefixErr    error  // PREFIX is no RESOURCE either: an error unless keys start with it
}

func (o *lsOptions) setup(c *cli.Context) error {
	o.streams(c)
	a, err := args(c, 1, 2, "SNAPSHOT and an optional PREFIX")
	if err != nil {
		return err
	}
	o.path = a[0]
	if len(a) == 2 {
		o.arg = a[1]
		o.prefix, o.prefixErr = keyOf(a[1]) // a raw prefix, if keys start with it
	}
	return o.unpack(&o.path)
}

// keyOf is wellknown.KeyOf(arg), or arg itself when it names no resource:
// a raw key or prefix outside /registry, which the command tries before it
// reports the error.
func keyOf(arg string) (string, error) {
	k, err := wellknown.KeyOf(arg)
	if err != nil {
		return arg, err
	}
	return k, nil
}

func (o *lsOptions) Validate() error { return o.validateFormat() }

func (o *lsOptions) Run(ctx context.Context) error {
	entries, err := inspect.List(ctx, inspect.ListConfig{Path: o.path, Prefix: o.prefix, SkipHashCheck: o.skipHash})
	if err != nil {
		return err
	}
	if o.prefixErr != nil && len(entries) == 0 {
		return usagef("PREFIX: %v", o.prefixErr)
	}
	if len(entries) == 0 && o.prefix != "" && !o.json() {
		// As kubectl's "No resources found": not an error (exit 0), said
		// on stderr, with the prefix probably meant.
		return o.nothingUnder(ctx)
	}
	if o.json() {
		if entries == nil {
			entries = []inspect.ListEntry{}
		}
		return writeJSON(o.stdout, entryList{typeMeta: newTypeMeta("EntryList"), Items: entries})
	}
	w := tabwriter.NewWriter(o.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tREVISION\tVERSION\tSIZE\tTYPE")
	for _, e := range entries {
		t := e.Type
		if t == "" {
			t = "(" + e.Encoding + ")"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", e.Key, e.ModRevision, e.Version, e.Size, t)
	}
	return w.Flush()
}

func lsCommand() *cli.Command {
	o := &lsOptions{}
	return newCommand(o, []cli.Flag{o.tmpDirFlag(), o.skipHashFlag(), o.outputFlag()}, cli.Command{
		Name:      "ls",
		Usage:     "list live keys with their revision and type",
		ArgsUsage: "SNAPSHOT [PREFIX|RESOURCE[/NAMESPACE/]]",
		Description: "Lists the live keys (newest revision of each, deleted keys left out), sorted by key: all, those\n" +
			"under a key prefix (starting with /), or those of a resource as kubectl names it (svc, deploy,\n" +
			"ingresses.networking.k8s.io), optionally in one namespace (deploy/kube-system/).\n\n" +
			"Example:\n   snapshift ls snapshot.db svc",
	})
}

// nothingUnder says that no live key starts with the prefix, naming the
// nearest prefix that has keys (cut at the same depth).
func (o *lsOptions) nothingUnder(ctx context.Context) error {
	all, err := inspect.List(ctx, inspect.ListConfig{Path: o.path, SkipHashCheck: o.skipHash})
	if err != nil {
		return err
	}
	depth := strings.Count(o.prefix, "/")
	var prefixes []string
	for _, e := range all {
		parts := strings.SplitAfterN(e.Key, "/", depth+1)
		if len(parts) > depth {
			p := strings.Join(parts[:depth], "")
			if len(prefixes) == 0 || prefixes[len(prefixes)-1] != p {
				prefixes = append(prefixes, p)
			}
		}
	}
	arg := o.arg
	near := closest(o.prefix, prefixes)
	if !strings.HasPrefix(arg, "/") {
		for i := range near {
			near[i] = wellknown.KubectlName(near[i])
		}
	}
	fmt.Fprintf(o.stderr, "nothing under %s in %s%s\n", arg, o.in.original, didYouMean(near))
	return nil
}
