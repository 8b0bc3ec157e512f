package ruleset

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/snapshift/snapshift/wellknown"
)

// Prefixes are where the rule's objects are kept, one per resource.
func (r *Rule) Prefixes() []string {
	var out []string
	for _, s := range r.Match.stored {
		out = append(out, wellknown.Prefix(s))
	}
	return out
}

// Resources are the resources the rule names, as kubectl api-resources
// prints them.
func (r *Rule) Resources() []string { return slices.Clone(r.Match.names) }

// Custom reports whether the rule names a resource that is not built in
// (whose existence only the snapshot can tell).
func (r *Rule) Custom() bool {
	_, ok := wellknown.LookupResource(r.Match.Resource)
	return !ok && r.Match.Resource != Workloads
}

// Workloads is the match.resource that stands for every resource whose
// objects hold a pod spec (wellknown.Workloads).
const Workloads = "workloads"

// resolve finds the resources Resource names: a built-in one by any name
// kubectl accepts, workloads, or a custom resource as plural.group. A name
// that is neither (a typo, a built-in group's unknown resource) is an
// error with the nearest known name.
func (m *Match) resolve() error {
	if m.Resource == Workloads {
		m.names, m.stored = nil, nil
		for _, n := range wellknown.Workloads {
			r, _ := wellknown.LookupResource(n)
			m.names, m.stored = append(m.names, r.Name), append(m.stored, r.Stored())
		}
		return nil
	}
	r, err := wellknown.ResolveResource(m.Resource)
	if _, group, _ := strings.Cut(m.Resource, "."); err == nil && r.Kind == "" && clientgoscheme.Scheme.IsGroupRegistered(group) {
		err = fmt.Errorf("%q is no resource kube-apiserver serves%s", m.Resource, wellknown.DidYouMean(m.Resource))
	}
	if err != nil {
		return fmt.Errorf("match.resource %w; or workloads for every resource with a pod spec", err)
	}
	m.names, m.stored = []string{r.Name}, []string{r.Stored()}
	return nil
}

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
		if !c.holds(doc) {
			return false
		}
	}
	return true
}

// holds reports whether the value at the condition's path equals its
// value; for a pattern, whether one of the places it names does.
func (c Condition) holds(doc any) bool {
	for _, p := range Expand(doc, c.Path) {
		if v, ok := get(doc, p); ok && equalJSON(v, c.Equals) {
			return true
		}
	}
	return false
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
	var rest string
	ok := false
	for _, p := range r.Prefixes() {
		if rest, ok = strings.CutPrefix(key, p); ok {
			break
		}
	}
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
