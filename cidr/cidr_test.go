package cidr_test

import (
	"bytes"
	"errors"
	"math/big"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/cidr"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func TestParse(t *testing.T) {
	for _, s := range []string{"10.96.0.0/12", "172.24.0.0/16", "0.0.0.0/0", "10.0.0.1/32", "fd00:10:96::/108", "::/0", "fd00::1/128"} {
		p, err := cidr.Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if p.String() != s {
			t.Errorf("Parse(%q) = %s, want the same prefix", s, p)
		}
	}
	// Surrounding blanks (from a comma-separated flag) are tolerated.
	if p, err := cidr.Parse(" 172.24.0.0/16 "); err != nil || p != pfx("172.24.0.0/16") {
		t.Errorf("Parse with blanks = %v, %v", p, err)
	}
	for _, c := range []struct{ in, want string }{
		{"10.96.0.1/12", "host bits set; the network is 10.96.0.0/12"},
		{"192.168.1.0/16", "host bits set; the network is 192.168.0.0/16"},
		{"fd00:10:96::1/108", "host bits set; the network is fd00:10:96::/108"},
		{"::ffff:10.0.0.0/104", "IPv4-mapped"},
		{"", "is not a CIDR"},
		{"banana", "is not a CIDR"},
		{"10.0.0.0", "is not a CIDR"},
		{"10.0.0.0/33", "is not a CIDR"},
		{"10.0.0.0/-1", "is not a CIDR"},
		{"10.0.0/8", "is not a CIDR"},
		{"fd00::/129", "is not a CIDR"},
		{"10.0.0.0/8,fd00::/8", "is not a CIDR"},
	} {
		_, err := cidr.Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error containing %q", c.in, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.in) {
			t.Errorf("Parse(%q) = %q, want it to quote the input and say %q", c.in, err, c.want)
		}
	}
}

func TestParseList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // the prefixes, in order; nil when refused
		err  string   // a part of the error when refused
	}{
		{in: "172.24.0.0/16", want: []string{"172.24.0.0/16"}},
		{in: "fd00:10:96::/108", want: []string{"fd00:10:96::/108"}},
		{in: "172.24.0.0/16,fd00:10:96::/108", want: []string{"172.24.0.0/16", "fd00:10:96::/108"}},
		{in: "fd00:10:96::/108,172.24.0.0/16", want: []string{"fd00:10:96::/108", "172.24.0.0/16"}}, // order kept: the first is the primary family
		{in: " 172.24.0.0/16 , fd00:10:96::/108 ", want: []string{"172.24.0.0/16", "fd00:10:96::/108"}},
		{in: "\t10.0.0.0/8\n", want: []string{"10.0.0.0/8"}},

		{in: "172.24.0.0/16,172.25.0.0/16", err: `"172.24.0.0/16,172.25.0.0/16": two CIDRs must be one IPv4 and one IPv6`},
		{in: "fd00::/64,fd01::/64", err: "two CIDRs must be one IPv4 and one IPv6"},
		{in: "10.0.0.0/8,10.0.0.0/8", err: "two CIDRs must be one IPv4 and one IPv6"},
		{in: "172.24.0.0/16,fd00::/108,10.0.0.0/16", err: "at most two CIDRs (one per family)"},
		{in: "10.0.0.0/8,,fd00::/8", err: "at most two CIDRs"},
		{in: "172.24.0.1/16", err: `"172.24.0.1/16" has host bits set; the network is 172.24.0.0/16`},
		{in: "172.24.0.0/16,fd00:10:96::1/108", err: "the network is fd00:10:96::/108"},
		{in: "::ffff:10.0.0.0/104", err: "IPv4-mapped"},
		{in: "", err: `"" is not a CIDR`},
		{in: " ", err: `" " is not a CIDR`},
		{in: ",", err: `"" is not a CIDR`},
		{in: "10.0.0.0/8,", err: `"" is not a CIDR`},
		{in: ",10.0.0.0/8", err: `"" is not a CIDR`},
		{in: "10.0.0.0/8 fd00::/8", err: "is not a CIDR"},
		{in: "10.0.0.0/8;fd00::/8", err: "is not a CIDR"},
		{in: "banana,fd00::/8", err: `"banana" is not a CIDR`},
		{in: "10.0.0.0", err: `"10.0.0.0" is not a CIDR`},
		{in: "fe80::/64%eth0", err: "is not a CIDR"},
	} {
		got, err := cidr.ParseList(c.in)
		if c.want == nil {
			if err == nil {
				t.Errorf("ParseList(%q) = %v, want an error containing %q", c.in, got, c.err)
			} else if !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseList(%q) = %q, want it to say %q", c.in, err, c.err)
			} else if strings.Contains(err.Error(), "--") {
				t.Errorf("ParseList(%q) = %q: a library error names no flag", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseList(%q): %v", c.in, err)
			continue
		}
		var gotS []string
		for _, p := range got {
			gotS = append(gotS, p.String())
		}
		if !slices.Equal(gotS, c.want) {
			t.Errorf("ParseList(%q) = %v, want %v", c.in, gotS, c.want)
		}
	}
}

