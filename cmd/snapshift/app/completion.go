package app

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts are urfave/cli's own (autocomplete/ in its
// repository, MIT licence), with the program name filled in: they ask the
// binary for candidates with --generate-bash-completion. fish's is
// generated from the command tree by urfave/cli.
const bashCompletion = `# snapshift bash completion: source <(snapshift completion bash)
_snapshift_bash_autocomplete() {
  if [[ "${COMP_WORDS[0]}" != "source" ]]; then
    local cur opts base words
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    if declare -F _init_completion >/dev/null 2>&1; then
      _init_completion -n "=:" || return
    else
      COMPREPLY=()
      _get_comp_words_by_ref -n "=:" cur prev words cword
    fi
    words=("${words[@]:0:$cword}")
    if [[ "$cur" == "-"* ]]; then
      requestComp="${words[*]} ${cur} --generate-bash-completion"
    else
      requestComp="${words[*]} --generate-bash-completion"
    fi
    opts=$(eval "${requestComp}" 2>/dev/null)
    COMPREPLY=($(compgen -W "${opts}" -- ${cur}))
    return 0
  fi
}
complete -o bashdefault -o default -o nospace -F _snapshift_bash_autocomplete snapshift
`

const zshCompletion = `#compdef snapshift
# snapshift zsh completion: source <(snapshift completion zsh)
_snapshift_zsh_autocomplete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _snapshift_zsh_autocomplete snapshift
`

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
	return usagef("completion: shell %q is not bash, zsh or fish", o.shell)
}

func (o *completionOptions) Run(context.Context) error {
	switch o.shell {
	case "bash":
		_, err := fmt.Fprint(o.stdout, bashCompletion)
		return err
	case "zsh":
		_, err := fmt.Fprint(o.stdout, zshCompletion)
		return err
	}
	s, err := o.app.ToFishCompletion()
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(o.stdout, s)
	return err
}

func completionCommand() *cli.Command {
	o := &completionOptions{}
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: "Commands, flags and file names complete as you type.\n\n" +
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
// recurses forever generating the fish completion: every app gets a fresh
// one here.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "show the commands, or one command's usage and flags",
		ArgsUsage:       "[command]",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			switch c.NArg() {
			case 0:
				return cli.ShowAppHelp(c)
			case 1:
				if c.App.Command(c.Args().First()) == nil {
					return usagef("help: no command %q (see snapshift help)", c.Args().First())
				}
				return cli.ShowCommandHelp(c, c.Args().First())
			}
			return usagef("help takes one command (got %d arguments)", c.NArg())
		},
	}
}
