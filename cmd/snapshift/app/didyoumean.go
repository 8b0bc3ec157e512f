package app

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/internal/textdist"
)

// flagSynonyms are the names other tools give snapshift's flags: kubeadm's,
// k3s's and kube-apiserver's spellings of the same setting.
var flagSynonyms = map[string]string{
	"cluster-cidr":             "pod-network-cidr", // k3s, kube-controller-manager
	"pod-subnet":               "pod-network-cidr", // kubeadm's ClusterConfiguration
	"service-subnet":           "service-cidr",     // kubeadm's ClusterConfiguration
	"service-cluster-ip-range": "service-cidr",     // kube-apiserver
}

// closest returns the candidates a mistyped word probably meant, best
// first: the same word in another case, one within a third of its length
// in edits (at most 3; two letters swapped count as one), one it begins, or one whose dash-separated words
// hold all of its words (pod-cidr: pod-network-cidr); of those, the
// nearest (all of them when they are as near).
func closest(word string, candidates []string) []string {
	type scored struct {
		s string
		d int
	}
	var out []scored
	lw := strings.ToLower(word)
	words := strings.FieldsFunc(lw, func(r rune) bool { return r == '-' || r == '/' || r == '.' || r == '_' })
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lw {
			out = append(out, scored{c, -1})
			continue
		}
		d := textdist.Distance(lw, lc)
		if textdist.Swapped(lw, lc) {
			d = 1 // two letters swapped: one slip
		}
		limit := min(3, max(1, len(word)/3))
		switch {
		case d <= limit:
		case len(lw) >= 3 && strings.HasPrefix(lc, lw):
			d += 10
		case len(words) > 1 && containsWords(lc, words):
			d += 20
		default:
			continue
		}
		out = append(out, scored{c, d})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].s < out[j].s
	})
	var names []string
	for _, s := range out {
		if s.d == out[0].d && !slices.Contains(names, s.s) {
			names = append(names, s.s)
		}
	}
	return names
}

// containsWords reports whether every word is one of s's dash-separated words.
func containsWords(s string, words []string) bool {
	have := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '/' || r == '.' || r == '_' })
	for _, w := range words {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// didYouMean is "; did you mean X?" or "; did you mean X or Y?" (at most
// three), or "".
func didYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "; did you mean " + orList(names[:min(3, len(names))]) + "?"
}

// dashed is a flag name as it is typed: --name, or -n for one letter.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// commandPath is "snapshift plan" or "snapshift node apply".
func commandPath(c *cli.Context) string {
	if c.Command == nil || c.Command.Name == "" {
		return c.App.Name
	}
	names := []string{c.App.Name}
	for _, l := range slices.Backward(c.Lineage()) {
		if l.Command != nil && l.Command.Name != "" && l.Command.Name != c.App.Name {
			names = append(names, l.Command.Name)
		}
	}
	return strings.Join(slices.Compact(names), " ")
}

