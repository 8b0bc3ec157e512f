package rules

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameUserRules is the rule that runs the user's rules files.
const NameUserRules = "user-rules"

// UserRulesOptions are the user-rules rule's options.
type UserRulesOptions struct {
	// Rules are rules files (docs/RULES.md), applied in order.
	Rules []string `json:"rules,omitempty"`
}

var userRulesEntry = Entry{
	Name: NameUserRules,
	Summary: "run the user's declarative rules files (--rules): match objects on their input form, map their addresses " +
		"with the run's mapping, JSON Patch / merge patch them, or delete them, after the built-in rules",
	Touches: []string{"the objects the rules files match (docs/RULES.md)"},
	// It reads the service and pod plans for the run's mapping, and edits
	// on top of every built-in rule's result: the registry lists it last.
	After:   []string{NameServiceCIDR, NamePodCIDR},
	Enabled: func(o *Options) bool { return len(o.Rules) > 0 },
	Validate: func(o *Options) error {
		if len(o.Rules) == 0 {
			return nil
		}
		if _, err := ruleset.Load(o.Rules); err != nil {
			return option.Errorf("Rules", "{}: %w", err)
		}
		return nil
	},
	New: func(o Options, p *Plan) transform.Rule {
		files, err := ruleset.Load(o.Rules)
		return &UserRules{files: files, loadErr: err, plan: p}
	},
	Example: func() Options {
		return Options{UserRulesOptions: UserRulesOptions{Rules: []string{"../testdata/rules/example.yaml"}}}
	},
	Options: func(o *Options) []Option {
		return []Option{{Field: "Rules", Name: "rules", CLI: true, Verify: true, Config: "rules", Value: &o.Rules,
			Usage: "a rules file (docs/RULES.md) whose rules run after the built-in ones (repeatable); verify checks its invariants"}}
	},
}

// UserRules runs the rules of the user's rules files. Conditions are
// evaluated in Prepare on the objects as the input holds them; Apply edits
// the matched objects as they reach it, after the built-in rules.
type UserRules struct {
	files   []*ruleset.File
	loadErr error
	plan    *Plan
	earlier []transform.Rule // the rules before this one in the run

	codec   *codec.Codec
	mapping *ruleset.Mapping
	matched map[string][]*ruleset.Rule // key -> the rules that match it, in file order
	orig    map[string]any             // key -> the object's JSON form in the input
	stats   map[*ruleset.Rule]*userRuleStats
	notes   []string

	unreadable int // values no rule selects that could not be decrypted
}

type userRuleStats struct {
	matched, changed, deleted, skipped int
	replaced                           int // text replacements (replace)
	acts                               int // objects the rule changes or deletes in Prepare
}

func (r *UserRules) Name() string { return NameUserRules }

