package leftovers

import (
	"bytes"
	"encoding/json"
	"net/netip"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/snapshift/snapshift/rules"
)

// onlyLastAppliedNote is the note of an object whose old-range addresses
// are only in kubectl's last-applied copy, not in the object itself.
const onlyLastAppliedNote = "only in its " + rules.LastApplied + " annotation (kubectl's copy of an earlier apply; the object itself holds none): the next kubectl apply of the old manifest would put them back"

// onlyInLastApplied reports whether every old-range address in value is in
// its kubectl last-applied-configuration annotation: the rules moved the
// object (a ConfigMap's data, say) but the copy had diverged from it, so
// it was left as it was.
func (s *LeftoverScan) onlyInLastApplied(value []byte) bool {
	if !bytes.Contains(value, []byte(rules.LastApplied)) {
		return false
	}
	o, err := s.codec().Decode(value)
	if err != nil {
		return false
	}
	m, err := meta.Accessor(o.Obj)
	if err != nil {
		return false
	}
	ann := m.GetAnnotations()
	la, ok := ann[rules.LastApplied]
	if !ok {
		return false
	}
	delete(ann, rules.LastApplied)
	m.SetAnnotations(ann)
	defer func() { ann[rules.LastApplied] = la; m.SetAnnotations(ann) }()
	rest, err := json.Marshal(o.Obj)
	if err != nil {
		return false
	}
	seen := map[netip.Addr]bool{}
	return len(s.find(rest, s.needles, s.groups4, isV4Char, 15, seen))+len(s.find(rest, s.needle6, s.groups6, isV6Char, 45, seen)) == 0
}
