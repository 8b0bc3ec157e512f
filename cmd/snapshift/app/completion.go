package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/cni"
)

// The scripts ask the binary for the candidates of the word under the
// cursor: `snapshift __complete WORDS... CURRENT` prints what to complete
// (complete below), and the script hands it to the shell. They need
// nothing else: no bash-completion package (_get_comp_words_by_ref,
// _init_completion), as kubectl's scripts need none; zsh's loads compinit
// itself when sourced in a shell that has not.
const bashCompletion = `# snapshift bash completion: source <(snapshift completion bash)
# Needs bash 4 or later, and no bash-completion package.
_snapshift_func() {
  local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n' kind
  [[ $cur == "=" ]] && cur=
  local -a out
  out=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null))
  kind=${out[0]}
  case $kind in
    files) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
    dirs) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
    words) COMPREPLY=($(compgen -W "${out[*]:1}" -- "$cur")) ;;
    *) COMPREPLY=() ;;
  esac
}
complete -F _snapshift_func snapshift
`

// zshCompletion works as a file _snapshift in $fpath (compinit autoloads
// it from its #compdef line and runs it as the function: funcstack[1] is
// _snapshift) and sourced (it defines the function and registers it,
// running compinit first if the shell has not: compdef is compinit's).
const zshCompletion = `#compdef snapshift
# snapshift zsh completion: source <(snapshift completion zsh)
# or: snapshift completion zsh > "${fpath[1]}/_snapshift"
_snapshift() {
  local -a out
  out=("${(@f)$("${(Q)words[1]}" __complete "${(@Q)words[2,CURRENT-1]}" "${(Q)words[CURRENT]}" 2>/dev/null)}")
  # --output=j: complete the value after the "=".
  [[ ${words[CURRENT]} == -*=* ]] && compset -P '*='
  case ${out[1]} in
    files) _files ;;
    dirs) _files -/ ;;
    words) compadd -- "${(@)out[2,-1]}" ;;
  esac
}
if [[ ${funcstack[1]-} == _snapshift ]]; then
  _snapshift "$@"
else
  (( ${+functions[compdef]} )) || { autoload -Uz compinit && compinit -u }
  compdef _snapshift snapshift
fi
`

// fishCompletion asks the binary with the words before the cursor
// (commandline -opc, from the snapshift one: sudo snapshift ... too) and
// the one under it; -f: files only where the binary says files, never
// mixed into a list of commands or flags.
const fishCompletion = `# snapshift fish completion: snapshift completion fish | source
# or: snapshift completion fish > ~/.config/fish/completions/snapshift.fish
function __snapshift_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l i (contains -i -- snapshift (string replace -r -- '.*/' '' $words))
    or set i 1
    set -l out ($words[$i] __complete $words[(math $i + 1)..-1] $cur 2>/dev/null)
    set -l pre
    # --output=j: the values after the "=".
    if string match -qr -- '^-[^=]*=' $cur
        set pre (string replace -r -- '=.*' '=' $cur)
        set cur (string replace -r -- '^[^=]*=' '' $cur)
    end
    switch "$out[1]"
        case words
            for w in $out[2..-1]
                printf '%s%s\n' $pre $w
            end
        case files
            __fish_complete_path $cur | string replace -r -- '^' "$pre"
        case dirs
            __fish_complete_directories $cur | string replace -r -- '^' "$pre"
    end
end
complete -c snapshift -e
complete -c snapshift -f -a '(__snapshift_complete)'
`

// completeCommand is the hidden command the scripts call.
const completeCommand = "__complete"

