package rules

import (
	"reflect"
	"strings"
	"testing"
)

// TestRegistryComplete fails when a rule is half-registered: every field of
// every options fragment embedded in Options must be described by exactly
// one Option of one rule, with a Value that points at that very field; CLI
// options must have a flag-able type; names and config paths are unique;
// every rule has Enabled, New and Example options that enable it.
func TestRegistryComplete(t *testing.T) {
	var o Options
	described := map[string]Option{}
	names := map[string]bool{}
	configs := map[string]bool{}
	for _, e := range registry {
		if e.Name == "" || e.Summary == "" || len(e.Touches) == 0 || e.Enabled == nil || e.New == nil || e.Example == nil || e.Options == nil {
			t.Errorf("rule %q: Name, Summary, Touches, Enabled, New, Example and Options are required", e.Name)
			continue
		}
		ex := e.Example()
		if !e.Enabled(&ex) {
			t.Errorf("rule %s: its Example options do not enable it", e.Name)
		}
		for _, opt := range e.Options(&o) {
			if _, dup := described[opt.Field]; dup {
				t.Errorf("option field %s is described twice", opt.Field)
			}
			described[opt.Field] = opt
			if names[opt.Name] {
				t.Errorf("option name %s is used twice", opt.Name)
			}
			names[opt.Name] = true
			if opt.Config != "" && configs[opt.Config] {
				t.Errorf("config path %s is used twice", opt.Config)
			}
			configs[opt.Config] = true
			if opt.Usage == "" {
				t.Errorf("option %s has no usage text", opt.Name)
			}
			if opt.CLI {
				switch opt.Value.(type) {
				case *string, *bool, *[]string:
				default:
					t.Errorf("option %s is a CLI flag but its value is a %T", opt.Name, opt.Value)
				}
			}
		}
	}
	ov := reflect.ValueOf(&o).Elem()
	for i := 0; i < ov.NumField(); i++ {
		f := ov.Type().Field(i)
		if !f.Anonymous {
			continue
		}
		frag := ov.Field(i)
		for j := 0; j < frag.NumField(); j++ {
			name := frag.Type().Field(j).Name
			opt, ok := described[name]
			if !ok {
				t.Errorf("%s.%s has no Option in any rule's Options", f.Name, name)
				continue
			}
			if reflect.ValueOf(opt.Value).Pointer() != frag.Field(j).Addr().Pointer() {
				t.Errorf("option %s: Value does not point at Options.%s", opt.Name, name)
			}
			delete(described, name)
		}
	}
	for field := range described {
		t.Errorf("option field %s is not a field of an options fragment embedded in Options", field)
	}
}

func TestOrder(t *testing.T) {
	e := func(name string, after ...string) Entry { return Entry{Name: name, After: after} }
	names := func(es []Entry) string {
		var s []string
		for _, x := range es {
			s = append(s, x.Name)
		}
		return strings.Join(s, ",")
	}
	got, err := Order([]Entry{e("config", "svc", "pod"), e("svc"), e("tokens"), e("pod", "svc")})
	if err != nil || names(got) != "svc,tokens,pod,config" {
		t.Errorf("Order = %s, %v; want svc,tokens,pod,config (each as early as its prerequisites allow)", names(got), err)
	}
	// A prerequisite that does not run is no prerequisite.
	if got, err := Order([]Entry{e("config", "svc", "pod"), e("pod")}); err != nil || names(got) != "pod,config" {
		t.Errorf("Order = %s, %v; want pod,config", names(got), err)
	}
	if _, err := Order([]Entry{e("a", "b"), e("b", "c"), e("c", "a"), e("d")}); err == nil || !strings.Contains(err.Error(), "a, b, c") {
		t.Errorf("Order of a cycle = %v, want an error naming a, b, c", err)
	}
	// The registry itself has no cycle, and runs in registry order.
	got, err = Order(registry)
	if err != nil {
		t.Fatalf("the registry has a prerequisite cycle: %v", err)
	}
	if names(got) != strings.Join(Names(), ",") {
		t.Errorf("registry order %s differs from its dependency order %s: list prerequisites first", strings.Join(Names(), ","), names(got))
	}
}

func TestOptionSet(t *testing.T) {
	var o Options
	by := map[string]Option{}
	for _, opt := range AllOptions(&o) {
		by[opt.Name] = opt
	}
	for _, c := range []struct{ name, val string }{
		{"service-cidr", "172.24.0.0/16"}, {"repack", "true"}, {"keep-service-ip", "a/b"}, {"keep-service-ip", "c/d"},
		{"cluster-ca", "PEM"}, {"bootstrap-token", "abcdef.0123456789abcdef"},
	} {
		if err := by[c.name].Set(c.val); err != nil {
			t.Fatalf("Set(%s, %s): %v", c.name, c.val, err)
		}
	}
	if o.ServiceCIDR != "172.24.0.0/16" || !o.Repack || strings.Join(o.KeepServiceIPs, " ") != "a/b c/d" || string(o.ClusterCA) != "PEM" ||
		o.BootstrapToken == nil || o.BootstrapToken.ID != "abcdef" {
		t.Errorf("Set did not set the fields: %+v", o)
	}
	if err := by["repack"].Set("yes"); err == nil {
		t.Error("Set(repack, yes) = nil, want an error")
	}
	if err := by["bootstrap-token"].Set("short.x"); err == nil || !strings.Contains(err.Error(), "BootstrapToken") {
		t.Errorf("Set(bootstrap-token, short.x) = %v, want an error naming BootstrapToken", err)
	}
}
