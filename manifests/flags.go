package manifests

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// flagRef locates one occurrence of a flag in a container's command or args.
type flagRef struct {
	name   string
	inArgs bool   // in Args, else in Command
	at     int    // index of the "--name..." entry
	dashes string // "--" or "-" (etcd's Go flag package takes both)
	sep    bool   // "--name", "value": the value is entry at+1
	bare   bool   // "--name" without a value
	value  string
}

// cmdLine edits the flags of one container in place. Flags are read from
// Command (after the binary) and Args, in the two spellings pflag and Go's
// flag package accept: "--name=value" and "--name", "value". A flag
// followed by an entry not starting with "-" is taken as the separate form:
// the control-plane binaries take no positional arguments.
type cmdLine struct {
	c         *corev1.Container
	component string
}

func (l cmdLine) list(inArgs bool) []string {
	if inArgs {
		return l.c.Args
	}
	return l.c.Command
}

// check refuses a command run through a shell, whose flags are inside one
// string.
func (l cmdLine) check() error {
	if len(l.c.Command) > 0 {
		base := path.Base(l.c.Command[0])
		if (base == "sh" || base == "bash" || base == "ash" || base == "dash") &&
			(slices.Contains(l.c.Command, "-c") || slices.Contains(l.c.Args, "-c")) {
			return fmt.Errorf("%s: the container runs its command through %s -c; edit its flags by hand", l.component, base)
		}
	}
	if len(l.c.Command) == 0 && len(l.c.Args) == 0 {
		return fmt.Errorf("%s: the container has no command or args (its flags are in the image?); edit it by hand", l.component)
	}
	return nil
}

func (l cmdLine) parse() []flagRef {
	var refs []flagRef
	for _, inArgs := range []bool{false, true} {
		list := l.list(inArgs)
		for i := 0; i < len(list); i++ {
			if i == 0 && !inArgs && !strings.HasPrefix(list[0], "-") {
				continue // the binary
			}
			dashes, name, value, hasValue := splitFlag(list[i])
			if name == "" {
				continue
			}
			r := flagRef{name: name, inArgs: inArgs, at: i, dashes: dashes, value: value}
			switch {
			case hasValue:
			case i+1 < len(list) && !strings.HasPrefix(list[i+1], "-"):
				r.sep, r.value = true, list[i+1]
				i++
			default:
				r.bare = true
			}
			refs = append(refs, r)
		}
	}
	return refs
}

// splitFlag splits "--name=value", "--name", "-name=value" or "-name";
// name is "" for an entry that is not a flag.
func splitFlag(s string) (dashes, name, value string, hasValue bool) {
	switch {
	case strings.HasPrefix(s, "--"):
		dashes = "--"
	case strings.HasPrefix(s, "-"):
		dashes = "-"
	default:
		return "", "", "", false
	}
	rest := s[len(dashes):]
	name, value, hasValue = strings.Cut(rest, "=")
	if name == "" || !(name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return "", "", "", false
	}
	return dashes, name, value, hasValue
}

// find returns every occurrence of flag name.
func (l cmdLine) find(name string) []flagRef {
	var out []flagRef
	for _, r := range l.parse() {
		if r.name == name {
			out = append(out, r)
		}
	}
	return out
}

// get returns the value of flag name and whether it is present. A flag
// given twice is an error: which one the binary uses depends on the flag's
// type, so snapshift does not guess. A bare boolean flag reads as "true".
func (l cmdLine) get(name string) (string, bool, error) {
	refs := l.find(name)
	switch len(refs) {
	case 0:
		return "", false, nil
	case 1:
		if refs[0].bare {
			return "true", true, nil
		}
		return refs[0].value, true, nil
	}
	return "", false, fmt.Errorf("%s: --%s is given %d times; leave one and run again", l.component, name, len(refs))
}

// set replaces the value of flag name, keeping its spelling and place. It
// reports the old value and whether the flag was there; an absent flag is
// not added.
func (l cmdLine) set(name, value string) (old string, found bool, err error) {
	if err := l.check(); err != nil {
		return "", false, err
	}
	old, found, err = l.get(name)
	if err != nil || !found {
		return old, found, err
	}
	r := l.find(name)[0]
	list := l.list(r.inArgs)
	switch {
	case r.sep:
		list[r.at+1] = value
	case r.bare:
		return old, true, fmt.Errorf("%s: --%s has no value; edit it by hand", l.component, name)
	default:
		list[r.at] = r.dashes + name + "=" + value
	}
	return old, true, nil
}

// add appends flag name at the end of the list that holds the flags (Args
// when it has any, else Command), in the spelling most of the valued flags
// already use ("--name=value" when in doubt).
func (l cmdLine) add(name, value string) error {
	if err := l.check(); err != nil {
		return err
	}
	refs := l.parse()
	inArgs := len(l.c.Args) > 0 && (len(refs) == 0 || refs[len(refs)-1].inArgs)
	sep, eq := 0, 0
	for _, r := range refs {
		switch {
		case r.sep:
			sep++
		case !r.bare && r.value != "true" && r.value != "false":
			eq++
		}
	}
	entries := []string{"--" + name + "=" + value}
	if sep > eq {
		entries = []string{"--" + name, value}
	}
	if inArgs {
		l.c.Args = append(l.c.Args, entries...)
	} else {
		l.c.Command = append(l.c.Command, entries...)
	}
	return nil
}