func TestOffsetAddrAtRoundTrip(t *testing.T) {
	for _, c := range []struct {
		p   string
		a   string
		off int64
	}{
		{"10.96.0.0/12", "10.96.0.0", 0},
		{"10.96.0.0/12", "10.96.0.1", 1},
		{"10.96.0.0/12", "10.96.0.10", 10},
		{"10.96.0.0/12", "10.97.1.2", 65536 + 256 + 2},
		{"10.96.0.0/12", "10.111.255.255", 1<<20 - 1},
		{"192.168.0.0/16", "192.168.255.254", 65534},
		{"0.0.0.0/0", "255.255.255.255", 1<<32 - 1},
		{"fd00:10:96::/108", "fd00:10:96::a", 10},
		{"fd00:10:96::/108", "fd00:10:96::2:1", 0x20001},
		{"fd00:10:96::/108", "fd00:10:96::f:ffff", 1<<20 - 1},
	} {
		p, a := pfx(c.p), addr(c.a)
		off, err := cidr.Offset(p, a)
		if err != nil || off.Int64() != c.off {
			t.Errorf("Offset(%s, %s) = %v, %v; want %d", p, a, off, err, c.off)
			continue
		}
		back, err := cidr.AddrAt(p, off)
		if err != nil || back != a {
			t.Errorf("AddrAt(%s, %s) = %v, %v; want %s", p, off, back, err, a)
		}
	}
	// The IPv6 offsets beyond 64 bits are exact.
	p := pfx("::/0")
	a := addr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe")
	off, err := cidr.Offset(p, a)
	want := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(2))
	if err != nil || off.Cmp(want) != 0 {
		t.Fatalf("Offset(::/0, %s) = %v, %v; want 2^128-2", a, off, err)
	}
	if back, err := cidr.AddrAt(p, off); err != nil || back != a {
		t.Errorf("AddrAt(::/0, 2^128-2) = %v, %v", back, err)
	}

	// Refusals.
	if _, err := cidr.Offset(pfx("10.96.0.0/12"), addr("10.112.0.0")); err == nil {
		t.Error("Offset of an address outside the prefix succeeded")
	}
	if _, err := cidr.Offset(pfx("10.96.0.0/12"), addr("::ffff:10.96.0.1")); err == nil {
		t.Error("Offset of an IPv4-mapped IPv6 address in an IPv4 prefix succeeded")
	}
	for _, off := range []*big.Int{big.NewInt(-1), big.NewInt(1 << 20), big.NewInt(1<<20 + 5)} {
		_, err := cidr.AddrAt(pfx("10.96.0.0/12"), off)
		if !errors.Is(err, cidr.ErrDoesNotFit) {
			t.Errorf("AddrAt(10.96.0.0/12, %s) error = %v, want ErrDoesNotFit", off, err)
		}
	}
	if a, err := cidr.AddrAt(pfx("10.96.0.0/12"), big.NewInt(1<<20-1)); err != nil || a != addr("10.111.255.255") {
		t.Errorf("AddrAt(last) = %v, %v", a, err)
	}
}

