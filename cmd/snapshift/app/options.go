package app

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/progress"
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

// action runs a command.
func action(cmd command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := cmd.setup(c); err != nil {
			return err
		}
		if err := cleanLeftovers(c.App.ErrWriter, cmd); err != nil {
			return err
		}
		if err := cmd.Validate(); err != nil {
			return err
		}
		return cmd.Run(c.Context)
	}
}

// common holds the options most commands share, and where they print.
type common struct {
	stdout, stderr io.Writer

	skipHash         bool
	encryptionConfig string
	etcdPrefix       string
	format           string
	formats          []string // what --output accepts; the first is the default
	quiet            bool
}

func (o *common) streams(c *cli.Context) {
	o.stdout, o.stderr = c.App.Writer, c.App.ErrWriter
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
		formats = []string{"text", "json"}
	}
	o.formats = formats
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: formats[0], Destination: &o.format,
		Usage: "report format: " + strings.Join(formats, " or ")}
}

func (o *common) quietFlag() cli.Flag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Destination: &o.quiet, Usage: "no progress output"}
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
	return usagef("--output must be %s, not %q", strings.Join(o.formats, " or "), o.format)
}

func (o *common) json() bool { return o.format == "json" }

// encryption reads --encryption-config, if given.
func (o *common) encryption() (*encryption.Config, error) {
	if o.encryptionConfig == "" {
		return nil, nil
	}
	cfg, err := encryption.Load(o.encryptionConfig)
	if err != nil {
		return nil, usagef("--encryption-config: %v", err)
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
	return &renderer{w: o.stderr, tty: tty && !o.json(), json: o.json()}
}

// args returns the positional arguments, between min and max of them.
func args(c *cli.Context, min, max int, what string) ([]string, error) {
	if n := c.NArg(); n < min || n > max {
		if max == 0 {
			return nil, usagef("%s takes no arguments", c.Command.Name)
		}
		return nil, usagef("%s needs %s (got %d arguments)", c.Command.Name, what, n)
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
	return nil
}
