// Package strictyaml checks a YAML document's keys against the Go type it
// decodes into, before it is decoded: keys match case-sensitively, and an
// unknown key is reported with its YAML path and line and the key that
// was probably meant ("etcd.members[0].peerUrl (line 12): unknown key, did
// you mean peerURL?").
//
// It exists because neither decoder says this on its own: sigs.k8s.io/yaml
// (which the rebuild file's json-tagged types need) matches keys
// case-insensitively and reports an unknown field with neither path nor
// line; go.yaml.in/yaml/v3 with KnownFields names the Go type
// ("field namespace not found in type ruleset.Match"). The yaml.v3 node
// API has every key's line, so the check walks the nodes beside the type.
package strictyaml

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/internal/textdist"
)

// Error is an unknown or misspelt key.
type Error struct {
	Path string // YAML path: "etcd.members[0].peerUrl"
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Msg) }

// Errors is every key a document gets wrong, in the document's order, so
// that one run names them all (a file with two typos is not fixed in two
// rounds). errors.As finds each *Error in it.
type Errors []*Error

// maxShown caps the keys Errors names in its message; the rest are counted.
const maxShown = 5

func (es Errors) Error() string {
	parts := make([]string, 0, maxShown+1)
	for i, e := range es {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(es)-maxShown))
			break
		}
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// Unwrap gives errors.Is and errors.As each key's error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Check walks the document in b against the type of v (a pointer to a
// struct), reading field names from struct tag tag ("json" or "yaml"), and
// returns every unknown key and value of the wrong kind: one *Error, or
// Errors when there are several. Syntax errors are left to the decoder.
func Check(b []byte, v any, tag string) error {
	return checker{tag: tag}.check(b, v)
}

// CheckTypes is Check for a file whose unknown keys are ignored (as
// kube-apiserver ignores them in an EncryptionConfiguration) and which is
// decoded without the type's hints (yaml.YAMLToJSON, then JSON): only the
// values' kinds are checked, and a number or true/false where a string goes
// is refused, as the JSON decoder would refuse it without a line.
func CheckTypes(b []byte, v any, tag string) error {
	return checker{tag: tag, typesOnly: true}.check(b, v)
}

// checker walks a document beside a type.
type checker struct {
	tag string
	// typesOnly: unknown keys are not errors, and no string takes a number.
	typesOnly bool
	errs      *Errors
}

func (c checker) check(b []byte, v any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	c.errs = &Errors{}
	c.walk(doc.Content[0], reflect.TypeOf(v), "", c.typesOnly)
	switch len(*c.errs) {
	case 0:
		return nil
	case 1:
		return (*c.errs)[0]
	}
	return *c.errs
}

func (c checker) add(err error) {
	if e, ok := err.(*Error); ok {
		*c.errs = append(*c.errs, e)
	}
}

// Kind returns the document's top-level kind: value ("" if none).
func Kind(b []byte) string {
	var head struct {
		Kind string `yaml:"kind"`
	}
	_ = yaml.Unmarshal(b, &head)
	return head.Kind
}

// walk checks n against t. noHints: n's strings are decoded without
// knowing they are strings (inside a type that decodes itself, or a file
// converted to JSON first), so a number or true/false there is an error.
func (c checker) walk(n *yaml.Node, t reflect.Type, path string, noHints bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if err := checkKind(n, t, path, noHints); err != nil {
		c.add(err)
		return // what is under a value of the wrong kind is not checked
	}
	if err := checkDuplicates(n, path); err != nil {
		c.add(err)
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		c.walkStruct(n, t, path, noHints)
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), noHints)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			c.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), noHints)
		}
	}
}

// checkDuplicates refuses a mapping that gives a key twice, naming the
// key's path and both lines: sigs.k8s.io/yaml says "key already set in
// map", and a decoder into a yaml.Node keeps both silently.
func checkDuplicates(n *yaml.Node, path string) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if first, ok := seen[k.Value]; ok {
			return &Error{Path: join(path, k.Value), Line: k.Line, Msg: fmt.Sprintf("given twice, at lines %d and %d: keep one", first, k.Line)}
		}
		seen[k.Value] = k.Line
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	yamlUnmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
)

