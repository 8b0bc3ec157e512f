// Package parseerr says a decoder's or parser's error in the words of the file or flag the user
// wrote, with the form the value takes (issue 52 item 3): "clusters: takes a list, not a
// number" for encoding/json's "cannot unmarshal number into Go struct field Config.clusters of
// type []v1.NamedCluster", "line 4: not valid YAML: a tab indents the line (YAML indents with
// spaces)" for sigs.k8s.io/yaml's "error converting YAML to JSON: yaml: line 4: found a tab
// character that violates indentation", `"yes" is not true or false` for strconv's
// `strconv.ParseBool: parsing "yes": invalid syntax`.
//
// Explain works on the message text as well as on the error types, because the decoders that
// matter wrap with %v or have private error types of their own (sigs.k8s.io/json's
// UnmarshalTypeError is not encoding/json's). Form is the one list of how a value of each Go
// type is described to a user, which internal/strictyaml and the CLI's flag errors share.
package parseerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// The forms a value takes, as a user is told them.
const (
	String   = "a string"
	Bool     = "true or false"
	Int      = "a whole number"
	Uint     = "a whole number, 0 or more"
	Float    = "a number"
	List     = "a list"
	Mapping  = "a mapping (key: value)"
	Duration = "a duration such as 30s, 5m or 1h"
	CIDR     = "a CIDR such as 10.0.0.0/16"
	IP       = "an IP address such as 10.0.0.1"
	URL      = "a URL such as https://10.0.0.1:2379"
)

var durationType = reflect.TypeOf(time.Duration(0))

// Form is how a value of type t is described: "a whole number", "a list".
func Form(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		return Duration
	}
	switch t.Kind() {
	case reflect.String:
		return String
	case reflect.Bool:
		return Bool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Int
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return Uint
	case reflect.Float32, reflect.Float64:
		return Float
	case reflect.Slice, reflect.Array:
		return List
	}
	return Mapping
}

// goTypeForm is Form for a Go type as a message spells it ("[]v1.Container", "int32").
func goTypeForm(name string) string {
	switch {
	case strings.HasPrefix(name, "[]") || strings.HasPrefix(name, "["):
		return List
	case strings.HasPrefix(name, "map[") || strings.HasPrefix(name, "struct"):
		return Mapping
	case name == "time.Duration":
		return Duration
	case name == "string":
		return String
	case name == "bool":
		return Bool
	case strings.HasPrefix(name, "uint"):
		return Uint
	case strings.HasPrefix(name, "int"):
		return Int
	case strings.HasPrefix(name, "float"):
		return Float
	}
	return Mapping // a named struct type: a mapping in the file
}

// goType is the Go type name s begins with: up to a space outside braces
// ("[]v1.Container", "struct { Name string "json:\"name\"" }").
func goType(s string) string {
	depth := 0
	for i, r := range s {
		switch {
		case r == '{':
			depth++
		case r == '}':
			depth--
		case r == ' ' && depth <= 0 && !strings.HasSuffix(s[:i], "struct"):
			return s[:i]
		}
	}
	return s
}

// JSONValue is what a JSON type error's value was ("number -1", "array"),
// as the user wrote it ("the number -1", "a list").
func JSONValue(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ")
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "a mapping"
	}
	return v
}

// yamlValue is what a YAML type error's value was: its tag and text.
func yamlValue(tag, text string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	case "int", "float":
		return "the number " + text
	case "bool":
		return text
	case "null":
		return "nothing"
	}
	return fmt.Sprintf("%q", text)
}

