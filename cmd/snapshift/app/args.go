package app

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags before its positional arguments, so
// that `snapshift transform in.db --out new.db` works: urfave/cli v2 stops
// reading flags at the first positional argument. "--" ends flag parsing as
// usual. Flags are told apart from values by asking the command which of its
// flags take no value (bool flags).
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var cmd *cli.Command
	ci := -1
	for i := 1; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			cmd, ci = app.Command(args[i]), i
			break
		}
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args // a command with subcommands (node apply|rollback): theirs are parsed as given
	}
	noValue := map[string]bool{"help": true, "h": true}
	for _, f := range cmd.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				noValue[n] = true
			}
		}
	}
	var flags, pos []string
	rest := args[ci+1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			pos = append(pos, rest[i:]...)
			i = len(rest)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !noValue[name] {
				if i+1 == len(rest) {
					// A flag without its value, last: the parser says so
					// (the arguments would be taken for its value).
					return append(append([]string{}, args[:ci+1]...), flags...)
				}
				i++
				flags = append(flags, rest[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append([]string{}, args[:ci+1]...)
	out = append(out, flags...)
	if len(pos) > 0 && pos[0] != "--" {
		out = append(out, "--")
	}
	return append(out, pos...)
}
