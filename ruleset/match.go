package ruleset

import (
	"encoding/json"
	"path"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/snapshift/snapshift/wellknown"
)

// Prefix is where the rule's objects are kept.
func (r *Rule) Prefix() string { return wellknown.Prefix(r.Match.Resource) }

// Meta is what a rule matches on besides the object's content.
type Meta struct {
	Namespace, Name string
	Labels          map[string]string
}

// Matches reports whether the rule selects the object: its namespace, name
// and labels, and the where conditions on doc, the object's JSON form.
func (r *Rule) Matches(m Meta, doc any) bool {
	if len(r.Match.Namespaces) > 0 && !anyGlob(r.Match.Namespaces, m.Namespace) {
		return false
	}
	if len(r.Match.Names) > 0 && !anyGlob(r.Match.Names, m.Name) {
		return false
	}
	if r.selector != nil && !r.selector.Matches(labels.Set(m.Labels)) {
		return false
	}
	for _, c := range r.Match.Where {
		v, ok := get(doc, c.Path)
		if !ok || !equalJSON(v, c.Equals) {
			return false
		}
	}
	return true
}

func anyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// equalJSON compares two values by their JSON form (a YAML 1 equals a
// JSON 1.0 number of the object).
func equalJSON(a, b any) bool {
	na, erra := normalize(a)
	nb, errb := normalize(b)
	return erra == nil && errb == nil && reflect.DeepEqual(na, nb)
}

func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// MatchesMeta reports whether the rule selects an object by namespace,
// name and labels alone (verify, on the output, where the where
// conditions, stated on the input, no longer apply).
func (r *Rule) MatchesMeta(m Meta) bool {
	c := *r
	c.Match.Where = nil
	return c.Matches(m, nil)
}

// MayMatchKey reports whether the object at key (under the rule's prefix)
// can match at all, judged by the namespace and name in the key alone:
// objects that cannot are never decoded (nor decrypted).
func (r *Rule) MayMatchKey(key string) bool {
	rest, ok := strings.CutPrefix(key, r.Prefix())
	if !ok {
		return false
	}
	ns, name, namespaced := strings.Cut(rest, "/")
	if !namespaced {
		ns, name = "", rest
	}
	if len(r.Match.Namespaces) > 0 && !anyGlob(r.Match.Namespaces, ns) {
		return false
	}
	return len(r.Match.Names) == 0 || anyGlob(r.Match.Names, name)
}