func TestSize(t *testing.T) {
	for _, c := range []struct {
		p    string
		want string
	}{
		{"10.0.0.1/32", "1"},
		{"10.0.0.0/24", "256"},
		{"10.96.0.0/12", "1048576"},
		{"0.0.0.0/0", "4294967296"},
		{"fd00::/108", "1048576"},
		{"::/0", "340282366920938463463374607431768211456"},
	} {
		if got := cidr.Size(pfx(c.p)).String(); got != c.want {
			t.Errorf("Size(%s) = %s, want %s", c.p, got, c.want)
		}
	}
}

func mustMapper(t *testing.T, old, new string) *cidr.Mapper {
	t.Helper()
	m, err := cidr.NewMapper(pfx(old), pfx(new))
	if err != nil {
		t.Fatalf("NewMapper(%s, %s): %v", old, new, err)
	}
	return m
}

func TestMapperMap(t *testing.T) {
	for _, c := range []struct {
		old, new string
		in, want string // want "" means ErrDoesNotFit
	}{
		// /16 -> /16: every offset is kept.
		{"192.168.0.0/16", "172.24.0.0/16", "192.168.0.1", "172.24.0.1"},
		{"192.168.0.0/16", "172.24.0.0/16", "192.168.0.10", "172.24.0.10"},
		{"192.168.0.0/16", "172.24.0.0/16", "192.168.200.14", "172.24.200.14"},
		{"192.168.0.0/16", "172.24.0.0/16", "192.168.255.254", "172.24.255.254"},
		// /16 -> /12 grow: the offset, not the octets, is kept.
		{"192.168.0.0/16", "10.96.0.0/12", "192.168.0.10", "10.96.0.10"},
		{"192.168.0.0/16", "10.96.0.0/12", "192.168.200.14", "10.96.200.14"},
		{"192.168.0.0/16", "10.96.0.0/12", "192.168.255.255", "10.96.255.255"},
		{"10.96.0.0/20", "172.16.0.0/12", "10.96.15.254", "172.16.15.254"},
		// /16 -> /20 shrink: offsets below 4096 fit, the rest does not.
		{"192.168.0.0/16", "172.24.0.0/20", "192.168.0.1", "172.24.0.1"},
		{"192.168.0.0/16", "172.24.0.0/20", "192.168.15.255", "172.24.15.255"},
		{"192.168.0.0/16", "172.24.0.0/20", "192.168.16.0", ""},
		{"192.168.0.0/16", "172.24.0.0/20", "192.168.200.14", ""},
		// IPv6.
		{"fd00:10:96::/108", "fd00:20:96::/108", "fd00:10:96::a", "fd00:20:96::a"},
		{"fd00:10:96::/108", "fd00:20:96::/112", "fd00:10:96::ffff", "fd00:20:96::ffff"},
		{"fd00:10:96::/108", "fd00:20:96::/112", "fd00:10:96::1:0", ""},
	} {
		m := mustMapper(t, c.old, c.new)
		got, err := m.Map(addr(c.in))
		if c.want == "" {
			if !errors.Is(err, cidr.ErrDoesNotFit) {
				t.Errorf("%s -> %s: Map(%s) = %v, %v; want ErrDoesNotFit", c.old, c.new, c.in, got, err)
			}
			continue
		}
		if err != nil || got != addr(c.want) {
			t.Errorf("%s -> %s: Map(%s) = %v, %v; want %s", c.old, c.new, c.in, got, err, c.want)
		}
	}
	m := mustMapper(t, "192.168.0.0/16", "172.24.0.0/16")
	if _, err := m.Map(addr("10.0.0.1")); err == nil || errors.Is(err, cidr.ErrDoesNotFit) {
		t.Errorf("Map of an address outside the old range = %v, want a 'not in' error", err)
	}
	if _, err := m.Map(addr("fd00::1")); err == nil {
		t.Error("Map of an IPv6 address through an IPv4 mapper succeeded")
	}
}

