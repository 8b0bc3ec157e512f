package ruleset_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/ruleset"
)

func testMapping() *ruleset.Mapping {
	return &ruleset.Mapping{
		Exact: map[netip.Addr]netip.Addr{netip.MustParseAddr("10.96.0.10"): netip.MustParseAddr("172.24.0.10")},
		Ranges: []ruleset.Range{
			{Old: netip.MustParsePrefix("10.96.0.0/12"), New: netip.MustParsePrefix("172.24.0.0/16"), Source: "services"},
			{Old: netip.MustParsePrefix("10.0.100.0/24"), New: netip.MustParsePrefix("172.30.10.0/24"), Source: "map"},
			{Old: netip.MustParsePrefix("fd00:10::/108"), New: netip.MustParsePrefix("fd00:20::/108"), Source: "v6"},
		},
	}
}

func TestMapText(t *testing.T) {
	m := testMapping()
	for in, want := range map[string]string{
		"forward . 10.96.0.10:53 1.1.1.1":     "forward . 172.24.0.10:53 1.1.1.1",
		"allow net 10.96.0.0/12 10.0.0.0/24":  "allow net 172.24.0.0/16 10.0.0.0/24",
		"10.0.100.10-10.0.100.60":             "172.30.10.10-172.30.10.60",
		"10.0.100.128/26,10.0.100.5/24":       "172.30.10.128/26,172.30.10.5/24",
		"version 10.96.0.10.1 stays":          "version 10.96.0.10.1 stays",
		"[fd00:10::5]:53 and fd00:10::/112":   "[fd00:20::5]:53 and fd00:20::/112",
		"10.0.0.0/8 around the range is kept": "10.0.0.0/8 around the range is kept",
		"no addresses here: a:b 12:30":        "no addresses here: a:b 12:30",
	} {
		got, _, err := m.MapText(in)
		if err != nil || got != want {
			t.Errorf("MapText(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestMapTextDoesNotFit(t *testing.T) {
	m := &ruleset.Mapping{Ranges: []ruleset.Range{{Old: netip.MustParsePrefix("10.0.0.0/16"), New: netip.MustParsePrefix("172.30.0.0/24"), Source: "x"}}}
	if _, _, err := m.MapText("10.0.5.1"); err == nil || !strings.Contains(err.Error(), "10.0.5.1") {
		t.Errorf("MapText of an address whose offset does not fit = %v, want an error naming it", err)
	}
}

// FuzzMapText: mapping keeps every byte that is not a moved literal, so
// the identity mapping gives the text back, and no mapping panics.
func FuzzMapText(f *testing.F) {
	for _, s := range []string{"forward . 10.96.0.10:53", "10.0.100.0/24,fd00:10::1", "1.2.3.4.5:6::/7", ":::::/999"} {
		f.Add(s)
	}
	m := testMapping()
	id := &ruleset.Mapping{Ranges: []ruleset.Range{{Old: netip.MustParsePrefix("0.0.0.0/0"), New: netip.MustParsePrefix("0.0.0.0/0")}}}
	f.Fuzz(func(t *testing.T, s string) {
		if _, _, err := m.MapText(s); err != nil {
			t.Skip() // an offset that does not fit is a refusal, not a bug
		}
		got, _, err := id.MapText(s)
		if err != nil || got != s {
			t.Fatalf("identity MapText(%q) = %q, %v", s, got, err)
		}
	})
}

// FuzzParse: the parser never panics, and what it accepts it accepts again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(head + "rules:\n- name: a\n  match: {resource: configmaps}\n  mapAddresses: [/data/x]\n"))
	f.Add([]byte(head + "addressMap:\n- {from: 10.0.100.0/24, to: 172.30.10.0/24}\n"))
	f.Add([]byte(head + "rules:\n- name: a\n  match: {resource: x.y, where: [{path: /a, equals: [1]}]}\n  patch: [{op: test, path: /a, value: 1}]\n  mergePatch: {a: null}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := ruleset.Parse("f.yaml", b)
		if err != nil {
			return
		}
		if _, err := ruleset.Parse("f.yaml", b); err != nil {
			t.Fatalf("accepted once, refused twice: %v", err)
		}
		for _, r := range fl.Rules {
			_ = r.Prefixes()
		}
	})
}

// mapAddresses reaches strings at a pointer with escaped tokens, inside
// lists and objects, and refuses a pointer with nothing there.
func TestApplyMapAddresses(t *testing.T) {
	f, err := ruleset.Parse("x.yaml", []byte(head+`rules:
- name: a
  match: {resource: configmaps}
  mapAddresses: ["/data/a~1b", /spec]
`))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := ruleset.Decode([]byte(`{"data":{"a/b":"dns 10.96.0.10"},"spec":{"list":["10.0.100.1",{"x":"10.0.100.0/24"}],"n":3}}`))
	got, _, err := f.Rules[0].Apply(doc, testMapping())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if want := `{"data":{"a/b":"dns 172.24.0.10"},"spec":{"list":["172.30.10.1",{"x":"172.30.10.0/24"}],"n":3}}`; string(b) != want {
		t.Errorf("Apply = %s, want %s", b, want)
	}
	if orig, _ := json.Marshal(doc); !strings.Contains(string(orig), "10.96.0.10") {
		t.Error("Apply modified its input")
	}
	missing, _ := ruleset.Decode([]byte(`{"data":{}}`))
	if _, _, err := f.Rules[0].Apply(missing, testMapping()); err == nil || !strings.Contains(err.Error(), "/data/a~1b") {
		t.Errorf("Apply on an object without the field = %v", err)
	}
}
