package app

import (
	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/rules"
)

// ruleFlags binds the registered rules' options to flags: every option a
// rule declares as a CLI option becomes a flag of plan and transform (and,
// if it states an invariant, of verify), in the rule's help category. A new
// rule's flags appear here without touching this file.
type ruleFlags struct {
	opts  rules.Options
	lists map[*[]string]*cli.StringSlice // list options, copied in after parsing
}

// flags returns the flags of the options keep selects.
func (r *ruleFlags) flags(keep func(rules.Option) bool) []cli.Flag {
	r.lists = map[*[]string]*cli.StringSlice{}
	var out []cli.Flag
	for _, e := range rules.Registry() {
		for _, o := range e.Options(&r.opts) {
			if !o.CLI || !keep(o) {
				continue
			}
			cat := "Rule " + e.Name
			switch v := o.Value.(type) {
			case *string:
				out = append(out, &cli.StringFlag{Name: o.Name, Category: cat, Usage: o.Usage, Value: o.Default, Destination: v})
			case *bool:
				out = append(out, &cli.BoolFlag{Name: o.Name, Category: cat, Usage: o.Usage, Destination: v})
			case *[]string:
				s := cli.NewStringSlice()
				r.lists[v] = s
				out = append(out, &cli.StringSliceFlag{Name: o.Name, Category: cat, Usage: o.Usage, Destination: s})
			}
		}
	}
	return out
}

// options returns the parsed rule options.
func (r *ruleFlags) options() rules.Options {
	for field, s := range r.lists {
		*field = s.Value()
	}
	// A node named on the command line must be one the snapshot records
	// (a misspelt --control-plane-address cpX= is refused, not taken for
	// a new node).
	r.opts.RecordedNodesOnly = true
	return r.opts
}

func allRuleOptions(rules.Option) bool { return true }

func verifyRuleOptions(o rules.Option) bool { return o.Verify }