// checkKind reports a value of the wrong kind for its key — a list where
// a string goes, a word where a number goes — with the key's path and
// line and what it takes, in the file's terms: the decoders say "cannot
// unmarshal array into Go value of type string" without a line. Types
// that decode themselves are left to their decoders.
func checkKind(n *yaml.Node, t reflect.Type, path string, noHints bool) error {
	if path == "" || n.Kind == yaml.AliasNode || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	pt := reflect.PointerTo(t)
	if t.Kind() == reflect.Interface || pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) ||
		pt.Implements(yamlUnmarshaler) || pt.Implements(keyerType) {
		return nil
	}
	want, ok := parseerr.Form(t), true
	hint := ""
	switch t.Kind() {
	case reflect.String:
		ok = n.Kind == yaml.ScalarNode
		if ok && noHints && (n.Tag == "!!int" || n.Tag == "!!float" || n.Tag == "!!bool") {
			ok, hint = false, fmt.Sprintf(" (quote it: %q)", n.Value)
		}
	case reflect.Bool:
		ok = n.Kind == yaml.ScalarNode && n.Tag == "!!bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err := strconv.ParseInt(n.Value, 0, t.Bits())
		ok = n.Kind == yaml.ScalarNode && n.Tag == "!!int" && err == nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err := strconv.ParseUint(strings.TrimPrefix(n.Value, "+"), 0, t.Bits())
		ok = n.Kind == yaml.ScalarNode && n.Tag == "!!int" && err == nil
	case reflect.Float32, reflect.Float64:
		ok = n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte: base64 text
		}
		ok = n.Kind == yaml.SequenceNode
	case reflect.Struct, reflect.Map:
		ok = n.Kind == yaml.MappingNode
	}
	if ok {
		return nil
	}
	return &Error{Path: path, Line: n.Line, Msg: fmt.Sprintf("takes %s, not %s%s", want, describe(n), hint)}
}

// describe names a YAML value's kind as the user wrote it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	switch n.Tag {
	case "!!int", "!!float":
		return "the number " + v
	case "!!bool":
		return v
	}
	return fmt.Sprintf("%q", v)
}

// Keyer is a type that decodes itself, whose keys are not its fields: it
// names them, with the type each one's value decodes into.
type Keyer interface {
	Keys() map[string]reflect.Type
}

var keyerType = reflect.TypeOf((*Keyer)(nil)).Elem()

func (c checker) walkStruct(n *yaml.Node, t reflect.Type, path string, noHints bool) {
	fields := map[string]reflect.Type{}
	if reflect.PointerTo(t).Implements(keyerType) {
		fields = reflect.New(t).Interface().(Keyer).Keys()
		noHints = true // it decodes its keys itself, from JSON the YAML became without hints
	} else {
		collect(t, c.tag, fields)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ft, ok := fields[k.Value]
		p := join(path, k.Value)
		if !ok && c.typesOnly {
			continue
		}
		if !ok {
			c.add(&Error{Path: p, Line: k.Line, Msg: "unknown key" + suggest(k.Value, fields)})
			continue
		}
		c.walk(n.Content[i+1], ft, p, noHints)
	}
}

// collect adds t's keys: the tag's name, or the field's name without one;
// embedded structs without a name (json) or with ",inline" (yaml) are
// inlined, as the decoders do.
func collect(t reflect.Type, tag string, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		inline := strings.Contains(opts, "inline") || (tag == "json" && f.Anonymous && name == "")
		if inline && ft.Kind() == reflect.Struct {
			collect(ft, tag, out)
			continue
		}
		if name == "" {
			name = f.Name
			if tag == "yaml" {
				name = strings.ToLower(name)
			}
		}
		out[name] = f.Type
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest names the key that was probably meant: the same letters in
// another case, a key it begins or ends, or one within two edits; else
// the valid keys.
func suggest(key string, fields map[string]reflect.Type) string {
	var names []string
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return ", did you mean " + n + "? (keys are case-sensitive)"
		}
	}
	best, bestD := "", -1
	for _, n := range names {
		lk, ln := strings.ToLower(key), strings.ToLower(n)
		d := textdist.Distance(lk, ln)
		// Two edits of a short key reach any other short key ("b" and
		// "on"): a key under five letters gets one.
		edits := 2
		if len(key) < 5 {
			edits = 1
		}
		near := d <= edits || (len(key) > 2 && (strings.HasPrefix(ln, lk) || strings.HasPrefix(lk, ln)))
		if near && (bestD < 0 || d < bestD) {
			best, bestD = n, d
		}
	}
	if best != "" {
		return ", did you mean " + best + "?"
	}
	return " (valid: " + strings.Join(names, ", ") + ")"
}

// Header checks a document's apiVersion and kind against the ones its
// reader takes, and says what to write where they differ ("" when both
// match): "apiVersion and kind are missing: begin the file with ...",
// "kind is ConfigMap, not RuleSet".
func Header(apiVersion, kind, wantAPIVersion, wantKind string) string {
	var missing, wrong []string
	for _, f := range []struct{ key, got, want string }{{"apiVersion", apiVersion, wantAPIVersion}, {"kind", kind, wantKind}} {
		switch {
		case f.got == "":
			missing = append(missing, f.key)
		case f.got != f.want:
			wrong = append(wrong, fmt.Sprintf("%s is %s, not %s", f.key, f.got, f.want))
		}
	}
	if len(missing) == 0 && len(wrong) == 0 {
		return ""
	}
	var parts []string
	switch len(missing) {
	case 1:
		parts = append(parts, missing[0]+" is missing")
	case 2:
		parts = append(parts, "apiVersion and kind are missing")
	}
	parts = append(parts, wrong...)
	return fmt.Sprintf("%s: the file begins with apiVersion: %s and kind: %s", strings.Join(parts, ", "), wantAPIVersion, wantKind)
}
