package app

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// completionArgs is interspersed, but leaves a completion request as it is:
// urfave/cli answers it only when --generate-bash-completion is the last
// argument.
func completionArgs(app *cli.App, args []string) []string {
	if len(args) > 0 && args[len(args)-1] == "--generate-bash-completion" {
		return args
	}
	return interspersed(app, args)
}

// dryRunSpelling accepts kubectl's --dry-run=client for the plain switch
// --dry-run (snapshift never talks to a server, so a dry run is always
// what kubectl calls client-side), and says so for any other value that
// is not a boolean.
func dryRunSpelling(args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		name, value, ok := strings.Cut(a, "=")
		if !ok || (name != "--dry-run" && name != "-dry-run") {
			out = append(out, a)
			continue
		}
		switch value {
		case "client":
			out = append(out, "--dry-run")
		case "true", "false", "1", "0", "t", "f", "TRUE", "FALSE", "True", "False":
			out = append(out, a)
		default:
			return nil, usagef("--dry-run is a plain switch (snapshift works offline; --dry-run=client means the same), not --dry-run=%s", value)
		}
	}
	return out, nil
}
