package ruleset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// Decode parses an object's JSON form, numbers kept as written.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Apply runs the rule's edits on a copy of doc, in order: mapAddresses,
// replace, then patch (RFC 6902), then mergePatch (RFC 7386), and returns
// the result and the number of text replacements. doc is not modified. A
// pointer or patch that does not apply is an error naming it; a pattern
// (wildcards, aliases) that names no place is not.
func (r *Rule) Apply(doc any, m *Mapping) (any, int, error) {
	out, err := deepCopy(doc)
	if err != nil {
		return nil, 0, err
	}
	if err := r.mapAddresses(out, m); err != nil {
		return nil, 0, err
	}
	replaced := 0
	for i := range r.Replace {
		n, err := r.Replace[i].apply(out)
		if err != nil {
			return nil, 0, err
		}
		replaced += n
	}
	if r.patchJSON == nil && r.mergeJSON == nil {
		return out, replaced, r.serverWrites(doc, out)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, 0, err
	}
	if r.patchJSON != nil {
		if b, err = r.applyPatch(out, b); err != nil {
			return nil, 0, fmt.Errorf("patch: %w", err)
		}
	}
	if r.mergeJSON != nil {
		if b, err = jsonpatch.MergePatch(b, r.mergeJSON); err != nil {
			return nil, 0, fmt.Errorf("mergePatch: %w", err)
		}
	}
	res, err := Decode(b)
	if err != nil {
		return nil, 0, err
	}
	return res, replaced, r.serverWrites(doc, res)
}

func (r *Rule) mapAddresses(out any, m *Mapping) error {
	for _, pat := range r.MapAddresses {
		for _, p := range Expand(out, pat) {
			v, ok := get(out, p)
			if !ok {
				return fmt.Errorf("mapAddresses: the object has nothing at %s", p)
			}
			nv, err := mapValue(v, m)
			if err != nil {
				return fmt.Errorf("mapAddresses %s: %w", p, err)
			}
			set(out, p, nv)
		}
	}
	return nil
}

// applyPatch applies the JSON Patch to b (doc's JSON form), its test and
// replace ops with patterns expanded on doc first: one op per place.
func (r *Rule) applyPatch(doc any, b []byte) ([]byte, error) {
	pj := r.patchJSON
	if r.patchPats {
		var ops []any
		for _, raw := range r.Patch {
			op := raw.(map[string]any) // checked by compilePatches
			p := op["path"].(string)
			if !IsPattern(p) {
				ops = append(ops, op)
				continue
			}
			places := Expand(doc, p)
			if len(places) == 0 && op["op"] == "test" {
				return nil, fmt.Errorf("test op: %s names no place in the object", p)
			}
			for _, cp := range places {
				c := maps.Clone(op)
				c["path"] = cp
				ops = append(ops, c)
			}
		}
		if len(ops) == 0 {
			return b, nil
		}
		var err error
		if pj, err = json.Marshal(ops); err != nil {
			return nil, err
		}
	}
	patch, err := jsonpatch.DecodePatch(pj)
	if err != nil {
		return nil, err
	}
	return patch.Apply(b)
}

// mapValue maps the addresses in a string (as text), or in every string
// inside a list or object.
func mapValue(v any, m *Mapping) (any, error) {
	return mapStrings(v, func(s string) (string, error) {
		s, _, err := m.MapText(s)
		return s, err
	})
}

// mapStrings replaces a string, or every string inside a list or object
// (keys kept, lists and objects changed in place), by what f makes of it.
// The first error stops the walk.
func mapStrings(v any, f func(string) (string, error)) (any, error) {
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		for i, e := range t {
			nv, err := mapStrings(e, f)
			if err != nil {
				return nil, err
			}
			t[i] = nv
		}
	case map[string]any:
		for k, e := range t {
			nv, err := mapStrings(e, f)
			if err != nil {
				return nil, err
			}
			t[k] = nv
		}
	}
	return v, nil
}

func deepCopy(doc any) (any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Diff is one leaf that differs between two JSON values.
type Diff struct {
	Pointer  string
	Old, New any
	// Added and Removed say the leaf exists on one side only.
	Added, Removed bool
}

// Compare lists the leaves that differ between a and b, in document order
// (object keys sorted).
func Compare(a, b any) []Diff {
	var out []Diff
	compare("", a, b, true, true, &out)
	return out
}

func compare(p string, a, b any, hasA, hasB bool, out *[]Diff) {
	ma, aObj := a.(map[string]any)
	mb, bObj := b.(map[string]any)
	if hasA && hasB && aObj && bObj {
		for _, k := range unionKeys(ma, mb) {
			va, okA := ma[k]
			vb, okB := mb[k]
			compare(p+"/"+escape(k), va, vb, okA, okB, out)
		}
		return
	}
	la, aList := a.([]any)
	lb, bList := b.([]any)
	if hasA && hasB && aList && bList {
		for i := 0; i < max(len(la), len(lb)); i++ {
			var va, vb any
			if i < len(la) {
				va = la[i]
			}
			if i < len(lb) {
				vb = lb[i]
			}
			compare(fmt.Sprintf("%s/%d", p, i), va, vb, i < len(la), i < len(lb), out)
		}
		return
	}
	if hasA && hasB && equalJSON(a, b) {
		return
	}
	*out = append(*out, Diff{Pointer: p, Old: a, New: b, Added: !hasA, Removed: !hasB})
}

// At returns the value at pointer p in doc.
func At(doc any, p string) (any, bool) { return get(doc, p) }

// Equal compares two JSON values.
func Equal(a, b any) bool { return equalJSON(a, b) }
