package migrate_test

import (
	"reflect"
	"testing"

	"github.com/snapshift/snapshift/migrate"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/verify"
)

// TestVerifyConfig: every option a rule marks Verify has a verify.Config
// field of the same name and type, and VerifyConfig copies it.
func TestVerifyConfig(t *testing.T) {
	vt := reflect.TypeOf(verify.Config{})
	for _, e := range rules.Registry() {
		o := e.Example()
		for _, opt := range e.Options(&o) {
			if !opt.Verify {
				continue
			}
			f, ok := vt.FieldByName(opt.Field)
			if want := reflect.TypeOf(opt.Value).Elem(); !ok || f.Type != want {
				t.Errorf("rule %s: option %s is marked Verify but verify.Config has no %s field of type %s", e.Name, opt.Name, opt.Field, want)
				continue
			}
			got := reflect.ValueOf(migrate.VerifyConfig(o)).FieldByName(opt.Field).Interface()
			if want := reflect.ValueOf(opt.Value).Elem().Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("rule %s: VerifyConfig(...).%s = %v, want %v", e.Name, opt.Field, got, want)
			}
		}
	}
}
