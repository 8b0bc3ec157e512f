package rules

import (
	"net/netip"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/ruleset"
)

// buildMapping is the run's address mapping: the Services' own moves and
// the service range, the pod range, and every rules file's addressMap. An
// addressMap whose old range overlaps the service or pod range would make
// an address's move ambiguous and is refused.
func (r *UserRules) buildMapping() (*ruleset.Mapping, error) {
	m := &ruleset.Mapping{}
	if s := r.plan.Service; s != nil {
		m.Exact = s.IPs
		m.Ranges = append(m.Ranges, pairs(s.Old, s.New, "the service range")...)
	}
	if p := r.plan.Pod; p != nil {
		m.Ranges = append(m.Ranges, pairs(p.Old, p.New, "the pod network range")...)
	}
	builtin := len(m.Ranges)
	for _, a := range ruleset.Ranges(r.files) {
		for _, b := range m.Ranges[:builtin] {
			if a.Old.Overlaps(b.Old) {
				return nil, option.Errorf("Rules", "{}: %s maps %s, which overlaps the range %s moves (%s): an address's move would be ambiguous", a.Source, a.Old, b.Source, b.Old)
			}
		}
		m.Ranges = append(m.Ranges, a)
	}
	return m, nil
}

// pairs pairs old and new ranges by family.
func pairs(old, new []netip.Prefix, source string) []ruleset.Range {
	var out []ruleset.Range
	for _, o := range old {
		for _, n := range new {
			if o.Addr().Is4() == n.Addr().Is4() && o != n {
				out = append(out, ruleset.Range{Old: o.Masked(), New: n.Masked(), Source: source})
				break
			}
		}
	}
	return out
}
