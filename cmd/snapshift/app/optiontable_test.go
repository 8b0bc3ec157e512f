package app

import (
	"io"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
)

// TestEveryFlagDeclared: every flag of every command is declared once,
// either as a rule's option (rules.Entry.Options) or as a row of
// option.Library, and no option is declared in both (but the one the table
// says is a rule's option read into another library's field: same flag,
// same key). A new flag without a declaration fails here, so that the
// error messages that name its field can name the flag.
func TestEveryFlagDeclared(t *testing.T) {
	lib := option.Library()
	var scratch rules.Options
	ruleFlag, ruleField := map[string]rules.Option{}, map[string]bool{}
	for _, o := range rules.AllOptions(&scratch) {
		if ruleField[o.Field] {
			t.Errorf("field %s is declared by two rule options", o.Field)
		}
		ruleField[o.Field] = true
		if o.CLI {
			if prev, ok := ruleFlag[o.Name]; ok {
				t.Errorf("--%s is declared by two rule options, %s and %s", o.Name, prev.Field, o.Field)
			}
			ruleFlag[o.Name] = o
		}
	}
	for _, d := range lib {
		for _, f := range d.Fields {
			if ruleField[f] {
				t.Errorf("field %s is declared by a rule and again in option.Library", f)
			}
		}
		if o, ok := ruleFlag[d.Flag]; ok && d.Flag != "" && o.Config != d.Key {
			t.Errorf("--%s is declared by the rule option %s (key %q) and again in option.Library (key %q)", d.Flag, o.Field, o.Config, d.Key)
		}
	}
	app := New(nil, io.Discard, io.Discard)
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				name := f.Names()[0]
				if _, ok := ruleFlag[name]; !ok && !lib.HasFlag(name) {
					t.Errorf("%s%s --%s: no declaration (add a row to option.Library, or declare it in its rule)", path, c.Name, name)
				}
			}
			walk(path+c.Name+" ", c.Subcommands)
		}
	}
	walk("snapshift ", app.Commands)
	// The app's own flag (--version) is no option of a command.
}

// TestFlagNameFromTable: the fields that once had a hand-written flag map
// render as the same flags, derived from the declarations.
func TestFlagNameFromTable(t *testing.T) {
	for field, want := range map[string]string{
		"SkipHashCheck": "--skip-hash-check", "Encryption": "--encryption-config", "Output": "--out",
		"EtcdMembers": "--etcd-member", "EtcdMember": "--etcd-member", "PodCIDR": "--pod-network-cidr",
		"ServiceCIDR": "--service-cidr", "ControlPlaneEndpoint": "--control-plane-endpoint",
		"GenerateAll": "--all", "APIServerBindPort": "API server bind port",
	} {
		if got := flagName(field); got != want {
			t.Errorf("flagName(%s) = %q, want %q", field, got, want)
		}
	}
}
