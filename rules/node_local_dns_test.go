package rules

import (
	"net/netip"
	"strings"
	"testing"
)

func TestMapAddressesInText(t *testing.T) {
	m := map[netip.Addr]netip.Addr{
		netip.MustParseAddr("10.96.0.10"):   netip.MustParseAddr("172.24.0.10"),
		netip.MustParseAddr("fd00:96::a"):   netip.MustParseAddr("fd00:24::a"),
		netip.MustParseAddr("192.168.0.10"): netip.MustParseAddr("172.24.0.10"),
	}
	for _, c := range []struct{ in, want string }{
		{"forward . 10.96.0.10 {\n  force_tcp\n}", "forward . 172.24.0.10 {\n  force_tcp\n}"},
		{"-localip 169.254.20.10,10.96.0.10", "-localip 169.254.20.10,172.24.0.10"},
		{"forward . 10.96.0.10:53", "forward . 172.24.0.10:53"},
		{"forward . [fd00:96::a]:53 fd00:96::a", "forward . [fd00:24::a]:53 fd00:24::a"},
		{"version 10.96.0.10.1 and 110.96.0.10 stay", "version 10.96.0.10.1 and 110.96.0.10 stay"},
		{"end of sentence 10.96.0.10.", "end of sentence 172.24.0.10."},
		{"bind 169.254.25.10\nhealth 169.254.25.10:9254", "bind 169.254.25.10\nhealth 169.254.25.10:9254"},
		{"two: 10.96.0.10 192.168.0.10", "two: 172.24.0.10 172.24.0.10"},
	} {
		got, ch := mapAddressesInText(c.in, m)
		if got != c.want {
			t.Errorf("mapAddressesInText(%q) = %q, want %q", c.in, got, c.want)
		}
		if (ch.len() > 0) != (c.in != c.want) {
			t.Errorf("mapAddressesInText(%q) reported %d changes", c.in, ch.len())
		}
	}
}

// FuzzMapAddressesInText: text without a mapped address comes back byte
// for byte, and mapping is its own inverse when the mapping is.
func FuzzMapAddressesInText(f *testing.F) {
	for _, s := range []string{"forward . 10.96.0.10", "-localip 169.254.20.10,10.96.0.10", "[fd00:96::a]:53", "10.96.0.10.1", "héllo 10.96.0.10\x00"} {
		f.Add(s)
	}
	a, b := netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("172.24.0.10")
	there := map[netip.Addr]netip.Addr{a: b}
	back := map[netip.Addr]netip.Addr{b: a}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "172.24.0.10") {
			return // the inverse would also move what was there before
		}
		out, ch := mapAddressesInText(s, there)
		if ch.len() == 0 && out != s {
			t.Fatalf("no change reported, but %q became %q", s, out)
		}
		if again, _ := mapAddressesInText(out, back); again != s {
			t.Fatalf("%q -> %q -> %q: not reversible", s, out, again)
		}
	})
}
