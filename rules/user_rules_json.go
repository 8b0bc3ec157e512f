package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/transform"
)

func at(doc any, p string) any {
	v, _ := ruleset.At(doc, p)
	return v
}

// identity are the fields that place an object at its key.
var identity = []string{"/apiVersion", "/kind", "/metadata/name", "/metadata/namespace", "/metadata/uid"}

// checkResult tries a rule's result on the object (from the View, which
// may be modified): nil when it changes nothing or writes back cleanly.
func checkResult(c *codec.Codec, val *codec.Object, doc, next any) error {
	if len(ruleset.Compare(doc, next)) == 0 {
		return nil
	}
	return writeBack(c, val, doc, next)
}

// writeBack stores next, the patched JSON form of val (whose JSON form is
// cur), into val. A built-in object is decoded strictly into its type (an
// unknown field or a wrong type is an error), and only if its unpatched
// JSON form gives back exactly the same object: a field JSON cannot hold
// would otherwise be lost.
func writeBack(c *codec.Codec, val *codec.Object, cur, next any) error {
	for _, p := range identity {
		if a, b := at(cur, p), at(next, p); !ruleset.Equal(a, b) {
			return fmt.Errorf("%s would change (%v -> %v): an object cannot move to another key or type", p, a, b)
		}
	}
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	if u, ok := val.Obj.(*unstructured.Unstructured); ok {
		nu := &unstructured.Unstructured{}
		if _, _, err := unstructured.UnstructuredJSONScheme.Decode(b, nil, nu); err != nil {
			return err
		}
		u.Object = nu.Object
		return nil
	}
	curJSON, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	back, err := typedFromJSON(val.Obj, curJSON)
	if err != nil {
		return fmt.Errorf("its own JSON form does not decode: %w", err)
	}
	want, err1 := c.Encode(val)
	got, err2 := c.Encode(&codec.Object{Encoding: val.Encoding, GVK: val.GVK, Obj: back})
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if !bytes.Equal(want, got) {
		return fmt.Errorf("the %s does not survive its JSON form unchanged (a field JSON cannot hold), so patching it would lose data", val.GVK.Kind)
	}
	obj, err := typedFromJSON(val.Obj, b)
	if err != nil {
		return fmt.Errorf("the result is not a valid %s: %w", val.GVK.Kind, err)
	}
	val.Obj = obj
	return nil
}

// typedFromJSON decodes b strictly into a new object of like's type.
func typedFromJSON(like runtime.Object, b []byte) (runtime.Object, error) {
	obj, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a runtime.Object", like)
	}
	strict, err := sigsjson.UnmarshalStrict(b, obj)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return obj, nil
}

// userChange renders one changed field for the report; a Secret's values
// are never shown.
func userChange(rule *ruleset.Rule, d ruleset.Diff, secret bool, m *ruleset.Mapping) transform.Change {
	ch := transform.Change{Field: rule.Name + ": " + d.Pointer}
	switch {
	case secret:
		ch.Old, ch.New = "(hidden)", "(hidden)"
		if d.Added {
			ch.Old = ""
		}
		if d.Removed {
			ch.New = ""
		}
		return ch
	case !d.Added && !d.Removed:
		if o, ok := d.Old.(string); ok && isLong(o) {
			if n, tc, err := m.MapText(o); err == nil && len(tc) > 0 && n == d.New {
				var olds, news []string
				for _, t := range tc {
					olds, news = append(olds, t.Old), append(news, t.New)
				}
				ch.Field += " (addresses in the text)"
				ch.Old, ch.New = strings.Join(olds, ","), strings.Join(news, ",")
				return ch
			}
		}
	}
	if o, n, ok := textEdit(d); ok {
		ch.Field += " (in the text)"
		ch.Old, ch.New = o, n
		return ch
	}
	if !d.Added {
		ch.Old = display(d.Old)
	}
	if !d.Removed {
		ch.New = display(d.New)
	}
	return ch
}