// Prefixes are the resources the rules name.
func (r *UserRules) Prefixes() []string {
	var out []string
	for _, rule := range r.rules() {
		for _, p := range rule.Prefixes() {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Lists: Prepare lists every resource a rule names.
func (r *UserRules) Lists() []string { return r.Prefixes() }

// Unreadable: a value that cannot be decrypted here (KMS) is copied as
// stored unless a rule matched it, which Prepare could only do by reading
// it: a rule's namespaces and names keep it from reading the others.
func (r *UserRules) Unreadable(key string, _ error) bool {
	_, matched := r.matched[key]
	if !matched {
		r.unreadable++
	}
	return !matched
}

func (r *UserRules) setEarlier(rs []transform.Rule) { r.earlier = rs }

func (r *UserRules) rules() []*ruleset.Rule {
	var out []*ruleset.Rule
	for _, f := range r.files {
		out = append(out, f.Rules...)
	}
	return out
}

// Notes are each rule's counts, a rule that matched nothing, and the
// optional rules that did not apply.
func (r *UserRules) Notes() []string {
	out := slices.Clone(r.notes)
	if r.unreadable > 0 {
		out = append(out, fmt.Sprintf("%d values under the rules' resources could not be decrypted here (KMS) and were copied as stored: no rule selects them by namespace and name", r.unreadable))
	}
	for _, rule := range r.rules() {
		s := r.stats[rule]
		if s == nil || s.matched == 0 {
			continue
		}
		line := fmt.Sprintf("%s: %d matched, %d changed, %d deleted", rule, s.matched, s.changed, s.deleted)
		if len(rule.Replace) > 0 {
			line += fmt.Sprintf(", %d text replacements", s.replaced)
		}
		if s.skipped > 0 {
			line += fmt.Sprintf(", %d skipped (optional, did not apply)", s.skipped)
		}
		out = append(out, line)
	}
	return out
}

// Prepare builds the run's mapping, matches every rule on the input and
// tries it on each object it matches, refusing before anything is written.
func (r *UserRules) Prepare(ctx context.Context, v *state.View) error {
	if r.loadErr != nil {
		return option.Errorf("Rules", "{}: %w", r.loadErr)
	}
	m, err := r.buildMapping()
	if err != nil {
		return err
	}
	r.mapping, r.codec = m, v.Codec()
	r.matched, r.orig, r.stats = map[string][]*ruleset.Rule{}, map[string]any{}, map[*ruleset.Rule]*userRuleStats{}
	for _, rule := range r.rules() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.match(v, rule); err != nil {
			return err
		}
		if err := r.expect(v, rule); err != nil {
			return err
		}
	}
	return r.checkDeletes()
}

// expect refuses a custom resource the snapshot has no object of (a typo
// the resource table cannot catch) unless the rule is optional, and a
// rule that acts on fewer objects than its expect.min; a rule that
// matches nothing is otherwise a warning.
func (r *UserRules) expect(v *state.View, rule *ruleset.Rule) error {
	st := r.stats[rule]
	if res := rule.Match.Resource; rule.Custom() && !rule.Optional && !customKnown(v, res) {
		return option.Errorf("Rules", "{}: %s: match.resource %q is neither a built-in resource nor one the snapshot holds (no object under %s, no CustomResourceDefinition %s)%s: write it as kubectl api-resources prints it (plural.group), or say optional: true", rule, res, rule.Prefixes()[0], res, wellknown.DidYouMean(res, customIn(v, res)...))
	}
	if rule.Expect != nil && st.acts < rule.Expect.Min {
		return fmt.Errorf("%w: %s changes or deletes %d objects (%d matched), and its expect.min is %d: check its resource, namespaces, names, labelSelector, where and what it replaces", transform.ErrRefused, rule, st.acts, st.matched, rule.Expect.Min)
	}
	if st.matched == 0 {
		r.notes = append(r.notes, fmt.Sprintf("warning: %s matched no object of %s: check its resource, namespaces, names, labelSelector and where", rule, strings.Join(rule.Resources(), ", ")))
	}
	return nil
}

// checkDeletes refuses an object one rule deletes and another edits: one
// of the two would be silently lost.
func (r *UserRules) checkDeletes() error {
	keys := slices.Sorted(maps.Keys(r.matched))
	for _, k := range keys {
		var del, edit *ruleset.Rule
		for _, rule := range r.matched[k] {
			if rule.Delete && del == nil {
				del = rule
			} else if !rule.Delete && edit == nil {
				edit = rule
			}
		}
		if del != nil && edit != nil {
			return fmt.Errorf("%w: %s deletes %s, which %s edits: keep one of them", transform.ErrRefused, del, k, edit)
		}
	}
	return nil
}

// match records the objects rule selects and tries the rule on each.
func (r *UserRules) match(v *state.View, rule *ruleset.Rule) error {
	r.stats[rule] = &userRuleStats{}
	for _, p := range rule.Prefixes() {
		for _, kr := range v.Keys(p) {
			if !rule.MayMatchKey(kr.Key) {
				continue
			}
			if err := r.try(v, rule, kr.Key); err != nil {
				return err
			}
		}
	}
	return nil
}

// try matches rule on the object at key and, if it matches, tries it.
func (r *UserRules) try(v *state.View, rule *ruleset.Rule, key string) error {
	st := r.stats[rule]
	obj, ok, err := v.Get(key)
	if err != nil || !ok {
		return err
	}
	doc, err := ruleset.ObjectJSON(v.Codec(), obj.Value)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if !rule.Matches(ruleset.MetaOf(doc), doc) {
		return nil
	}
	st.matched++
	r.matched[key] = append(r.matched[key], rule)
	r.orig[key] = doc
	if rule.Delete {
		st.acts++
		return nil
	}
	next, _, err := rule.Apply(doc, r.mapping)
	if err != nil {
		if rule.Optional {
			return nil
		}
		return fmt.Errorf("%w: %s does not apply to %s: %v%s", transform.ErrRefused, rule, key, err, optionalHint(err))
	}
	if len(ruleset.Compare(doc, next)) > 0 {
		st.acts++
	}
	if err := checkResult(v.Codec(), obj.Value, doc, next); err != nil {
		if field, got, want, ok := typeMismatch(err); ok {
			// A value of the wrong type is a mistake in the rules file
			// (exit 2), said in the object's terms, not Go's.
			return option.Errorf("Rules", "{}: %s sets %s of %s to %s, but that field takes %s", rule, field, wellknown.KubectlName(key), got, want)
		}
		return fmt.Errorf("%w: %s would make %s invalid: %v", transform.ErrRefused, rule, key, parseerr.Explain(err))
	}
	return nil
}

// customKnown reports whether the snapshot holds objects of a custom
// resource or its CustomResourceDefinition.
func customKnown(v *state.View, res string) bool {
	return len(v.Keys(wellknown.Prefix(res))) > 0 || len(v.Keys(wellknown.PrefixCRDs+res)) > 0
}

// customIn are the resources the snapshot holds in res's group, as
// plural.group, for a suggestion.
func customIn(v *state.View, res string) []string {
	_, group, _ := strings.Cut(res, ".")
	var out []string
	for _, kr := range v.Keys(wellknown.DefaultPrefix + group + "/") {
		rest := strings.TrimPrefix(kr.Key, wellknown.DefaultPrefix+group+"/")
		if plural, _, ok := strings.Cut(rest, "/"); ok && !slices.Contains(out, plural+"."+group) {
			out = append(out, plural+"."+group)
		}
	}
	return out
}

// optionalHint is the advice for a rule that does not apply, unless the
// object cannot take the edit at all (a server-owned field).
func optionalHint(err error) string {
	if strings.Contains(err.Error(), "kube-apiserver") || strings.Contains(err.Error(), "status subresource") {
		return ""
	}
	return " (say optional: true to skip such objects)"
}

// Apply edits a matched object: each matching rule in file order, on top
// of what the built-in rules made of it.
func (r *UserRules) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	rs := r.matched[obj.Key]
	if len(rs) == 0 {
		return transform.Result{}, nil
	}
	for _, rule := range rs {
		if rule.Delete {
			r.stats[rule].deleted++
			return transform.Result{Action: transform.Delete, Changes: []transform.Change{{Field: rule.Name + ": (object)", Old: "deleted"}}}, nil
		}
	}
	cur, err := ruleset.ObjectJSON(r.codec, obj.Value)
	if err != nil {
		return transform.Result{}, err
	}
	doc, changes, err := r.applyAll(obj, rs, cur)
	if err != nil || len(changes) == 0 {
		return transform.Result{}, err
	}
	if err := writeBack(r.codec, obj.Value, cur, doc); err != nil {
		return transform.Result{}, fmt.Errorf("%w: the user rules' result for %s: %v", transform.ErrRefused, obj.Key, err)
	}
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// applyAll runs the rules on cur, refusing two rules that set one field
// to different values.
func (r *UserRules) applyAll(obj *state.Object, rs []*ruleset.Rule, cur any) (any, []transform.Change, error) {
	orig := r.orig[obj.Key]
	secret := obj.Value.GVK.Group == "" && obj.Value.GVK.Kind == "Secret"
	owner := map[string]*ruleset.Rule{}
	doc := cur
	var changes []transform.Change
	for _, rule := range rs {
		next, n, err := rule.Apply(doc, r.mapping)
		if err != nil {
			if rule.Optional {
				r.stats[rule].skipped++
				continue
			}
			return nil, nil, fmt.Errorf("%w: %s does not apply to %s as the earlier rules left it: %v", transform.ErrRefused, rule, obj.Key, err)
		}
		diffs := ruleset.Compare(doc, next)
		for _, d := range diffs {
			if o := ownerOf(owner, d.Pointer); o != nil {
				return nil, nil, fmt.Errorf("%w: %s and %s both change %s of %s, to different values: keep one of them", transform.ErrRefused, o, rule, d.Pointer, obj.Key)
			}
			if builtin := r.changedBefore(obj.Key, orig, cur, d.Pointer); builtin != "" {
				return nil, nil, fmt.Errorf("%w: %s changes %s of %s, which the built-in rule %s already set to another value: drop that part of the rule", transform.ErrRefused, rule, d.Pointer, obj.Key, builtin)
			}
			owner[d.Pointer] = rule
			changes = append(changes, userChange(rule, d, secret, r.mapping))
		}
		if len(diffs) > 0 {
			r.stats[rule].changed++
		}
		if n > 0 && len(diffs) > 0 {
			changes = append(changes, transform.Change{Field: rule.Name + ": (text replacements in this object)", New: fmt.Sprint(n)})
		}
		r.stats[rule].replaced += n
		doc = next
	}
	return doc, changes, nil
}

// ownerOf finds the rule that already changed p, a field inside it, or a
// field around it.
func ownerOf(owner map[string]*ruleset.Rule, p string) *ruleset.Rule {
	for q, rule := range owner {
		if q == p || strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
			return rule
		}
	}
	return nil
}

// changedBefore names the earlier rule (one claiming key) that changed the
// value at p between the input and cur; "" when none did.
func (r *UserRules) changedBefore(key string, orig, cur any, p string) string {
	vo, okO := ruleset.At(orig, p)
	vc, okC := ruleset.At(cur, p)
	if okO == okC && (!okO || ruleset.Equal(vo, vc)) {
		return ""
	}
	var names []string
	for _, e := range r.earlier {
		for _, pre := range e.Prefixes() {
			if strings.HasPrefix(key, pre) && !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	if len(names) == 0 {
		return "(unknown)"
	}
	return strings.Join(names, " or ")
}
