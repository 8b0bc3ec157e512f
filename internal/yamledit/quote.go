package yamledit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Quote writes v as a one-line YAML scalar that reads back as the string
// v in a block collection: in single or double quotes when style has
// them; else plain when yaml.v3 writes v plain; else in double quotes.
// A value with a line break or a character YAML allows only escaped is
// always double-quoted. Double quotes escape as JSON does, so a JSON
// document stays JSON.
func Quote(v string, style yaml.Style) (string, error) {
	if !utf8.ValidString(v) {
		return "", errors.New("yamledit: the value is not valid UTF-8")
	}
	switch {
	case style&yaml.DoubleQuotedStyle != 0 || strings.IndexFunc(v, unquotable) >= 0:
		return doubleQuote(v), nil
	case style&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'", nil
	}
	if out, err := yaml.Marshal(v); err == nil && strings.TrimSuffix(string(out), "\n") == v && v != "" && plainString(v, v) {
		return v, nil
	}
	return doubleQuote(v), nil
}

// plainString reports whether doc holds one plain scalar, v, that
// resolves to a string (yaml.v3 writes "<<" plain, but reads it as a merge
// key).
func plainString(doc, v string) bool {
	var root yaml.Node
	if yaml.Unmarshal([]byte(doc), &root) != nil || len(root.Content) != 1 {
		return false
	}
	s := root.Content[0]
	switch {
	case s.Kind == yaml.SequenceNode && len(s.Content) >= 1:
		s = s.Content[0]
	case s.Kind == yaml.MappingNode && len(s.Content) >= 2:
		s = s.Content[1]
	}
	return s.Kind == yaml.ScalarNode && s.Style == 0 && s.Value == v && s.ShortTag() == "!!str"
}

// unquotable reports whether r cannot stand unescaped in a one-line quoted
// scalar: a line break, or a character outside YAML's printable set (or a
// byte order mark).
func unquotable(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0xfeff:
		return true
	case r < 0x7f, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000:
		return false
	}
	return true
}

// doubleQuote writes v in double quotes with JSON's escapes, which YAML
// reads too.
func doubleQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if unquotable(r) {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// plainInFlow reports whether v, written plain, reads back as the string v
// inside a flow sequence and a flow mapping, followed by either a closing
// bracket or a comma.
func plainInFlow(v string) bool {
	for _, doc := range []string{"[" + v + "]", "[" + v + ",x]", "{k: " + v + "}", "{k: " + v + ",x: y}"} {
		if !plainString(doc, v) {
			return false
		}
	}
	return true
}
