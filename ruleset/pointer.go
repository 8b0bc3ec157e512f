package ruleset

import (
	"fmt"
	"slices"
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

// Wildcards and aliases (docs/RULES.md "Wildcards and aliases"): a pointer
// pattern is an RFC 6901 pointer in which a "*" token stands for any array
// index or object key, or which starts with an alias for the pod spec of a
// workload, resolved per object from its kind:
//
//	@podSpec      the pod spec: /spec (Pod), /spec/template/spec
//	              (Deployment, DaemonSet, StatefulSet, ReplicaSet, Job,
//	              ReplicationController), /template/spec (PodTemplate),
//	              /spec/jobTemplate/spec/template/spec (CronJob)
//	@containers   the pod spec's containers, initContainers and
//	              ephemeralContainers lists
const (
	wildcard        = "*"
	aliasPodSpec    = "@podSpec"
	aliasContainers = "@containers"
)

// podSpecOf is where each workload kind keeps its pod spec.
var podSpecOf = map[string]string{
	"Pod":                   "/spec",
	"PodTemplate":           "/template/spec",
	"Deployment":            "/spec/template/spec",
	"DaemonSet":             "/spec/template/spec",
	"StatefulSet":           "/spec/template/spec",
	"ReplicaSet":            "/spec/template/spec",
	"ReplicationController": "/spec/template/spec",
	"Job":                   "/spec/template/spec",
	"CronJob":               "/spec/jobTemplate/spec/template/spec",
}

// containerLists are the pod spec's lists of containers.
var containerLists = []string{"containers", "initContainers", "ephemeralContainers"}

// checkPattern is checkPointer for a pointer that may hold wildcards or
// start with an alias.
func checkPattern(p string) error {
	for _, a := range []string{aliasPodSpec, aliasContainers} {
		if rest, ok := strings.CutPrefix(p, a); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			return checkPointer(rest)
		}
	}
	if strings.HasPrefix(p, "@") {
		return fmt.Errorf("JSON pointer %q: the aliases are %s and %s", p, aliasPodSpec, aliasContainers)
	}
	return checkPointer(p)
}

// IsPattern reports whether p holds a wildcard or an alias: it names every
// place in an object that fits, none of them required to exist.
func IsPattern(p string) bool {
	return strings.HasPrefix(p, "@") || slices.Contains(tokens(p), wildcard)
}

// Expand returns the concrete pointers p names in doc, in document order
// (object keys sorted): p itself when it is no pattern (whether or not doc
// has something there), else every existing place that fits.
func Expand(doc any, p string) []string {
	if !IsPattern(p) {
		return []string{p}
	}
	var bases []string
	switch {
	case strings.HasPrefix(p, aliasContainers):
		spec, ok := podSpecOf[kindOf(doc)]
		if !ok {
			return nil
		}
		for _, l := range containerLists {
			bases = append(bases, spec+"/"+l)
		}
		p = strings.TrimPrefix(p, aliasContainers)
	case strings.HasPrefix(p, aliasPodSpec):
		spec, ok := podSpecOf[kindOf(doc)]
		if !ok {
			return nil
		}
		bases = []string{spec}
		p = strings.TrimPrefix(p, aliasPodSpec)
	default:
		bases = []string{""}
	}
	var out []string
	for _, b := range bases {
		v, ok := get(doc, b)
		if ok {
			expandAt(v, b, tokens(p), &out)
		}
	}
	return out
}

func kindOf(doc any) string {
	s, _ := at(doc, "/kind").(string)
	return s
}

// expandAt appends the pointers under prefix (whose value is v) that fit ts.
func expandAt(v any, prefix string, ts []string, out *[]string) {
	if len(ts) == 0 {
		*out = append(*out, prefix)
		return
	}
	t, rest := ts[0], ts[1:]
	switch c := v.(type) {
	case map[string]any:
		if t != wildcard {
			if x, ok := c[t]; ok {
				expandAt(x, prefix+"/"+escape(t), rest, out)
			}
			return
		}
		for _, k := range unionKeys(c, nil) {
			expandAt(c[k], prefix+"/"+escape(k), rest, out)
		}
	case []any:
		for i, x := range c {
			if s := strconv.Itoa(i); t == wildcard || t == s {
				expandAt(x, prefix+"/"+s, rest, out)
			}
		}
	}
}
