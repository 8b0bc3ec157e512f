package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/textdist"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/snapshot"
)

// command is one command's options, in the style of bbolt's CLI: the flags
// write into the struct (no flag lookups by name in actions), setup takes
// the positional arguments and the output streams, Validate checks the
// options, and Run makes the library call and prints its result.
type command interface {
	setup(c *cli.Context) error
	Validate() error
	Run(ctx context.Context) error
}

// newCommand is c with its flags and its action, which runs o: every
// command is wired the same way.
func newCommand(o command, flags []cli.Flag, c cli.Command) *cli.Command {
	c.Flags, c.Action = flags, action(o)
	return &c
}

// render prints v as JSON with --output json, else as text prints it.
func (o *common) render(v any, text func(io.Writer)) error {
	if o.json() {
		return writeJSON(o.stdout, v)
	}
	text(o.stdout)
	return nil
}

// action runs a command.
func action(cmd command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if p, ok := cmd.(interface{ stopProgress() }); ok {
			defer p.stopProgress()
		}
		if cl, ok := cmd.(interface{ cleanup() }); ok {
			defer cl.cleanup() // what setup extracted (a compressed snapshot)
		}
		if err := emptyFlags(c); err != nil {
			return err
		}
		if err := dashOutputs(c); err != nil {
			return err
		}
		if err := cmd.setup(c); err != nil {
			return err
		}
		if err := cleanLeftovers(c.App.ErrWriter, cmd); err != nil {
			return err
		}
		if err := cmd.Validate(); err != nil {
			return err
		}
		return cmd.Run(c.Context) // under -o json, Main prints the error document of a failure
	}
}

// emptyFlags refuses a string flag given an empty value (--service-cidr
// "", --service-cidr=): it would read as the flag left out, and the run
// would quietly do less than was asked.
func emptyFlags(c *cli.Context) error {
	for _, f := range c.Command.Flags {
		sf, ok := f.(*cli.StringFlag)
		if !ok || !c.IsSet(sf.Name) || c.String(sf.Name) != "" {
			continue
		}
		return usagef("--%s is empty: give it a value (see %s --help) or leave the flag out", sf.Name, commandPath(c))
	}
	return nil
}

// outputPaths are the flags that name a file or directory a command writes:
// what is written there, and a path to suggest instead of "-". None of them
// can be standard output: each is written under a temporary name, checked,
// fsynced and renamed into place (DESIGN decisions 15 and 23), and a pipe
// can be none of that.
var outputPaths = map[string]struct{ what, example string }{
	"out":            {"the new snapshot", "etcd-new.db"},
	"data-dir":       {"the member's data dir", "etcd-new"},
	"wal-dir":        {"the member's WAL dir", "etcd-new-wal"},
	"cert-dir":       {"the certificates", "pki"},
	"kubeconfig-dir": {"the kubeconfigs", "kubeconfigs"},
	"kubeconfig-out": {"the kubeconfig", "user.conf"},
	"out-dir":        {"the manifests", "manifests"},
	"backup-dir":     {"the replaced manifests", "manifests-backup"},
}

// dashOutputs refuses "-" as an output path (--out -): read as a name it
// would create a file called "-" in the working directory (issue 52 item 6).
func dashOutputs(c *cli.Context) error {
	for _, f := range c.Command.Flags {
		sf, ok := f.(*cli.StringFlag)
		if !ok || !c.IsSet(sf.Name) || c.String(sf.Name) != "-" {
			continue
		}
		if p, ok := outputPaths[sf.Name]; ok {
			return usagef("--%s -: %s cannot go to standard output: %s writes it under a temporary name, checks it and renames it into place; "+
				"give a path (e.g. --%s ./%s)", sf.Name, p.what, commandPath(c), sf.Name, p.example)
		}
	}
	return nil
}

// common holds the options most commands share, and where they print.
type common struct {
	stdout, stderr io.Writer

	skipHash         bool
	encryptionConfig string
	etcdPrefix       string
	format           string
	formats          []string // what --output accepts; the first is the default
	// yamlOfJSON: -o yaml is the JSON report as YAML (every command with
	// -o json but get, which prints objects as YAML itself).
	yamlOfJSON bool
	quiet      bool
	profile    bool            // --profile: where the time went (timing.go)
	writer     string          // --writer
	in         compressedInput // a compressed snapshot argument (compressed.go)
	renderers  []*renderer     // progress's, stopped when the command ends
}

// stopProgress stops the renderers' timers: a command that ended prints
// no progress.
func (o *common) stopProgress() {
	for _, r := range o.renderers {
		r.stop()
	}
}

func (o *common) streams(c *cli.Context) {
	o.stdout, o.stderr = c.App.Writer, c.App.ErrWriter
	if o.yamlOfJSON && o.format == "yaml" {
		o.stdout = yamlWriter{o.stdout}
	}
}

// writerFlag is --writer, on every command that writes a database; note
// ends its usage.
func (o *common) writerFlag(note string) cli.Flag {
	return &cli.StringFlag{Name: "writer", Value: string(snapshot.WriterBulk), Destination: &o.writer,
		Usage: "how the new database's key bucket is written: bulk (bbolt's pages laid out directly, the faster) or bbolt " +
			"(through bbolt's own Put, slower: the fallback if a newer bbolt changes its on-disk format, or for a key too long for bulk)" + note}
}

