// Package app is the snapshift command line: one file per command, each a
// thin action that reads flags into a library Config and makes one call.
// Main maps every error to a message and an exit code in one place.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/nodeops"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/verify"
)

// Exit codes. Documented in --help and README.md, from exitCodes.
const (
	ExitOK          = 0
	ExitError       = 1   // an unexpected failure (I/O, a bug)
	ExitUsage       = 2   // bad command line
	ExitBadInput    = 3   // the input is not a usable etcd snapshot
	ExitRefused     = 4   // a change or an output was refused as unsafe
	ExitVerify      = 5   // verify found a check that failed
	ExitInterrupted = 130 // SIGINT/SIGTERM
)

// usageError marks errors in the command line. The cause stays reachable,
// so that an *option.Error inside is rendered with the flag's name.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// New builds the app. Every run gets fresh flags: no package-global state.
func New(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "snapshift",
		Usage: "rewrite Kubernetes cluster state offline, in etcd snapshot files",
		Description: "snapshift reads an etcd snapshot (etcdctl snapshot save) read-only, streams every live key\n" +
			"through rules (service CIDR, pod CIDR, ...), writes a new snapshot, and restores it into new\n" +
			"etcd data dirs. The input is never modified; outputs appear only when complete.\n\n" + exitCodeHelp(),
		Reader:         stdin,
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {}, // Main decides exit codes
		Flags:          []cli.Flag{&cli.BoolFlag{Name: versionFlag, Aliases: []string{"v"}, Usage: "print the version (the version command, as text)"}},
		Action: func(c *cli.Context) error {
			if c.Bool(versionFlag) {
				return showVersion(c)
			}
			if c.NArg() > 0 {
				return unknownCommand(c.App.Name, c.Args().First(), c.App.Commands)
			}
			return cli.ShowAppHelp(c)
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return flagUsageError(c, err)
		},
		Commands: []*cli.Command{
			inspectCommand(),
			lsCommand(),
			getCommand(),
			planCommand(),
			transformCommand(),
			verifyCommand(),
			restoreCommand(),
			certsCommand(),
			manifestsCommand(),
			rebuildCommand(),
			cleanCommand(),
			rulesCommand(),
			nodeCommand(),
			clusterCommand(),
			versionCommand(),
			completionCommand(),
			helpCommand(),
		},
	}
	var setUsage func([]*cli.Command)
	setUsage = func(cmds []*cli.Command) {
		for _, c := range cmds {
			if c.OnUsageError == nil {
				c.OnUsageError = app.OnUsageError
			}
			if len(c.Subcommands) > 0 && c.Action == nil {
				c.Action = groupAction
			}
			setUsage(c.Subcommands)
		}
	}
	setUsage(app.Commands)
	return app
}

// Main runs the app with args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the first signal cancels cleanly; a second one kills at once
	}()
	app := New(stdin, stdout, stderr)
	if len(args) > 1 && args[1] == completeCommand {
		complete(app, args[2:], stdout)
		return ExitOK
	}
	help, isHelp := helpAnywhere(app, args)
	args, err := dryRunSpelling(args)
	if isHelp {
		args, err = help, nil
	}
	if err == nil {
		args = interspersed(app, args)
		err = contradictions(app, args)
	}
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if err == nil {
		return ExitOK
	}
	code := ExitCode(ctx, err)
	// Library errors name options by their Go fields: say them as flags.
	msg, _ := option.Render(err, flagName)
	// Whatever decoder or parser an error came through, it is said in the
	// user's words: the form a value takes, never Go's or a library's.
	msg = oneLine(parseerr.Text(msg))
	if code == ExitInterrupted {
		msg = "interrupted: " + msg + " (temporary files removed; no output was written)"
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "\r\033[K") // clear a half-drawn progress bar
	}
	fmt.Fprintf(stderr, "snapshift: %s\n", msg)
	return code
}

// ExitCode maps an error to the documented exit codes.
func ExitCode(ctx context.Context, err error) int {
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &ue), errors.Is(err, fsutil.ErrOutputDir):
		return ExitUsage
	case errors.Is(err, snapshot.ErrInvalidInput):
		return ExitBadInput
	case errors.Is(err, verify.ErrFailed):
		return ExitVerify
	case refusal(err):
		return ExitRefused
	case errors.As(err, new(*option.Error)):
		return ExitUsage // an option that is wrong on its own or for this snapshot
	}
	return ExitError
}

var errRefused = errors.New("refused")

// refusal reports whether err is a refusal (exit 4).
func refusal(err error) bool {
	return errors.Is(err, fsutil.ErrExists) || errors.Is(err, migrate.ErrRefused) || errors.Is(err, errRefused) ||
		errors.Is(err, state.ErrEncrypted) || errors.Is(err, nodeops.ErrRefused)
}

// renderedError is an error whose message was rendered for the user (its
// options named as flags or file keys), with its cause kept for ExitCode.
type renderedError struct {
	msg string
	err error
}

func (e renderedError) Error() string { return e.msg }
func (e renderedError) Unwrap() error { return e.err }

// refusedf is a refusal from the command line layer (exit 4).
func refusedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errRefused}, args...)...)
}

// oneLine makes an error one line: an error may quote bytes from the
// snapshot, and a stored newline must not start a second (forged) line.
// Lines are joined with "; " (errors.Join, a command's stderr, a message in
// two sentences read as clauses, not as a literal \n); other control
// characters are escaped.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	s = strings.Join(parts, "; ")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// flagName renders an option field as the flag that sets it: a rule's
// option by the rule's declaration (rules.FlagName), any other by its row
// in option.Library; a field no flag sets is said in words, never as its
// Go name.
func flagName(field string) string {
	if f := rules.FlagName(field); f != field {
		return f
	}
	if f, ok := option.Library().FlagName(field); ok {
		return f
	}
	return option.Words(field)
}
