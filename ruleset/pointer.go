package ruleset

import (
	"fmt"
	"strconv"
	"strings"
)

// checkPointer reports whether p is an RFC 6901 JSON pointer ("" or
// "/a/b", "~" only as "~0" or "~1").
func checkPointer(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("JSON pointer %q must start with /", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("JSON pointer %q: ~ must be followed by 0 or 1", p)
		}
	}
	return nil
}

// tokens splits a valid pointer into unescaped reference tokens.
func tokens(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// escape makes one reference token of s.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// get returns the value at pointer p in doc.
func get(doc any, p string) (any, bool) {
	cur := doc
	for _, t := range tokens(p) {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// set replaces the existing value at pointer p (not the root) in doc.
func set(doc any, p string, v any) bool {
	ts := tokens(p)
	if len(ts) == 0 {
		return false
	}
	parentPtr := ""
	if len(ts) > 1 {
		parentPtr = "/" + strings.Join(escapeAll(ts[:len(ts)-1]), "/")
	}
	parent, ok := get(doc, parentPtr)
	if !ok {
		return false
	}
	last := ts[len(ts)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[last]; !ok {
			return false
		}
		c[last] = v
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return false
		}
		c[i] = v
	default:
		return false
	}
	return true
}

func escapeAll(ts []string) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = escape(t)
	}
	return out
}