// validateWriter refuses a --writer that names no writer.
func (o *common) validateWriter() error {
	if _, err := snapshot.ParseWriterKind(o.writer); err != nil {
		return usagef("--writer %q is neither %s nor %s%s", o.writer, snapshot.WriterBulk, snapshot.WriterBbolt,
			choiceHint(o.writer, []string{string(snapshot.WriterBulk), string(snapshot.WriterBbolt)}))
	}
	return nil
}

func (o *common) skipHashFlag() cli.Flag {
	return &cli.BoolFlag{Name: "skip-hash-check", Destination: &o.skipHash,
		Usage: "accept a snapshot without a sha256 trailer (a raw member/snap/db)"}
}

func (o *common) encryptionFlag() cli.Flag {
	return &cli.StringFlag{Name: "encryption-config", Destination: &o.encryptionConfig,
		Usage: "the apiserver's EncryptionConfiguration file, to read values encrypted at rest (aescbc, aesgcm, secretbox)"}
}

func (o *common) etcdPrefixFlag() cli.Flag {
	return &cli.StringFlag{Name: "etcd-prefix", Destination: &o.etcdPrefix,
		Usage: "where the cluster keeps its objects (kube-apiserver's --etcd-prefix, e.g. /kubernetes.io); default: detected from the snapshot (/registry)"}
}

// outputFlag is --output/-o; formats lists the accepted values, the first
// being the default (text and json unless given).
func (o *common) outputFlag(formats ...string) cli.Flag {
	if len(formats) == 0 {
		formats, o.yamlOfJSON = []string{"text", "json", "yaml"}, true
	}
	o.formats = formats
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: formats[0], Destination: &o.format,
		Usage: "report format: " + orList(formats)}
}

func (o *common) quietFlag() cli.Flag {
	return o.quietFlagSaying("no progress output")
}

// quietFlagSaying is --quiet with its own usage, for a command whose --quiet
// leaves out more than progress.
func (o *common) quietFlagSaying(usage string) cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &o.quiet, Usage: usage}
}

// validateFormat checks --output against the accepted values.
func (o *common) validateFormat() error {
	if len(o.formats) == 0 {
		return nil
	}
	for _, f := range o.formats {
		if o.format == f {
			return nil
		}
	}
	return usagef("--output must be %s, not %q%s", orList(o.formats), o.format, choiceHint(o.format, o.formats))
}

// choiceHint is "; did you mean X?" for a value meant to be one of choices,
// or "".
func choiceHint(value string, choices []string) string {
	return didYouMean(textdist.Nearest(value, choices))
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// json reports whether the report is machine output (-o json, or -o yaml
// of the same document).
func (o *common) json() bool { return o.format == "json" || (o.yamlOfJSON && o.format == "yaml") }

// encryption reads --encryption-config, if given.
func (o *common) encryption() (*encryption.Config, error) {
	if o.encryptionConfig == "" {
		return nil, nil
	}
	cfg, err := encryption.Load(o.encryptionConfig)
	if err != nil {
		return nil, usagef("--encryption-config: %w", err)
	}
	return cfg, nil
}

// progress picks the renderer: a one-line bar on a terminal, one
// "[phase] ..." line per finished phase otherwise, JSON lines on stderr with
// --output json, nothing with --quiet.
func (o *common) progress() progress.Reporter {
	if o.quiet {
		return progress.Nop{}
	}
	tty := false
	if f, ok := o.stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	r := &renderer{w: o.stderr, tty: tty && !o.json(), json: o.json(), said: time.Now()}
	if !r.tty && !r.json {
		r.firstLineAt(firstLineAfter) // whatever the phases report by then
	}
	o.renderers = append(o.renderers, r)
	return r
}

// args returns the positional arguments, between min and max of them.
func args(c *cli.Context, min, max int, what string) ([]string, error) {
	if n := c.NArg(); n < min || n > max {
		if max == 0 {
			return nil, usagef("%s takes no arguments", c.Command.Name)
		}
		got := fmt.Sprintf("got %d arguments", n)
		switch n {
		case 0:
			got = "got none"
		case 1:
			got = "got one, " + c.Args().First()
		}
		return nil, usagef("%s needs %s (%s)", c.Command.Name, what, got)
	}
	return c.Args().Slice(), nil
}

// oneSnapshot is the setup of a command whose one argument is a snapshot.
func (o *common) oneSnapshot(c *cli.Context, path *string) error {
	o.streams(c)
	a, err := args(c, 1, 1, "exactly one argument, the snapshot file")
	if err != nil {
		return err
	}
	*path = a[0]
	return o.unpack(path)
}

// noArgs is the setup of a command that takes no arguments.
func (o *common) noArgs(c *cli.Context) error {
	o.streams(c)
	_, err := args(c, 0, 0, "")
	return err
}

// kubeadmNoArgs is noArgs for the kubeadm-only commands (certs,
// manifests): a k3s or RKE2 snapshot given as the argument is refused
// first, saying what the command does.
func (o *common) kubeadmNoArgs(c *cli.Context, what string) error {
	o.streams(c)
	if err := o.refuseK3sSnapshot(c.Context, c, what); err != nil {
		return err
	}
	_, err := args(c, 0, 0, "")
	return err
}
