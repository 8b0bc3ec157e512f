package rules

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/transform"
)

func TestServiceRangeLimit(t *testing.T) {
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, c := range []struct {
		name, version string
		newP          []netip.Prefix
		refused       bool
		note          string
	}{
		{"a /12 is the widest IPv4 range 1.33 takes", "v1.33.4", p("10.96.0.0/12"), false, ""},
		{"a /11 on 1.33", "v1.33.4", p("10.96.0.0/11"), true, ""},
		{"a /11 on 1.34 (allocator dual write off by default)", "v1.34.0", p("10.96.0.0/11"), false, ""},
		{"IPv6 /108 on 1.30", "v1.30.14", p("fd00::/108"), false, ""},
		{"IPv6 /64 on 1.30", "v1.30.14", p("10.96.0.0/12", "fd00::/64"), true, ""},
		{"no version recorded", "", p("10.0.0.0/8"), false, "records no Kubernetes version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			note, err := serviceRangeLimit(c.version, c.newP)
			if (err != nil) != c.refused {
				t.Fatalf("err = %v, want refused=%v", err, c.refused)
			}
			if err != nil && (!errors.Is(err, transform.ErrRefused) || !strings.Contains(err.Error(), c.version) || !strings.Contains(err.Error(), "2^20")) {
				t.Errorf("err = %v: want a refusal naming the version and the limit", err)
			}
			if !strings.Contains(note, c.note) || (c.note == "" && note != "") {
				t.Errorf("note = %q, want %q", note, c.note)
			}
		})
	}
}
