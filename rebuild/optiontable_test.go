package rebuild_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rebuild"
	"github.com/snapshift/snapshift/rules"
)

// TestEveryKeyDeclared: every key of a rebuild file is declared, as a rule
// option's Config path (rules.Entry.Options) or as a row of
// option.Library, so that an error naming its field can name the key. A
// new key without a declaration fails here.
func TestEveryKeyDeclared(t *testing.T) {
	declared := map[string]bool{}
	for _, d := range option.Library() {
		declared[d.Key] = true
	}
	var scratch rules.Options
	for _, o := range rules.AllOptions(&scratch) {
		declared[o.Config] = true
	}
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		if t == reflect.TypeOf(rebuild.Networking{}) {
			for k := range new(rebuild.Networking).Keys() {
				keys = append(keys, prefix+k)
			}
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Struct:
				walk(prefix+name+".", ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(prefix+name+"[].", ft.Elem())
			default:
				keys = append(keys, prefix+name)
			}
		}
	}
	walk("", reflect.TypeOf(rebuild.Config{}))
	if len(keys) < 20 {
		t.Fatalf("found only %d keys: %v", len(keys), keys)
	}
	exists := map[string]bool{}
	for _, k := range keys {
		if !declared[k] {
			t.Errorf("rebuild key %s: no declaration (add a row to option.Library, or a Config path to its rule option)", k)
		}
		for p := k; p != ""; p, _, _ = cutLast(p) {
			exists[strings.TrimSuffix(p, "[]")] = true
		}
	}
	// And no declaration names a key the file does not have (a phrase such
	// as "an empty pki.source" is no key).
	for k := range declared {
		if k != "" && !strings.Contains(k, " ") && !exists[k] {
			t.Errorf("declared key %s is no key of a rebuild file", k)
		}
	}
}

// cutLast drops the last element of a key path.
func cutLast(p string) (string, string, bool) {
	i := strings.LastIndex(p, ".")
	if i < 0 {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}
