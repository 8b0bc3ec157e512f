package app

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/buildinfo"
)

// versionOptions are the version command's: it prints this binary's
// identity (internal/buildinfo), as `snapshift --version` does.
type versionOptions struct {
	common
}

func (o *versionOptions) setup(c *cli.Context) error { return o.noArgs(c) }

func (o *versionOptions) Validate() error { return o.validateFormat() }

func (o *versionOptions) Run(context.Context) error {
	info := buildinfo.Get()
	if o.json() {
		return writeJSON(o.stdout, versionDocument{newTypeMeta("VersionInfo"), info})
	}
	printVersion(o, info)
	return nil
}

// printVersion is the text form: the one-line identity, then the platform
// and the libraries that decide what snapshift reads and writes.
func printVersion(o *versionOptions, info buildinfo.Info) {
	fmt.Fprintln(o.stdout, info.String())
	if info.Platform != "" {
		fmt.Fprintf(o.stdout, "  platform %s\n", info.Platform)
	}
	for _, d := range info.DependencyLines() {
		fmt.Fprintf(o.stdout, "  %s\n", d)
	}
}

func versionCommand() *cli.Command {
	o := &versionOptions{}
	return &cli.Command{
		Name:  "version",
		Usage: "print snapshift's version, commit, build date, Go version and the etcd, bbolt and Kubernetes library versions",
		Description: "The same identity is written into verify's JSON report, rebuild's report.json and RUNBOOK.md.\n" +
			"snapshift --version prints the text form.\n\n" +
			"Example:\n   snapshift version\n   snapshift version -o json | jq -r .version",
		Flags:  []cli.Flag{o.outputFlag()},
		Action: action(o),
	}
}

// versionFlag is the app's --version: the version command's text form.
const versionFlag = "version"

// showVersion prints the identity for `snapshift --version`.
func showVersion(c *cli.Context) error {
	o := &versionOptions{common: common{format: "text"}}
	o.streams(c)
	printVersion(o, buildinfo.Get())
	return nil
}