// flagNames are every name of the flags (without dashes), help included.
func flagNames(flags []cli.Flag) []string {
	names := []string{"help"}
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

// flagUsageError rewrites the flag package's parse errors ("flag provided
// but not defined: -serivce-cidr") as a sentence with the flag as it is
// typed, and a suggestion: the flag meant, or for a command that only
// groups subcommands (node), the subcommands.
func flagUsageError(c *cli.Context, err error) error {
	msg := err.Error()
	path := commandPath(c)
	var cmd *cli.Command
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		cmd = c.Command
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		if cmd != nil && len(subcommandNames(cmd)) > 0 {
			return usagef("%s needs a subcommand first: %s (%s %s %s ...)", path, orList(subcommandNames(cmd)),
				path, subcommandNames(cmd)[0], dashed(name))
		}
		flags := c.App.Flags
		if cmd != nil {
			flags = cmd.Flags
		}
		names := flagNames(flags)
		var hints []string
		if s, ok := flagSynonyms[name]; ok && slices.Contains(names, s) && s != name {
			hints = append(hints, dashed(s))
		}
		for _, n := range closest(name, names) {
			if len(n) > 1 && !slices.Contains(hints, dashed(n)) {
				hints = append(hints, dashed(n))
			}
		}
		if len(hints) > 0 {
			return usagef("unknown flag %s%s", dashed(name), didYouMean(hints))
		}
		if cmd == nil && c.App.Command(name) != nil {
			return usagef("unknown flag %s; the command is %s %s, without dashes", dashed(name), path, name)
		}
		return usagef("unknown flag %s (see %s --help)", dashed(name), path)
	}
	flags := c.App.Flags
	if cmd != nil {
		flags = cmd.Flags
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return usagef("%s needs a value (see %s --help)", dashed(name), path)
	}
	// `invalid value "x" for flag -timeout: parse error`, `invalid boolean
	// value "x" for -force: parse error`: the flag as it is typed, and the
	// form its value takes instead of the flag package's "parse error".
	var value string
	if n, _ := fmt.Sscanf(msg, "invalid value %q for flag ", &value); n == 1 {
		name, tail, _ := strings.Cut(msg[strings.Index(msg, " for flag -")+len(" for flag -"):], ":")
		want := strings.TrimSpace(tail)
		if f := findFlag(flags, name); f != nil && valueForm(f) != "" {
			want = "want " + valueForm(f)
		}
		return usagef("invalid value %q for flag %s: %s", value, dashed(name), want)
	}
	if n, _ := fmt.Sscanf(msg, "invalid boolean value %q for ", &value); n == 1 {
		name, _, _ := strings.Cut(msg[strings.Index(msg, " for -")+len(" for -"):], ":")
		return usagef("%s is a switch: give it alone, or as %s=false, not %s=%s", dashed(name), dashed(name), dashed(name), value)
	}
	return usageError{fmt.Errorf("%s", msg)}
}

// valueForm is what a flag's value looks like, by its type ("" for a
// string: its own check says).
func valueForm(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return parseerr.Duration
	case *cli.Uint64Flag, *cli.UintFlag:
		return parseerr.Uint
	case *cli.IntFlag, *cli.Int64Flag:
		return parseerr.Int
	case *cli.Float64Flag:
		return parseerr.Float
	}
	return ""
}

func subcommandNames(cmd *cli.Command) []string {
	var names []string
	for _, s := range cmd.Subcommands {
		if s.Name != "help" {
			names = append(names, s.Name)
		}
	}
	return names
}

// commandNames are the app's commands and their aliases.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	return names
}

// unknownCommand is the error for a word that names no command.
func unknownCommand(path string, word string, cmds []*cli.Command) error {
	if strings.HasPrefix(word, "-") {
		return usagef("unknown flag %s (see %s --help)", word, path)
	}
	return usagef("unknown command %q for %q%s", word, path, didYouMeanOr(closestCommands(word, cmds), " (see "+path+" --help)"))
}

// groupAction is the action of a command that only groups subcommands
// (node, cluster): its help, or for a word that names none of them, what
// it probably meant (urfave/cli would say "No help topic for ...", exit 1).
func groupAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	return unknownCommand(commandPath(c), c.Args().First(), c.Command.Subcommands)
}

// helpAnywhere turns a command line with -h or --help anywhere before "--"
// (after positional arguments too, as kubectl takes it) into a request for
// that command's help: the command words, then --help.
func helpAnywhere(app *cli.App, args []string) ([]string, bool) {
	help := false
	if len(args) == 0 {
		return args, false
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			help = true
		}
	}
	if !help {
		return args, false
	}
	out := []string{args[0]}
	cmds := app.Commands
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		var found *cli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				found = c
			}
		}
		if found == nil {
			if len(out) == 1 {
				return args, false // an unknown command: its error, with a suggestion
			}
			break
		}
		out = append(out, found.Name)
		if len(found.Subcommands) == 0 {
			break
		}
		cmds = found.Subcommands
	}
	if len(out) == 2 && (out[1] == "help") {
		return args, false // `help -h` and `help plan --help`: the help command's own
	}
	if len(out) == 1 {
		return append(out, "help"), true // the app's own: `snapshift help`
	}
	return append(out, "--help"), true
}