// textEdit shows a change inside a long text (a replace in a ConfigMap's
// file, a long image name) by the part that differs, with a little
// context on each side, kept to its line: "…host = 192.168.10.21…" ->
// "…host = 10.20.10.21…". A text whose lines changed in several places
// shows each changed line's part, "; "-separated (up to maxTextEdits).
// ok is false when both values are short (they are shown whole) or the
// change is too large to show in parts (lines added or removed, a long
// differing part).
func textEdit(d ruleset.Diff) (old, new string, ok bool) {
	o, okO := d.Old.(string)
	n, okN := d.New.(string)
	if !okO || !okN || d.Added || d.Removed || (!isLong(o) && !isLong(n)) {
		return "", "", false
	}
	ol, nl := strings.Split(o, "\n"), strings.Split(n, "\n")
	if len(ol) != len(nl) {
		return "", "", false
	}
	var olds, news []string
	for i := range ol {
		if ol[i] == nl[i] {
			continue
		}
		if len(olds) == maxTextEdits {
			return "", "", false
		}
		po, pn, ok := lineEdit(ol[i], nl[i])
		if !ok {
			return "", "", false
		}
		// "…" where the text goes on, before or after the line's part.
		if i > 0 && !strings.HasPrefix(po, "…") {
			po, pn = "…"+po, "…"+pn
		}
		if i < len(ol)-1 && !strings.HasSuffix(po, "…") {
			po += "…"
		}
		if i < len(nl)-1 && !strings.HasSuffix(pn, "…") {
			pn += "…"
		}
		olds, news = append(olds, po), append(news, pn)
	}
	if len(olds) == 0 {
		return "", "", false
	}
	return strings.Join(olds, "; "), strings.Join(news, "; "), true
}

// maxTextEdits bounds the changed lines textEdit shows in parts.
const maxTextEdits = 5

// lineEdit is the part of one line that differs, with up to 12 characters
// of context on each side, "…" where the line goes on.
func lineEdit(o, n string) (old, new string, ok bool) {
	ro, rn := []rune(o), []rune(n)
	pre := 0
	for pre < len(ro) && pre < len(rn) && ro[pre] == rn[pre] {
		pre++
	}
	suf := 0
	for suf < len(ro)-pre && suf < len(rn)-pre && ro[len(ro)-1-suf] == rn[len(rn)-1-suf] {
		suf++
	}
	from := pre
	for from > 0 && pre-from < 12 {
		from-- // context before
	}
	toO, toN := len(ro)-suf, len(rn)-suf
	for k := 0; k < 12 && toO < len(ro); k++ {
		toO, toN = toO+1, toN+1 // context after (the common suffix)
	}
	old, new = string(ro[from:toO]), string(rn[from:toN])
	if len(old) > 100 || len(new) > 100 {
		return "", "", false
	}
	if from > 0 {
		old, new = "…"+old, "…"+new
	}
	if toO < len(ro) {
		old += "…"
	}
	if toN < len(rn) {
		new += "…"
	}
	return old, new, true
}

func isLong(s string) bool { return len(s) > 60 || strings.Contains(s, "\n") }

func display(v any) string {
	s, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if isLong(s) {
		return fmt.Sprintf("(%d characters)", len(s))
	}
	if s == "" {
		return `""`
	}
	return s
}

// typeMismatch finds, in a decoding error, a value of the wrong JSON type
// for its field (the JSON decoders' UnmarshalTypeError, whose sigs.k8s.io
// copy is internal to its module: read by its field names) and says it
// in words: the field's path, what it was given, what it takes.
func typeMismatch(err error) (field, got, want string, ok bool) {
	for _, e := range unwrapAll(err) {
		v := reflect.ValueOf(e)
		if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().Name() != "UnmarshalTypeError" {
			continue
		}
		s := v.Elem()
		f, val, typ := s.FieldByName("Field"), s.FieldByName("Value"), s.FieldByName("Type")
		if f.Kind() != reflect.String || val.Kind() != reflect.String || !typ.IsValid() || f.String() == "" {
			continue
		}
		t, _ := typ.Interface().(reflect.Type)
		if t == nil {
			continue
		}
		return f.String(), parseerr.JSONValue(val.String()), parseerr.Form(t), true
	}
	return "", "", "", false
}

// unwrapAll is err and every error it wraps, depth first.
func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, unwrapAll(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	}
	return out
}
