package app

import (
	"strings"
)

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
