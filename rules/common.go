package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/textdist"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

// choiceHint is "; did you mean X?" for an option value meant to be one of
// choices, or "".
func choiceHint(value string, choices ...string) string {
	near := textdist.Nearest(value, choices)
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// LastApplied is kubectl's annotation with the last applied configuration.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// editLastApplied rewrites the kubectl last-applied-configuration copy of
// an object: edit gets the decoded document and reports whether it changed
// it. The document is written back as kubectl writes it (json.Marshal of the
// map, keys sorted, trailing newline kept).
func editLastApplied(meta *metav1.ObjectMeta, edit func(doc map[string]any) bool) (bool, error) {
	s, ok := meta.Annotations[LastApplied]
	if !ok || strings.TrimSpace(s) == "" {
		return false, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return false, nil // not JSON: kubectl would not read it either; leave it
	}
	if !edit(doc) {
		return false, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(doc); err != nil {
		return false, fmt.Errorf("re-encoding %s: %w", LastApplied, err)
	}
	out := buf.String() // Encode appends "\n"
	if !strings.HasSuffix(s, "\n") {
		out = strings.TrimSuffix(out, "\n")
	}
	meta.Annotations[LastApplied] = out
	return true, nil
}

// mapStrings replaces every string in list that fn maps.
func mapStrings(v any, fn func(string) (string, bool)) (any, bool) {
	switch x := v.(type) {
	case string:
		if n, ok := fn(x); ok {
			return n, true
		}
	case []any:
		changed := false
		for i, e := range x {
			if n, ok := mapStrings(e, fn); ok {
				x[i], changed = n, true
			}
		}
		return x, changed
	}
	return v, false
}

// nested returns doc[path[0]][path[1]]... as a map.
func nested(doc map[string]any, path ...string) (map[string]any, bool) {
	cur := doc
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// newUID derives a stable UID for an object snapshift creates, so a plan
// and a transform of the same input agree.
func newUID(key string, seed string) types.UID {
	return types.UID(uuid.NewSHA1(uuid.NameSpaceURL, []byte("snapshift:"+key+":"+seed)).String())
}

// getAs reads the object at key as a T; ok is false when the key is absent
// or holds another kind (for reads a rule can do without).
func getAs[T any](v *state.View, key string) (t T, ok bool, err error) {
	o, ok, err := v.Get(key)
	if err != nil || !ok {
		return t, false, err
	}
	t, ok = o.Value.Obj.(T)
	return t, ok, nil
}

// networks detects once and shares the result between rules.
func (p *Plan) networks(ctx context.Context, v *state.View) (*state.Networks, error) {
	if p.detected == nil {
		n, err := state.Detect(ctx, v)
		if err != nil {
			return nil, err
		}
		p.detected = n
	}
	return p.detected, nil
}

func toDetected(srcs []state.Source) ([]detected, error) {
	var out []detected
	for _, s := range srcs {
		d := detected{source: s.Source}
		for _, c := range s.CIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return nil, fmt.Errorf("%s records %q, which is not a CIDR", s.Source, c)
			}
			d.prefixes = append(d.prefixes, p.Masked())
		}
		out = append(out, d)
	}
	return out, nil
}

// movingRange is one of the ranges a run moves, as resolveRange needs it.
type movingRange struct {
	kind               string // "service CIDR", "pod network CIDR"
	field, value       string // the option that sets the new range, and its value
	oldField, oldValue string // the option that overrides detection of the old range
	// sources picks the old range's records from the snapshot's networks.
	sources func(*state.Networks) []state.Source
}

// resolveRange returns a moving range's old and new CIDRs, paired by
// family, where the old ones were found, and the snapshot's networks.
func (p *Plan) resolveRange(ctx context.Context, v *state.View, m movingRange) (oldP, newP []netip.Prefix, oldSrc string, nets *state.Networks, err error) {
	newP, err = optionPrefixes(m.field, m.value)
	if err != nil {
		return nil, nil, "", nil, err
	}
	nets, err = p.networks(ctx, v)
	if err != nil {
		return nil, nil, "", nil, err
	}
	srcs, err := toDetected(m.sources(nets))
	if err != nil {
		return nil, nil, "", nil, err
	}
	oldP, oldSrc, err = resolveOld(m.kind, m.oldField, m.oldValue, srcs, newP)
	if err != nil {
		return nil, nil, "", nil, err
	}
	oldP, newP, err = pairByFamily(m.kind, oldP, newP)
	if err != nil {
		return nil, nil, "", nil, err
	}
	return oldP, newP, oldSrc, nets, nil
}

// resolveOld finds the old CIDRs: the override, option field, if given (it
// must agree with at least one place the snapshot records, if any records
// one), else what every source agrees on.
//
// When every source already records the new CIDRs (a second run of the same
// command on its own output), the old CIDRs are the new ones: nothing moves.
func resolveOld(kind, field, override string, srcs []detected, newP []netip.Prefix) ([]netip.Prefix, string, error) {
	if override != "" {
		old, err := optionPrefixes(field, override)
		if err != nil {
			return nil, "", err
		}
		if len(srcs) == 0 {
			return old, "given", nil
		}
		var seen []string
		migrated := true
		for _, s := range srcs {
			if cidr.Join(s.prefixes) == cidr.Join(old) {
				return old, "given (matches " + s.source + ")", nil
			}
			if cidr.Join(s.prefixes) != cidr.Join(newP) {
				migrated = false
			}
			seen = append(seen, s.source+" says "+cidr.Join(s.prefixes))
		}
		if migrated {
			return newP, "already migrated (every source records " + cidr.Join(newP) + ")", nil
		}
		return nil, "", option.Errorf(field, "{} %s does not match what the snapshot holds (%s)", override, strings.Join(seen, "; "))
	}
	old, src, err := agree(kind, field, srcs)
	if err != nil {
		return nil, "", err
	}
	if len(old) == 0 {
		return nil, "", option.Errorf(field, "the snapshot records no %s (no kubeadm-config, no matching object): give it with {}", kind)
	}
	return old, src, nil
}

// optionPrefixes parses option field's CIDR list; its error is an
// *option.Error naming field.
func optionPrefixes(field, s string) ([]netip.Prefix, error) {
	ps, err := parsePrefixes(field, s)
	var oe *option.Error
	if err == nil || errors.As(err, &oe) {
		return ps, err
	}
	msg, found := strings.CutPrefix(err.Error(), field)
	if !found {
		msg = ": " + msg
	}
	return nil, &option.Error{Field: field, Message: "{}" + msg, Err: err}
}

func addrStrings(as []netip.Addr) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

// editManagedFields rewrites the values server-side apply records for
// set-type lists (e.g. a Node's podCIDRs appear as `v:"10.244.0.0/24"` keys
// in managedFields): each old value in mapping becomes its new value.
// Atomic fields (clusterIP) carry no values there and are untouched.
func editManagedFields(meta *metav1.ObjectMeta, mapping map[string]string) bool {
	changed := false
	for i := range meta.ManagedFields {
		f := meta.ManagedFields[i].FieldsV1
		if f == nil {
			continue
		}
		for old, nw := range mapping {
			from := []byte(`v:\"` + old + `\"`)
			if bytes.Contains(f.Raw, from) {
				f.Raw = bytes.ReplaceAll(f.Raw, from, []byte(`v:\"`+nw+`\"`))
				changed = true
			}
		}
	}
	return changed
}

// recordedPrefixes is what the snapshot's records (not the Nodes' covering
// prefix) agree on for a network; an error when they disagree or are absent.
func recordedPrefixes(srcs []state.Source) ([]netip.Prefix, error) {
	d, err := toDetected(records(srcs))
	if err != nil {
		return nil, err
	}
	p, _, err := agree("network", "", d)
	if err != nil || len(p) == 0 {
		return nil, fmt.Errorf("not recorded")
	}
	return p, nil
}

// records leaves out of a network's sources the Nodes' covering prefix:
// evidence, not a record (a cluster may use only part of its range).
func records(srcs []state.Source) []state.Source {
	var rec []state.Source
	for _, s := range srcs {
		if s.Kind != state.SourceNodes {
			rec = append(rec, s)
		}
	}
	return rec
}

// kindField is the option that sets the new range of a network kind
// ("service", "pod network CIDR", ...).
func kindField(kind string) string {
	if strings.HasPrefix(kind, "pod") {
		return "PodNetworkCIDR"
	}
	return "ServiceCIDR"
}

// disjoint refuses a new range that overlaps the other network, which is
// not moving, where the snapshot's records of it agree (else there is
// nothing to check against).
func disjoint(kind string, newP []netip.Prefix, otherKind string, recorded []state.Source) error {
	other, err := recordedPrefixes(recorded)
	if err != nil {
		return nil
	}
	for _, n := range newP {
		for _, o := range other {
			if n.Overlaps(o) {
				return option.Errorf(kindField(kind), "the new %s CIDR %s ({}) overlaps the %s CIDR %s, which is not moving: they must be disjoint", kind, n, otherKind, o)
			}
		}
	}
	return nil
}

// editSpecCopies keeps the other copies of moved spec values in step with
// the object: kubectl's last-applied-configuration (the given spec fields)
// and server-side apply's managedFields (set-type list values). It returns
// the report lines for what it changed.
func editSpecCopies(meta *metav1.ObjectMeta, fields []string, mapping map[string]string, what string) ([]transform.Change, error) {
	var changes []transform.Change
	edited, err := editLastApplied(meta, func(doc map[string]any) bool {
		spec, ok := nested(doc, "spec")
		if !ok {
			return false
		}
		changed := false
		for _, f := range fields {
			if v, ok := spec[f]; ok {
				if nv, c := mapStrings(v, func(s string) (string, bool) { n, ok := mapping[s]; return n, ok }); c {
					spec[f], changed = nv, true
				}
			}
		}
		return changed
	})
	if err != nil {
		return nil, err
	}
	if edited {
		changes = append(changes, transform.Change{Field: "metadata.annotations[" + LastApplied + "]", New: what + " copy updated"})
	}
	if editManagedFields(meta, mapping) {
		changes = append(changes, transform.Change{Field: "metadata.managedFields", New: what + " values updated"})
	}
	return changes, nil
}

// editConfigMapData edits, in place and in key order, every data value of
// the ConfigMap in obj with edit; the changes it reports are named
// data[<key>] <field>.
func editConfigMapData(obj *state.Object, edit func(value string) (string, []transform.Change, error)) ([]transform.Change, error) {
	cm, err := state.As[*corev1.ConfigMap](obj, "a ConfigMap")
	if err != nil {
		return nil, err
	}
	var changes []transform.Change
	before := maps.Clone(cm.Data)
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		doc, ch, err := edit(cm.Data[k])
		if err != nil {
			return nil, fmt.Errorf("data[%s]: %w", k, err)
		}
		for _, c := range ch {
			c.Field = strings.TrimSpace("data[" + k + "] " + c.Field)
			changes = append(changes, c)
		}
		cm.Data[k] = doc
	}
	more, err := syncLastAppliedData(cm, before)
	if err != nil {
		return nil, err
	}
	return append(changes, more...), nil
}

// syncLastAppliedData keeps kubectl's last-applied copy of a ConfigMap's
// data in step with an edit of the data: a key whose copy held the value
// before the edit gets the edited value (as kubectl apply of the edited
// object would record it). A copy that already differed from the stored
// value (the ConfigMap was changed since, by other means) is left alone.
func syncLastAppliedData(cm *corev1.ConfigMap, before map[string]string) ([]transform.Change, error) {
	edited, err := editLastApplied(&cm.ObjectMeta, func(doc map[string]any) bool {
		data, ok := nested(doc, "data")
		if !ok {
			return false
		}
		changed := false
		for k, old := range before {
			if cur := cm.Data[k]; cur != old {
				if v, ok := data[k].(string); ok && v == old {
					data[k], changed = cur, true
				}
			}
		}
		return changed
	})
	if err != nil || !edited {
		return nil, err
	}
	return []transform.Change{{Field: "metadata.annotations[" + LastApplied + "]", New: "data copy updated"}}, nil
}