func TestNewMapperFamilies(t *testing.T) {
	_, err := cidr.NewMapper(pfx("192.168.0.0/16"), pfx("fd00:20:96::/108"))
	if err == nil || !strings.Contains(err.Error(), "IPv4 192.168.0.0/16") || !strings.Contains(err.Error(), "IPv6 fd00:20:96::/108") {
		t.Errorf("NewMapper across families = %v, want an error naming both families", err)
	}
	m, err := cidr.NewMapper(pfx("192.168.1.0/16"), pfx("172.24.9.9/16"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Old != pfx("192.168.0.0/16") || m.New != pfx("172.24.0.0/16") {
		t.Errorf("NewMapper kept host bits: %+v", m)
	}
}

func TestMapperMapPrefix(t *testing.T) {
	for _, c := range []struct {
		old, new, in, want string
	}{
		{"10.244.0.0/16", "10.55.0.0/16", "10.244.0.0/24", "10.55.0.0/24"},
		{"10.244.0.0/16", "10.55.0.0/16", "10.244.8.0/21", "10.55.8.0/21"},
		{"10.244.0.0/16", "10.55.0.0/16", "10.244.16.16/28", "10.55.16.16/28"},
		{"10.244.0.0/16", "10.55.0.0/16", "10.244.0.0/16", "10.55.0.0/16"},
		{"10.244.0.0/16", "10.0.0.0/8", "10.244.255.0/24", "10.0.255.0/24"},
		{"10.244.0.0/16", "10.55.0.0/20", "10.244.15.0/24", "10.55.15.0/24"},
		{"10.244.0.0/16", "10.55.0.0/20", "10.244.8.0/21", "10.55.8.0/21"},
		{"10.244.0.0/16", "10.55.0.0/16", "10.244.1.7/24", "10.55.1.0/24"}, // host bits dropped
		{"fd00:10:244::/56", "fd00:55::/56", "fd00:10:244:2::/64", "fd00:55:0:2::/64"},
	} {
		m := mustMapper(t, c.old, c.new)
		got, err := m.MapPrefix(pfx(c.in))
		if err != nil || got != pfx(c.want) {
			t.Errorf("%s -> %s: MapPrefix(%s) = %v, %v; want %s", c.old, c.new, c.in, got, err, c.want)
			continue
		}
		if got.Bits() != pfx(c.in).Bits() {
			t.Errorf("MapPrefix(%s) changed the mask to /%d", c.in, got.Bits())
		}
	}
	for _, c := range []struct {
		old, new, in string
		fit          bool // the error wraps ErrDoesNotFit (else: not inside the old range)
		say          string
	}{
		{"10.244.0.0/16", "10.55.0.0/22", "10.244.8.0/21", true, "larger than the whole new range"},
		{"10.244.0.0/16", "10.55.0.0/20", "10.244.0.0/16", true, "larger than the whole new range"},
		{"10.244.0.0/16", "10.55.0.0/20", "10.244.16.16/28", true, "at offset 4112"},
		{"10.244.0.0/16", "10.55.0.0/20", "10.244.16.0/24", true, "does not fit"},
		{"10.244.0.0/16", "10.55.0.0/16", "10.99.0.0/24", false, "is not inside 10.244.0.0/16"},
		{"10.244.0.0/16", "10.55.0.0/16", "10.0.0.0/8", false, "is not inside"},
		{"10.244.0.0/16", "10.55.0.0/16", "fd00::/64", false, "is not inside"},
	} {
		m := mustMapper(t, c.old, c.new)
		got, err := m.MapPrefix(pfx(c.in))
		if err == nil {
			t.Errorf("%s -> %s: MapPrefix(%s) = %v, want an error", c.old, c.new, c.in, got)
			continue
		}
		if errors.Is(err, cidr.ErrDoesNotFit) != c.fit || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%s -> %s: MapPrefix(%s) error %q; want ErrDoesNotFit=%v and %q", c.old, c.new, c.in, err, c.fit, c.say)
		}
	}
}

func TestUsable(t *testing.T) {
	for _, c := range []struct {
		p    string
		off  int64
		want bool
	}{
		{"10.96.0.0/24", -1, false},
		{"10.96.0.0/24", 0, false}, // network
		{"10.96.0.0/24", 1, true},
		{"10.96.0.0/24", 254, true},
		{"10.96.0.0/24", 255, false}, // IPv4 broadcast
		{"10.96.0.0/24", 256, false}, // beyond
		{"192.168.0.0/16", 65534, true},
		{"192.168.0.0/16", 65535, false},
		{"10.0.0.0/30", 1, true},
		{"10.0.0.0/30", 2, true},
		{"10.0.0.0/30", 3, false},
		{"10.0.0.0/32", 0, false},
		{"fd00::/120", 0, false},
		{"fd00::/120", 255, true}, // no broadcast in IPv6
		{"fd00::/120", 256, false},
		{"fd00::/108", 70000, true}, // beyond the bitmap, but the IPAddress allocator takes it
	} {
		if got := cidr.Usable(pfx(c.p), big.NewInt(c.off)); got != c.want {
			t.Errorf("Usable(%s, %d) = %v, want %v", c.p, c.off, got, c.want)
		}
	}
}

func TestServiceRangeCount(t *testing.T) {
	for _, c := range []struct {
		p    string
		want int64
	}{
		{"10.96.0.0/12", 1<<20 - 2},
		{"192.168.0.0/16", 65534},
		{"10.0.0.0/24", 254},
		{"10.0.0.0/30", 2},
		{"10.0.0.0/31", 0},
		{"10.0.0.0/32", 0},
		{"fd00::/120", 255},
		{"fd00::/112", 65535},
		{"fd00::/108", 65535}, // capped at 65536 addresses, minus the network address
		{"fd00::/64", 65535},
		{"fd00::/128", 0},
	} {
		r := cidr.NewServiceRange(pfx(c.p))
		if r.Count.Int64() != c.want || r.Prefix != pfx(c.p) {
			t.Errorf("NewServiceRange(%s) = %s %s, want count %d", c.p, r.Prefix, r.Count, c.want)
		}
	}
}

// refBitmap is kube-apiserver's encoding, written out independently of the
// package: bit i (value 2^i) stands for network+1+i, and the data is
// big.Int.Bytes() of the bits (big-endian, minimal).
func refBitmap(p netip.Prefix, as []netip.Addr) []byte {
	base := new(big.Int).SetBytes(p.Masked().Addr().AsSlice())
	bits := new(big.Int)
	for _, a := range as {
		i := new(big.Int).SetBytes(a.AsSlice())
		i.Sub(i, base).Sub(i, big.NewInt(1))
		bits.SetBit(bits, int(i.Int64()), 1)
	}
	return bits.Bytes()
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, addr(s))
	}
	return out
}