// complete prints the candidates for the last of words (the word under the
// cursor, possibly empty), the others being the command line before it:
// a first line saying what they are (words, files, dirs or none), then
// the words. Commands, then subcommands; a flag's name after a dash; a
// flag's values after the flag (-o: the formats, --renew: what it renews;
// files or directories where the flag takes a path); then the command's
// arguments (completion: the shells; the rest: files).
func complete(app *cli.App, words []string, w io.Writer) {
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	// bash splits --output=json at "=": --output, =, json.
	if len(words) >= 1 && words[len(words)-1] == "=" {
		words = words[:len(words)-1]
	} else if name, value, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(name, "-") {
		words, cur = append(words, name), value
	}
	cmds, flags := app.Commands, app.Flags
	var cmd *cli.Command
	afterDashes := false
	for i := 0; i < len(words); i++ {
		a := words[i]
		switch {
		case a == "--":
			afterDashes = true
		case strings.HasPrefix(a, "-") && !afterDashes:
			if f := findFlag(flags, a); f != nil && takesValue(f) && !strings.Contains(a, "=") {
				i++ // its value
			}
		case cmd == nil || len(subcommands(cmd)) > 0:
			next := findCommand(cmds, a)
			if next == nil {
				if cmd == nil {
					return // an unknown command: nothing to offer
				}
				break
			}
			cmd, cmds, flags = next, next.Subcommands, next.Flags
		}
	}
	// A flag's value.
	if len(words) > 0 && !afterDashes {
		if f := findFlag(flags, words[len(words)-1]); f != nil && takesValue(f) {
			kind, vals := flagValues(f)
			writeCandidates(w, kind, vals)
			return
		}
	}
	switch {
	case strings.HasPrefix(cur, "-") && !afterDashes:
		var names []string
		for _, f := range flags {
			for _, n := range f.Names() {
				names = append(names, dashed(n))
			}
		}
		writeCandidates(w, "words", append(names, "--help"))
	case cmd == nil:
		writeCandidates(w, "words", commandNames(app.Commands))
	case len(subcommands(cmd)) > 0:
		writeCandidates(w, "words", subcommandNames(cmd))
	case cmd.Name == "completion":
		writeCandidates(w, "words", []string{"bash", "zsh", "fish"})
	case cmd.Name == "help":
		writeCandidates(w, "words", commandNames(app.Commands))
	default:
		writeCandidates(w, "files", nil)
	}
}

