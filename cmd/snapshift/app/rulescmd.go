package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/rules"
)

// rulesOptions are the rules command's: it lists the registry.
type rulesOptions struct {
	common
	names []string // rules NAME...: only these
}

// ruleInfo is one rule as `snapshift rules -o json` prints it.
type ruleInfo struct {
	Name    string       `json:"name"`
	Summary string       `json:"summary"`
	Touches []string     `json:"touches"`
	After   []string     `json:"after,omitempty"`
	Options []optionInfo `json:"options,omitempty"`
}

type optionInfo struct {
	Flag    string `json:"flag,omitempty"`
	Config  string `json:"config,omitempty"`
	Field   string `json:"field"`
	Default string `json:"default,omitempty"`
	Usage   string `json:"usage"`
}

func (o *rulesOptions) setup(c *cli.Context) error {
	o.streams(c)
	o.names = c.Args().Slice()
	return nil
}

func (o *rulesOptions) Validate() error {
	if err := o.validateFormat(); err != nil {
		return err
	}
	var known []string
	for _, e := range rules.Registry() {
		known = append(known, e.Name)
	}
	for _, n := range o.names {
		if !slices.Contains(known, n) {
			return usagef("rules: no rule %q%s (snapshift rules lists every one)", n, choiceHint(n, known))
		}
	}
	return nil
}

func (o *rulesOptions) Run(context.Context) error {
	var out []ruleInfo
	for _, e := range rules.Registry() {
		if len(o.names) > 0 && !slices.Contains(o.names, e.Name) {
			continue
		}
		ri := ruleInfo{Name: e.Name, Summary: e.Summary, Touches: e.Touches, After: e.After}
		var scratch rules.Options
		for _, opt := range e.Options(&scratch) {
			oi := optionInfo{Field: opt.Field, Config: opt.Config, Default: opt.Default, Usage: opt.Usage}
			if opt.CLI {
				oi.Flag = "--" + opt.Name
			}
			ri.Options = append(ri.Options, oi)
		}
		out = append(out, ri)
	}
	if o.json() {
		return writeJSON(o.stdout, ruleList{typeMeta: newTypeMeta("RuleList"), Items: out})
	}
	for i, r := range out {
		if i > 0 {
			fmt.Fprintln(o.stdout)
		}
		fmt.Fprintf(o.stdout, "%s: %s\n", r.Name, r.Summary)
		if len(r.After) > 0 {
			fmt.Fprintf(o.stdout, "  runs after: %s\n", strings.Join(r.After, ", "))
		}
		for _, t := range r.Touches {
			fmt.Fprintf(o.stdout, "  touches %s\n", t)
		}
		for _, opt := range r.Options {
			name := opt.Flag
			if name == "" {
				name = "(set by rebuild) " + opt.Field
			}
			if opt.Config != "" {
				name += " | " + opt.Config
			}
			fmt.Fprintf(o.stdout, "  %s\n      %s\n", name, opt.Usage)
		}
	}
	return nil
}

func rulesCommand() *cli.Command {
	o := &rulesOptions{}
	return newCommand(o, []cli.Flag{o.outputFlag()}, cli.Command{
		Name:      "rules",
		Usage:     "list the rules: what each changes, its flags and its rebuild-file keys",
		ArgsUsage: "[RULE...]",
		Description: "Lists every registered rule in the order they run (or only the RULEs named), what it\n" +
			"touches, and its options as plan/transform flags and as RebuildConfiguration keys.\n\n" +
			"Example:\n   snapshift rules\n   snapshift rules service-cidr\n   snapshift rules -o json | jq '.items[].options[].flag'",
	})
}
