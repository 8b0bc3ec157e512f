package option

import (
	"fmt"
	"strings"
)

// Decl declares one option once: the Go fields an *Error names it by, the
// command-line flag that sets it and the rebuild-file key that sets it.
// Front-ends derive from the declarations how they name an option in a
// message (the CLI's "--out", the rebuild command's "etcd.members"), and
// tests derive from them that every flag and every key is declared.
//
// The rules' options are declared in the rules' own files
// (rules.Entry.Options, with their help, default and whether verify checks
// them); a Table declares the options outside the rules (Library).
type Decl struct {
	// Fields are the Go fields of the library configs this option sets,
	// as *Error names them (e.g. "EtcdMembers" of pki.Config and
	// "EtcdMember" of manifests.GenerateConfig are both --etcd-member).
	// Empty for an option only the command line has (--output, --quiet).
	Fields []string
	// Flag is the flag without its dashes ("skip-hash-check"); empty
	// when no flag sets the option.
	Flag string
	// Key is the path in a rebuild file ("etcd.members[].peerURL", or a
	// phrase such as "an empty pki.source"); empty when the file does not
	// set it. One key may feed several options (etcd.members is both
	// --initial-cluster and --etcd-member).
	Key string
}

// Table is a list of declarations.
type Table []Decl

// Lookup returns the declaration of a Go field.
func (t Table) Lookup(field string) (Decl, bool) {
	for _, d := range t {
		for _, f := range d.Fields {
			if f == field {
				return d, true
			}
		}
	}
	return Decl{}, false
}

// FlagName renders field as its flag ("--out"); ok is false when no flag
// sets it.
func (t Table) FlagName(field string) (string, bool) {
	if d, ok := t.Lookup(field); ok && d.Flag != "" {
		return "--" + d.Flag, true
	}
	return "", false
}

// KeyName renders field as its rebuild-file key; ok is false when the file
// does not set it.
func (t Table) KeyName(field string) (string, bool) {
	if d, ok := t.Lookup(field); ok && d.Key != "" {
		return d.Key, true
	}
	return "", false
}

// HasFlag reports whether a declaration has this flag (without dashes).
func (t Table) HasFlag(flag string) bool {
	for _, d := range t {
		if d.Flag == flag {
			return true
		}
	}
	return false
}

// Check refuses a table in which a Go field or a flag is declared twice,
// or a declaration that names neither a flag nor a key.
func (t Table) Check() error {
	fields, flags := map[string]int{}, map[string]int{}
	var errs []string
	for i, d := range t {
		if d.Flag == "" && d.Key == "" {
			errs = append(errs, fmt.Sprintf("declaration %d (%v) has neither a flag nor a key", i, d.Fields))
		}
		for _, f := range d.Fields {
			if j, ok := fields[f]; ok {
				errs = append(errs, fmt.Sprintf("field %s is declared twice (declarations %d and %d)", f, j, i))
			}
			fields[f] = i
		}
		if d.Flag == "" {
			continue
		}
		if j, ok := flags[d.Flag]; ok {
			errs = append(errs, fmt.Sprintf("flag --%s is declared twice (declarations %d and %d)", d.Flag, j, i))
		}
		flags[d.Flag] = i
	}
	if len(errs) > 0 {
		return fmt.Errorf("option table: %s", strings.Join(errs, "; "))
	}
	return nil
}
