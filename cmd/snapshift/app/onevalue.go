package app

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// repeatable marks a flag.Value that collects every occurrence of its flag
// (a cli.GenericFlag's Value: --etcd-member): such a flag is multi-valued
// like a slice flag.
type repeatable interface{ repeatable() }

// contradictions refuses a flag that takes one value given more than once
// with different values (--service-cidr A ... --service-cidr B, -o json
// --output text): the flag package keeps the last one without a word, so the
// run would quietly do something other than what was typed first. The same
// value twice is no contradiction and is accepted. args are the arguments
// as the app will parse them (after interspersed). The command line is read
// by the flag package itself, with the flags each command declares (names,
// aliases, which take no value), so every form it accepts (--flag=value,
// --flag value, -flag, an alias) counts; a line it cannot read is left to
// the app, whose error says why.
func contradictions(app *cli.App, args []string) error {
	if len(args) < 2 {
		return nil
	}
	flags, cmds, rest := app.Flags, app.Commands, args[1:]
	for {
		tail, err := scanOnce(flags, rest)
		if err != nil || len(tail) == 0 || cmds == nil {
			return err
		}
		var cmd *cli.Command
		for _, c := range cmds {
			if c.HasName(tail[0]) {
				cmd = c
			}
		}
		if cmd == nil {
			return nil // an unknown command: the app says so
		}
		flags, rest = cmd.Flags, tail[1:]
		if cmds = cmd.Subcommands; len(cmds) == 0 {
			cmds = nil // the last level: its flags are scanned, its arguments are not commands
		}
	}
}

// occurrences are the values one single-value flag was given, by the name
// it was given under.
type occurrences struct {
	flag  cli.Flag
	names []string
	vals  []string
}

// recorder is the flag.Value of one name of a flag in scanOnce's flag set.
type recorder struct {
	occ    *occurrences
	name   string
	isBool bool
}

func (r *recorder) String() string { return "" }
func (r *recorder) Set(v string) error {
	if r.occ != nil {
		r.occ.names, r.occ.vals = append(r.occ.names, r.name), append(r.occ.vals, v)
	}
	return nil
}
func (r *recorder) IsBoolFlag() bool { return r.isBool }

// scanOnce parses args with flags as the flag package would and returns the
// arguments after them; a flag parse error returns no tail and no error.
func scanOnce(flags []cli.Flag, args []string) ([]string, error) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var occs []*occurrences
	for _, f := range flags {
		var occ *occurrences
		if !multiValued(f) {
			occ = &occurrences{flag: f}
			occs = append(occs, occ)
		}
		for _, n := range f.Names() {
			fs.Var(&recorder{occ: occ, name: n, isBool: !takesValue(f)}, n, "")
		}
	}
	for _, n := range []string{"help", "h"} {
		if fs.Lookup(n) == nil {
			fs.Var(&recorder{name: n, isBool: true}, n, "")
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, nil
	}
	for _, o := range occs {
		if err := o.contradiction(); err != nil {
			return nil, err
		}
	}
	return fs.Args(), nil
}

// multiValued reports a flag that takes a value per occurrence (a slice
// flag, a repeatable generic flag).
func multiValued(f cli.Flag) bool {
	if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
		return true
	}
	if g, ok := f.(*cli.GenericFlag); ok {
		_, ok := g.Value.(repeatable)
		return ok
	}
	return false
}

// takesValue is false for a switch (a bool flag).
func takesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return !ok || d.TakesValue()
}

// contradiction is the usage error of a flag given different values, or nil.
func (o *occurrences) contradiction() error {
	if len(o.vals) < 2 {
		return nil
	}
	// The same value under one name is no contradiction; under two names
	// (-o and --output) urfave/cli refuses it anyway, in words of its own.
	first := normalValue(o.flag, o.vals[0])
	differ := false
	for i, v := range o.vals[1:] {
		differ = differ || normalValue(o.flag, v) != first || o.names[i+1] != o.names[0]
	}
	if !differ {
		return nil
	}
	name := o.flag.Names()[0]
	typed := make([]string, len(o.vals))
	plain := takesValue(o.flag)
	for i, v := range o.vals {
		switch {
		case !takesValue(o.flag) && normalValue(o.flag, v) == "true":
			typed[i] = dashed(o.names[i])
		case !takesValue(o.flag):
			typed[i] = dashed(o.names[i]) + "=" + v
		default:
			typed[i] = dashed(o.names[i]) + " " + v
		}
		plain = plain && o.names[i] == name
	}
	if plain {
		for i, v := range o.vals {
			typed[i] = v
		}
	}
	times := "twice"
	if len(o.vals) > 2 {
		times = strconv.Itoa(len(o.vals)) + " times"
	}
	fix := "it takes one value; give it once"
	if !takesValue(o.flag) {
		fix = "give it once"
	}
	return usagef("%s is given %s, as %s: %s", dashed(name), times, andList(typed), fix)
}

// andList writes "a and b" or "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// normalValue is v as the flag reads it, so that 5m and 300s, or true and
// 1, are the same value; v itself when it does not parse (the app refuses
// it).
func normalValue(f cli.Flag, v string) string {
	switch f.(type) {
	case *cli.BoolFlag:
		if b, err := strconv.ParseBool(v); err == nil {
			return strconv.FormatBool(b)
		}
	case *cli.DurationFlag:
		if d, err := time.ParseDuration(v); err == nil {
			return d.String()
		}
	case *cli.Uint64Flag, *cli.UintFlag:
		if n, err := strconv.ParseUint(v, 0, 64); err == nil {
			return fmt.Sprint(n)
		}
	case *cli.IntFlag, *cli.Int64Flag:
		if n, err := strconv.ParseInt(v, 0, 64); err == nil {
			return fmt.Sprint(n)
		}
	}
	return v
}