// Error is an explained error: the user's message, and the decoder's error under it (for
// errors.Is and errors.As).
type Error struct {
	msg string
	err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

var (
	// encoding/json (and sigs.k8s.io/json): "json: cannot unmarshal number into Go struct field
	// Config.clusters of type []v1.NamedCluster", "... into Go value of type string".
	// The type is read by goType: an anonymous struct's has spaces.
	jsonType = regexp.MustCompile(`json: cannot unmarshal (\w+(?: -?[\w.+-]+)?) into Go (?:struct field (\S*) |value )of type `)
	// go.yaml.in/yaml (v2 and v3): "yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `x` into int".
	yamlTypes = regexp.MustCompile("(?s)yaml: unmarshal errors:\n(.*)")
	yamlType  = regexp.MustCompile("line (\\d+): cannot unmarshal !!(\\w+)(?: `(.*?)`)? into (\\S+)")
	// yaml.v3's KnownFields: "line 5: field namespace not found in type ruleset.Match".
	yamlField = regexp.MustCompile(`line (\d+): field (\S+) not found in type \S+`)
	// yaml.v2's duplicate key: `line 13: key "podSubnet" already set in map`.
	yamlDup = regexp.MustCompile(`line (\d+): key "?([^"]+?)"? already set in map`)
	// "yaml: line 4: found a tab character that violates indentation", "yaml: control characters are not allowed".
	yamlSyntax = regexp.MustCompile(`(^|: )yaml: (?:line (\d+): )?(.+)`)
	// time.ParseDuration: `time: invalid duration "soon"`, `time: unknown unit "y" in duration "1y"`.
	timeDuration = regexp.MustCompile(`time: (?:invalid duration|unknown unit "[^"]*" in duration|missing unit in duration) "([^"]*)"`)
	// strconv: `strconv.ParseBool: parsing "yes": invalid syntax`.
	strconvErr = regexp.MustCompile(`strconv\.(\w+): parsing "((?:[^"\\]|\\.)*)": (invalid syntax|value out of range|invalid base \d+|invalid bit size \d+)`)
	// net.ParseCIDR: "invalid CIDR address: x"; net/netip: `netip.ParsePrefix("x"): no '/'`, `ParseAddr("x"): unable to parse IP`.
	netCIDR    = regexp.MustCompile(`invalid CIDR address: (\S*)`)
	netipPfx   = regexp.MustCompile(`netip\.ParsePrefix\("((?:[^"\\]|\\.)*)"\): [^;()]*`)
	netipAddr  = regexp.MustCompile(`(?:netip\.)?ParseAddr\("((?:[^"\\]|\\.)*)"\): [^;()]*`)
	netIP      = regexp.MustCompile(`invalid IP address: (\S*)`)
	urlParse   = regexp.MustCompile(`parse "((?:[^"\\]|\\.)*)": [^;()]*`)
	jsonField  = regexp.MustCompile(`json: unknown field "([^"]*)"`)
	jsonSyntax = regexp.MustCompile(`invalid character ('(?:[^'\\]|\\.)*') [a-z :]+`)
)

// wrappers are sigs.k8s.io/yaml's and encoding/json's own prefixes, which say nothing to a user.
var wrappers = strings.NewReplacer("error converting YAML to JSON: ", "", "error unmarshaling JSON: ", "", "while decoding JSON: ", "")

// Explain returns err with every decoder's and parser's wording in its message replaced by what
// the value should have been, or err itself when there is none. The rest of the message (the
// file, the key the caller named) is kept.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	msg := Message(err)
	if msg == err.Error() {
		return err
	}
	return &Error{msg: msg, err: err}
}

// Message is Explain's message.
func Message(err error) string {
	msg := err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		msg = strings.Replace(msg, se.Error(), fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, jsonSyntaxText(se.Error())), 1)
	}
	return Text(msg)
}

// Text is Message for a message alone: the CLI's last word on any error,
// whatever library it came from.
func Text(msg string) string { return explainText(msg) }

func jsonSyntaxText(s string) string {
	if m := jsonSyntax.FindStringSubmatch(s); m != nil {
		return "unexpected character " + m[1]
	}
	return s
}

