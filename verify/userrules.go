package verify

import (
	"context"
	"fmt"

	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
)

// The invariants a rules file states (docs/RULES.md "What verify checks"),
// on the objects each rule selects by resource, namespaces, names and
// labelSelector (its where conditions are about the input, not checked):
//   - every mapAddresses pointer holds no address or CIDR inside an
//     addressMap's from range (of any of the files);
//   - no object a delete rule selects is left.
//
// Rules with where conditions or optional: true promise nothing about all
// the objects they select, and are not checked.

// rulePrefixes are the resources the rules name.
func rulePrefixes(files []*ruleset.File) []string {
	var out []string
	for _, f := range files {
		for _, r := range f.Rules {
			out = append(out, r.Prefixes()...)
		}
	}
	return out
}

// checkUserRules adds the rules files' checks.
func checkUserRules(ctx context.Context, c *checker, v *state.View, files []*ruleset.File) error {
	m := &ruleset.Mapping{Ranges: ruleset.Ranges(files)}
	var mapped, deleted []string
	nMapped := 0
	for _, f := range files {
		for _, r := range f.Rules {
			if err := ctx.Err(); err != nil {
				return err
			}
			// A where condition or optional: true says the rule leaves some
			// of the objects it selects alone: nothing to promise about them.
			if len(r.Match.Where) > 0 || r.Optional || (len(r.MapAddresses) == 0 && !r.Delete) {
				continue
			}
			for _, kr := range keysOf(v, r) {
				if !r.MayMatchKey(kr.Key) {
					continue // never decoded (nor decrypted), as in the transform
				}
				o, ok, err := v.Get(kr.Key)
				if err != nil || !ok {
					return err
				}
				doc, err := ruleset.ObjectJSON(v.Codec(), o.Value)
				if err != nil {
					return fmt.Errorf("%s: %w", o.Key, err)
				}
				if !r.MatchesMeta(ruleset.MetaOf(doc)) {
					continue
				}
				if r.Delete {
					deleted = append(deleted, fmt.Sprintf("%s: still present, though %s deletes it", o.Key, r))
					continue
				}
				nMapped++
				mapped = append(mapped, oldAddresses(o.Key, r, doc, m)...)
			}
		}
	}
	c.add("user rules: mapped addresses", mapped, "%d selected objects hold no address of an addressMap's old range at their mapAddresses pointers", nMapped)
	c.add("user rules: deleted objects", deleted, "no object left that a delete rule selects")
	return nil
}

// keysOf are the keys under the rule's resources.
func keysOf(v *state.View, r *ruleset.Rule) []snapshot.KeyRev {
	var out []snapshot.KeyRev
	for _, p := range r.Prefixes() {
		out = append(out, v.Keys(p)...)
	}
	return out
}

func oldAddresses(key string, r *ruleset.Rule, doc any, m *ruleset.Mapping) []string {
	var out []string
	for _, pat := range r.MapAddresses {
		for _, p := range ruleset.Expand(doc, pat) {
			lits, _ := ruleset.Literals(doc, p)
			for _, l := range lits {
				if rg, ok := m.OldRange(l.Addr()); ok && l.Bits() >= rg.Old.Bits() {
					out = append(out, fmt.Sprintf("%s %s holds %s, inside %s (%s) [%s]", key, p, l, rg.Old, rg.Source, r.Name))
				}
			}
		}
	}
	return out
}