func TestBitmapDocumentedEncoding(t *testing.T) {
	// The example of the facts file (C.2): 10.96.0.1 and 10.96.0.10 in
	// 10.96.0.0/12 are bits 0 and 9: 0x0201, two bytes.
	p := pfx("10.96.0.0/12")
	got, err := cidr.Bitmap(p, addrs("10.96.0.1", "10.96.0.10"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte{0x02, 0x01}) {
		t.Fatalf("Bitmap(10.96.0.0/12, .1 .10) = % x, want 02 01", got)
	}
	// Order and duplicates do not matter.
	if got2, _ := cidr.Bitmap(p, addrs("10.96.0.10", "10.96.0.1", "10.96.0.10")); !bytes.Equal(got2, got) {
		t.Errorf("Bitmap depends on order or duplicates: % x", got2)
	}
	// Nothing allocated: empty, not a zero byte.
	if got, err := cidr.Bitmap(p, nil); err != nil || len(got) != 0 {
		t.Errorf("Bitmap of nothing = % x, %v; want empty", got, err)
	}
	for _, c := range []struct {
		p     string
		ips   []string
		want  []byte // nil: compare with refBitmap
		bytes int
	}{
		{"10.96.0.0/12", []string{"10.96.0.1"}, []byte{0x01}, 1},
		{"10.96.0.0/12", []string{"10.96.0.8"}, []byte{0x80}, 1},
		{"10.96.0.0/12", []string{"10.96.0.9"}, []byte{0x01, 0x00}, 2},
		{"10.96.0.0/12", []string{"10.96.0.2", "10.96.0.3", "10.96.0.17"}, []byte{0x01, 0x00, 0x06}, 3},
		{"192.168.0.0/16", []string{"192.168.255.254"}, nil, 8192}, // bit 65533: 0x20 then 8191 zero bytes
		{"192.168.0.0/16", []string{"192.168.0.1", "192.168.0.10", "192.168.3.7", "192.168.200.14", "192.168.255.254"}, nil, 8192},
		{"fd00:10:96::/108", []string{"fd00:10:96::1", "fd00:10:96::a"}, []byte{0x02, 0x01}, 2},
		{"fd00:10:96::/108", []string{"fd00:10:96::ffff"}, nil, 8192}, // the last bit of the capped bitmap
	} {
		got, err := cidr.Bitmap(pfx(c.p), addrs(c.ips...))
		if err != nil {
			t.Errorf("Bitmap(%s, %v): %v", c.p, c.ips, err)
			continue
		}
		want := c.want
		if want == nil {
			want = refBitmap(pfx(c.p), addrs(c.ips...))
		}
		if !bytes.Equal(got, want) || len(got) != c.bytes {
			t.Errorf("Bitmap(%s, %v) = %d bytes starting % x, want %d bytes % x", c.p, c.ips, len(got), head(got), c.bytes, head(want))
		}
		if len(got) > 0 && got[0] == 0 {
			t.Errorf("Bitmap(%s, %v) has a leading zero byte: not minimal", c.p, c.ips)
		}
	}
	if got, _ := cidr.Bitmap(pfx("192.168.0.0/16"), addrs("192.168.255.254")); got[0] != 0x20 {
		t.Errorf("bit 65533 encodes as first byte %#x, want 0x20", got[0])
	}
}

func head(b []byte) []byte {
	if len(b) > 4 {
		return b[:4]
	}
	return b
}

func TestBitmapRefusesUnallocatable(t *testing.T) {
	for _, c := range []struct{ p, ip string }{
		{"10.96.0.0/12", "10.96.0.0"},      // network
		{"10.96.0.0/12", "10.111.255.255"}, // IPv4 broadcast
		{"10.96.0.0/12", "10.112.0.1"},     // outside
		{"fd00:10:96::/108", "fd00:10:96::"},
		{"fd00:10:96::/108", "fd00:10:96::1:0"}, // offset 65536: beyond the 65536-address bitmap
		{"fd00:10:96::/108", "fd00:10:96::2:1"},
		{"10.96.0.0/12", "fd00::1"},
	} {
		if b, err := cidr.Bitmap(pfx(c.p), addrs(c.ip)); err == nil {
			t.Errorf("Bitmap(%s, %s) = % x, want an error", c.p, c.ip, head(b))
		}
	}
}

func TestBitmapAddrsInverse(t *testing.T) {
	for _, c := range []struct {
		p   string
		ips []string
	}{
		{"10.96.0.0/12", []string{"10.96.0.1", "10.96.0.10"}},
		{"10.96.0.0/12", []string{"10.111.255.254"}},
		{"192.168.0.0/16", []string{"192.168.0.1", "192.168.0.10", "192.168.3.7", "192.168.200.14", "192.168.255.254"}},
		{"10.0.0.0/30", []string{"10.0.0.1", "10.0.0.2"}},
		{"fd00:10:96::/108", []string{"fd00:10:96::1", "fd00:10:96::a", "fd00:10:96::ffff"}},
		{"fd00::/120", []string{"fd00::ff"}},
		{"172.24.0.0/16", nil},
	} {
		p := pfx(c.p)
		b, err := cidr.Bitmap(p, addrs(c.ips...))
		if err != nil {
			t.Fatalf("Bitmap(%s): %v", c.p, err)
		}
		back, err := cidr.BitmapAddrs(p, b)
		if err != nil {
			t.Fatalf("BitmapAddrs(%s): %v", c.p, err)
		}
		want := addrs(c.ips...)
		slices.SortFunc(want, func(a, b netip.Addr) int { return a.Compare(b) })
		if !slices.Equal(back, want) {
			t.Errorf("BitmapAddrs(%s, Bitmap(%v)) = %v", c.p, c.ips, back)
		}
	}
	// Decoding the documented example.
	got, err := cidr.BitmapAddrs(pfx("10.96.0.0/12"), []byte{0x02, 0x01})
	if err != nil || !slices.Equal(got, addrs("10.96.0.1", "10.96.0.10")) {
		t.Errorf("BitmapAddrs(02 01) = %v, %v", got, err)
	}
	// Leading zero bytes are accepted on read (the value is a number).
	got, err = cidr.BitmapAddrs(pfx("10.96.0.0/12"), []byte{0x00, 0x00, 0x02, 0x01})
	if err != nil || !slices.Equal(got, addrs("10.96.0.1", "10.96.0.10")) {
		t.Errorf("BitmapAddrs(00 00 02 01) = %v, %v", got, err)
	}
	// A bit beyond the range: the broadcast of a /30 (bit 2), and bit 65535 of
	// an IPv6 bitmap (which holds 65535 addresses after the network address).
	if got, err := cidr.BitmapAddrs(pfx("10.0.0.0/30"), []byte{0x04}); err == nil {
		t.Errorf("BitmapAddrs(/30, bit 2) = %v, want an error", got)
	}
	big65535 := new(big.Int).SetBit(new(big.Int), 65535, 1).Bytes()
	if got, err := cidr.BitmapAddrs(pfx("fd00::/64"), big65535); err == nil {
		t.Errorf("BitmapAddrs(/64, bit 65535) = %d addresses, want an error (the IPv6 bitmap is capped at 65536 addresses)", len(got))
	}
	big65534 := new(big.Int).SetBit(new(big.Int), 65534, 1).Bytes()
	if got, err := cidr.BitmapAddrs(pfx("fd00::/64"), big65534); err != nil || !slices.Equal(got, addrs("fd00::ffff")) {
		t.Errorf("BitmapAddrs(/64, bit 65534) = %v, %v; want fd00::ffff", got, err)
	}
}

func TestUnusable(t *testing.T) {
	for _, c := range []struct {
		cidr, want string
	}{
		{"127.0.0.0/16", "overlaps the loopback range 127.0.0.0/8"},
		{"169.254.0.0/16", "overlaps the link-local range 169.254.0.0/16"},
		{"224.0.0.0/8", "overlaps the multicast range 224.0.0.0/4"},
		{"0.0.0.0/8", "overlaps the unspecified address 0.0.0.0/32"},
		{"96.0.0.0/3", "overlaps the loopback range 127.0.0.0/8"}, // holds all of it
		{"::1/128", "overlaps the loopback address ::1/128"},
		{"fe80::/64", "overlaps the link-local range fe80::/10"},
		{"ff00::/8", "overlaps the multicast range ff00::/8"},
		{"::/64", "overlaps the unspecified address ::/128"},
		{"172.24.0.0/16", ""}, {"10.0.0.0/8", ""}, {"192.168.0.0/16", ""}, {"100.64.0.0/10", ""},
		{"fd00:10:96::/108", ""}, {"2001:db8::/64", ""}, {"128.0.0.0/3", ""},
	} {
		if got := cidr.Unusable(netip.MustParsePrefix(c.cidr)); got != c.want {
			t.Errorf("Unusable(%s) = %q, want %q", c.cidr, got, c.want)
		}
	}
}