func explainText(msg string) string {
	msg = wrappers.Replace(msg)
	for {
		m := jsonType.FindStringSubmatchIndex(msg)
		if m == nil {
			break
		}
		typ := goType(msg[m[1]:])
		field := ""
		if m[4] >= 0 {
			field = msg[m[4]:m[5]]
		}
		if _, rest, ok := strings.Cut(field, "."); ok {
			field = rest // Go's struct name first: "Config.clusters"
		}
		out := "takes " + goTypeForm(typ) + ", not " + JSONValue(msg[m[2]:m[3]])
		if field != "" {
			out = field + ": " + out
		}
		msg = msg[:m[0]] + out + msg[m[1]+len(typ):]
	}
	if m := yamlTypes.FindStringSubmatchIndex(msg); m != nil {
		var parts []string
		for _, line := range strings.Split(msg[m[2]:m[3]], "\n") {
			if t := yamlType.FindStringSubmatch(line); t != nil {
				parts = append(parts, fmt.Sprintf("line %s: takes %s, not %s", t[1], goTypeForm(t[4]), yamlValue(t[2], t[3])))
			} else if t := yamlField.FindStringSubmatch(line); t != nil {
				parts = append(parts, fmt.Sprintf("line %s: unknown key %s", t[1], t[2]))
			} else if t := yamlDup.FindStringSubmatch(line); t != nil {
				parts = append(parts, fmt.Sprintf("line %s: %s is given twice: keep one", t[1], t[2]))
			}
		}
		if len(parts) > 0 {
			msg = msg[:m[0]] + strings.Join(parts, "; ")
		}
	}
	msg = yamlSyntax.ReplaceAllStringFunc(msg, func(s string) string {
		m := yamlSyntax.FindStringSubmatch(s)
		reason, rest := m[3], ""
		if i := strings.Index(reason, " ("); i >= 0 {
			reason, rest = reason[:i], reason[i:] // the caller's words after the library's
		}
		reason = yamlReason(reason) + rest
		if m[2] != "" {
			return m[1] + "line " + m[2] + ": not valid YAML: " + reason
		}
		return m[1] + "not valid YAML: " + reason
	})
	msg = timeDuration.ReplaceAllString(msg, `"$1" is not `+Duration)
	msg = strconvErr.ReplaceAllStringFunc(msg, func(s string) string {
		m := strconvErr.FindStringSubmatch(s)
		form := map[string]string{"ParseBool": Bool, "ParseInt": Int, "Atoi": Int, "ParseUint": Uint, "ParseFloat": Float}[m[1]]
		if form == "" {
			form = Float
		}
		if m[3] == "value out of range" {
			return fmt.Sprintf("%q is out of range: give %s that fits", m[2], form)
		}
		return fmt.Sprintf("%q is not %s", m[2], form)
	})
	msg = netCIDR.ReplaceAllString(msg, `"$1" is not `+CIDR)
	msg = netipPfx.ReplaceAllString(msg, `"$1" is not `+CIDR)
	msg = netipAddr.ReplaceAllString(msg, `"$1" is not `+IP)
	msg = netIP.ReplaceAllString(msg, `"$1" is not `+IP)
	msg = urlParse.ReplaceAllString(msg, `"$1" is not `+URL)
	msg = jsonField.ReplaceAllString(msg, `unknown key "$1"`)
	msg = strings.ReplaceAll(msg, "unexpected end of JSON input", "the JSON ends too early (is the file cut short?)")
	if !strings.Contains(msg, "not valid JSON") {
		msg = jsonSyntax.ReplaceAllString(msg, "not valid JSON: unexpected character $1")
	}
	return msg
}

// yamlReason is libyaml's reason in a user's words where it names a usual mistake.
func yamlReason(r string) string {
	switch {
	case strings.Contains(r, "found a tab character"):
		return r + " (YAML indents with spaces, never tabs)"
	case strings.Contains(r, "found character that cannot start any token"):
		return r + " (a tab where YAML wants spaces, or a value starting with @ or ` that needs quotes)"
	case strings.Contains(r, "mapping values are not allowed in this context"):
		return r + " (a value holding \": \" needs quotes)"
	}
	return r
}