func writeCandidates(w io.Writer, kind string, words []string) {
	fmt.Fprintln(w, kind)
	for _, c := range words {
		fmt.Fprintln(w, c)
	}
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func subcommands(cmd *cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, s := range cmd.Subcommands {
		if s.Name != "help" {
			out = append(out, s)
		}
	}
	return out
}

// findFlag is the flag a word names (--name, -n, --name=value).
func findFlag(flags []cli.Flag, word string) cli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// valueChoices are the flags whose values are a fixed list.
var valueChoices = map[string][]string{
	"renew":           {"apiserver", "etcd"},
	"webhooks":        {"list", "ignore"},
	"leave-cni-state": cni.Leavable(),
	"route":           {"rewrite"},
}

// dirFlags are the flags that take a directory.
var dirFlags = []string{"tmp-dir", "data-dir", "wal-dir", "cert-dir", "manifest-dir", "out-dir", "bundle", "root"}

// flagValues are what a flag takes: its choices (-o: the formats its usage
// lists), a directory, or a file.
func flagValues(f cli.Flag) (string, []string) {
	name := f.Names()[0]
	if name == "output" {
		if df, ok := f.(cli.DocGenerationFlag); ok {
			if list, ok := strings.CutPrefix(df.GetUsage(), "report format: "); ok {
				return "words", strings.Split(strings.NewReplacer(" or ", ",", ", ", ",").Replace(list), ",")
			}
		}
	}
	if v, ok := valueChoices[name]; ok {
		return "words", v
	}
	if slices.Contains(dirFlags, name) {
		return "dirs", nil
	}
	if df, ok := f.(cli.DocGenerationFlag); ok && !strings.Contains(strings.ToLower(df.GetUsage()), "file") &&
		!strings.Contains(name, "config") && name != "out" && name != "rules" {
		return "none", nil // an address, a range, a name: nothing to offer
	}
	return "files", nil
}

// completionOptions are the completion command's: the shell.
type completionOptions struct {
	common
	shell string
	app   *cli.App
}

func (o *completionOptions) setup(c *cli.Context) error {
	o.streams(c)
	a, err := args(c, 1, 1, "one argument, the shell: bash, zsh or fish")
	if err != nil {
		return err
	}
	o.shell, o.app = a[0], c.App
	return nil
}

func (o *completionOptions) Validate() error {
	switch o.shell {
	case "bash", "zsh", "fish":
		return nil
	}
	return usagef("completion: shell %q is not bash, zsh or fish%s", o.shell, choiceHint(o.shell, []string{"bash", "zsh", "fish"}))
}

func (o *completionOptions) Run(context.Context) error {
	switch o.shell {
	case "bash":
		_, err := io.WriteString(o.stdout, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(o.stdout, zshCompletion)
		return err
	}
	_, err := io.WriteString(o.stdout, fishCompletion)
	return err
}

func completionCommand() *cli.Command {
	o := &completionOptions{}
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: "Commands, flags, flag values (-o: text json yaml) and file names complete as you type. The bash\n" +
			"script needs bash 4 and nothing else (no bash-completion package).\n\n" +
			"Example:\n   source <(snapshift completion bash)             # this shell\n" +
			"   snapshift completion bash > /etc/bash_completion.d/snapshift\n" +
			"   snapshift completion zsh > \"${fpath[1]}/_snapshift\"\n" +
			"   snapshift completion fish > ~/.config/fish/completions/snapshift.fish",
		Action: action(o),
	}
}

// helpCommand is `snapshift help [command]`. urfave/cli would add its own,
// but that one is a package-global *Command that its setup makes its own
// subcommand when it runs, so that a second app in one process (the tests)
// recursed forever walking the command tree (generating urfave/cli's fish
// completion, which the fish script no longer is): every app gets a fresh
// one here.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "show the commands, or one command's usage and flags",
		ArgsUsage:       "[command [subcommand]]",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			words, err := helpTopic(c.App, c.Args().Slice())
			if err != nil {
				return err
			}
			// The topic's help as `snapshift WORDS --help` shows it.
			return c.App.RunContext(c.Context, append(append([]string{c.App.Name}, words...), "--help"))
		},
	}
}

// helpTopic resolves help's arguments to a command's words (cluster
// restart), or says which word names nothing, with what it probably meant.
func helpTopic(app *cli.App, args []string) ([]string, error) {
	cmds, path := app.Commands, app.Name
	var words []string
	for i, a := range args {
		var found *cli.Command
		for _, cmd := range cmds {
			if cmd.Name != "help" && cmd.HasName(a) {
				found = cmd
			}
		}
		switch {
		case found == nil && i == 0:
			return nil, usagef("help: no command %q%s", a, didYouMeanOr(closestCommands(a, cmds), " (see snapshift help)"))
		case found == nil && len(cmds) == 0:
			return nil, usagef("help: %s has no subcommands, not %q", path, a)
		case found == nil:
			return nil, usagef("help: %s has no subcommand %q%s", path, a, didYouMeanOr(closestCommands(a, cmds), " (its subcommands: "+orList(commandNames(cmds))+")"))
		}
		words, path, cmds = append(words, found.Name), path+" "+found.Name, found.Subcommands
	}
	return words, nil
}

// closestCommands are the commands a mistyped word probably meant.
func closestCommands(word string, cmds []*cli.Command) []string {
	var out []string
	for _, n := range closest(word, commandNames(cmds)) {
		if len(n) > 1 {
			out = append(out, n)
		}
	}
	return out
}

// didYouMeanOr is didYouMean(names), or otherwise when there are none.
func didYouMeanOr(names []string, otherwise string) string {
	if len(names) == 0 {
		return otherwise
	}
	return didYouMean(names)
}
