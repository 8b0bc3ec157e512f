package cidr_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/cidr"
)

// prefixFrom builds a canonical prefix of the family v6 from raw bytes.
func prefixFrom(v6 bool, raw []byte, bits uint8) netip.Prefix {
	n := 4
	if v6 {
		n = 16
	}
	b := make([]byte, n)
	copy(b, raw)
	a, _ := netip.AddrFromSlice(b)
	p, _ := a.Prefix(int(bits) % (n*8 + 1))
	return p
}

// offsetFrom reads an offset inside p from raw bytes (reduced modulo p's size).
func offsetFrom(p netip.Prefix, raw []byte) *big.Int {
	off := new(big.Int).SetBytes(raw)
	return off.Mod(off, cidr.Size(p))
}

// FuzzMapper checks Mapper.Map on arbitrary pairs of ranges of one family:
// it keeps the offset whenever the offset fits the new range and fails with
// ErrDoesNotFit otherwise, every result is inside the new range, and two
// different addresses never map to the same one.
func FuzzMapper(f *testing.F) {
	for _, s := range []struct {
		v6          bool
		old         []byte
		oldBits     uint8
		new         []byte
		newBits     uint8
		a, b        []byte
		description string
	}{
		{false, []byte{192, 168, 0, 0}, 16, []byte{172, 24, 0, 0}, 16, []byte{0, 10}, []byte{200, 14}, "same size"},
		{false, []byte{192, 168, 0, 0}, 16, []byte{10, 96, 0, 0}, 12, []byte{255, 254}, []byte{0, 1}, "grow"},
		{false, []byte{192, 168, 0, 0}, 16, []byte{172, 24, 0, 0}, 20, []byte{15, 255}, []byte{16, 0}, "shrink, one fits"},
		{false, []byte{10, 96, 0, 0}, 20, []byte{172, 16, 0, 0}, 12, []byte{15, 254}, []byte{0, 10}, "grow from /20"},
		{false, []byte{0, 0, 0, 0}, 0, []byte{10, 0, 0, 0}, 32, []byte{1}, []byte{0}, "/0 to /32"},
		{true, []byte{0xfd, 0, 0, 0x10, 0, 0x96}, 108, []byte{0xfd, 0, 0, 0x20, 0, 0x96}, 108, []byte{0x0a}, []byte{2, 0, 1}, "IPv6 /108"},
		{true, []byte{0xfd, 0}, 64, []byte{0xfd, 1}, 112, []byte{1, 0, 0}, []byte{0xff, 0xff}, "IPv6 shrink"},
		{true, nil, 0, []byte{0x20, 0x01, 0x0d, 0xb8}, 32, bytes.Repeat([]byte{0xff}, 16), []byte{7}, "IPv6 whole space"},
	} {
		f.Add(s.v6, s.old, s.oldBits, s.new, s.newBits, s.a, s.b)
	}
	f.Fuzz(func(t *testing.T, v6 bool, oldRaw []byte, oldBits uint8, newRaw []byte, newBits uint8, aRaw, bRaw []byte) {
		old, nw := prefixFrom(v6, oldRaw, oldBits), prefixFrom(v6, newRaw, newBits)
		m, err := cidr.NewMapper(old, nw)
		if err != nil {
			t.Fatalf("NewMapper(%s, %s): %v", old, nw, err)
		}
		offA, offB := offsetFrom(old, aRaw), offsetFrom(old, bRaw)
		a, err := cidr.AddrAt(old, offA)
		if err != nil {
			t.Fatalf("AddrAt(%s, %s): %v", old, offA, err)
		}
		b, err := cidr.AddrAt(old, offB)
		if err != nil {
			t.Fatalf("AddrAt(%s, %s): %v", old, offB, err)
		}
		check := func(in netip.Addr, off *big.Int) (netip.Addr, bool) {
			out, err := m.Map(in)
			fits := off.Cmp(cidr.Size(nw)) < 0
			if !fits {
				if !errors.Is(err, cidr.ErrDoesNotFit) {
					t.Fatalf("%s -> %s: Map(%s) at offset %s = %v, %v; want ErrDoesNotFit", old, nw, in, off, out, err)
				}
				return netip.Addr{}, false
			}
			if err != nil {
				t.Fatalf("%s -> %s: Map(%s) at offset %s: %v", old, nw, in, off, err)
			}
			if !nw.Contains(out) {
				t.Fatalf("%s -> %s: Map(%s) = %s, outside the new range", old, nw, in, out)
			}
			got, err := cidr.Offset(nw, out)
			if err != nil || got.Cmp(off) != 0 {
				t.Fatalf("%s -> %s: Map(%s) = %s at offset %v, want offset %s", old, nw, in, out, got, off)
			}
			return out, true
		}
		ma, okA := check(a, offA)
		mb, okB := check(b, offB)
		if okA && okB && (a == b) != (ma == mb) {
			t.Fatalf("%s -> %s: not injective: %s -> %s and %s -> %s", old, nw, a, ma, b, mb)
		}
	})
}

// FuzzBitmap checks that BitmapAddrs(Bitmap(set)) gives back exactly the set
// (sorted, without duplicates), for any set of allocatable addresses of any
// range, and that the encoding is kube-apiserver's: minimal big-endian bytes
// of the integer with bit i for network+1+i.
func FuzzBitmap(f *testing.F) {
	for _, s := range []struct {
		v6      bool
		network []byte
		bits    uint8
		offsets []byte // big-endian uint16 offsets
	}{
		{false, []byte{10, 96, 0, 0}, 12, []byte{0, 1, 0, 10}},
		{false, []byte{192, 168, 0, 0}, 16, []byte{0, 1, 0, 10, 3, 7, 200, 14, 255, 254}},
		{false, []byte{10, 0, 0, 0}, 30, []byte{0, 1, 0, 2, 0, 3}},
		{false, []byte{10, 0, 0, 0}, 31, []byte{0, 1}},
		{false, []byte{10, 0, 0, 0}, 24, nil},
		{true, []byte{0xfd, 0, 0, 0x10, 0, 0x96}, 108, []byte{0, 1, 0, 0x0a, 0xff, 0xff}},
		{true, []byte{0xfd}, 120, []byte{0, 0xff, 0, 0x80}},
		{true, []byte{0xfd}, 64, []byte{0xff, 0xfe, 0xff, 0xff, 0, 0}},
	} {
		f.Add(s.v6, s.network, s.bits, s.offsets)
	}
	f.Fuzz(func(t *testing.T, v6 bool, netRaw []byte, bits uint8, offRaw []byte) {
		p := prefixFrom(v6, netRaw, bits)
		count := cidr.NewServiceRange(p).Count
		var set []netip.Addr
		seen := map[netip.Addr]bool{}
		for len(offRaw) >= 2 && count.Sign() > 0 {
			o := new(big.Int).SetUint64(uint64(binary.BigEndian.Uint16(offRaw)))
			offRaw = offRaw[2:]
			o.Mod(o, count).Add(o, big.NewInt(1)) // 1..count: the allocatable offsets
			a, err := cidr.AddrAt(p, o)
			if err != nil {
				t.Fatalf("AddrAt(%s, %s): %v", p, o, err)
			}
			set = append(set, a)
			seen[a] = true
		}
		data, err := cidr.Bitmap(p, set)
		if err != nil {
			t.Fatalf("Bitmap(%s, %v): %v", p, set, err)
		}
		if want := refBitmap(p, set); !bytes.Equal(data, want) {
			t.Fatalf("Bitmap(%s, %v) = % x, want % x", p, set, data, want)
		}
		if len(data) > 0 && data[0] == 0 {
			t.Fatalf("Bitmap(%s) starts with a zero byte: not minimal", p)
		}
		back, err := cidr.BitmapAddrs(p, data)
		if err != nil {
			t.Fatalf("BitmapAddrs(%s): %v", p, err)
		}
		want := make([]netip.Addr, 0, len(seen))
		for a := range seen {
			want = append(want, a)
		}
		slices.SortFunc(want, func(a, b netip.Addr) int { return a.Compare(b) })
		if !slices.Equal(back, want) && (len(back) != 0 || len(want) != 0) {
			t.Fatalf("BitmapAddrs(%s, Bitmap(%v)) = %v, want %v", p, set, back, want)
		}
	})
}

// refParseList is ParseList written with the older net package, as
// kube-apiserver reads its --service-cluster-ip-range (split on commas,
// net.ParseCIDR), plus the refusals of Kubernetes' strict API validation
// that ParseList shares: host bits, IPv4 written as IPv4-mapped IPv6, a
// prefix length with a leading zero; and two CIDRs of one family.
func refParseList(s string) ([]netip.Prefix, bool) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, false
	}
	var out []netip.Prefix
	for _, part := range parts {
		part = strings.TrimSpace(part)
		if _, length, _ := strings.Cut(part, "/"); len(length) > 1 && length[0] == '0' {
			return nil, false
		}
		ip, n, err := net.ParseCIDR(part)
		if err != nil || !ip.Equal(n.IP) {
			return nil, false
		}
		ones, bits := n.Mask.Size()
		if bits == 128 && n.IP.To4() != nil {
			return nil, false
		}
		a, _ := netip.AddrFromSlice(n.IP)
		if bits == 32 {
			a = a.Unmap()
		}
		out = append(out, netip.PrefixFrom(a, ones))
	}
	if len(out) == 2 && out[0].Addr().Is4() == out[1].Addr().Is4() {
		return nil, false
	}
	return out, true
}

// FuzzParseList checks ParseList against refParseList: both accept the same
// lists and give the same prefixes, in order; what ParseList accepts is one
// or two canonical prefixes that read back the same from their own text.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{
		"172.24.0.0/16", "fd00:10:96::/108", "172.24.0.0/16,fd00:10:96::/108", " fd00::/8 , 10.0.0.0/8 ",
		"172.24.0.0/16,172.25.0.0/16", "10.0.0.0/8,fd00::/8,10.0.0.0/8", "172.24.0.1/16", "::ffff:10.0.0.0/104",
		"", ",", "10.0.0.0/8,", "0.0.0.0/0,::/0", "255.255.255.255/32", "10.0.0.0/08", "010.0.0.0/8",
		"fe80::%eth0/64", "1.2.3.4/33", "::/129", "::ffff:0:0/96", "\u00a010.0.0.0/8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := cidr.ParseList(s)
		want, ok := refParseList(s)
		if (err == nil) != ok {
			t.Fatalf("ParseList(%q) = %v, %v; the net package reference accepts: %v (%v)", s, got, err, ok, want)
		}
		if err != nil {
			return
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ParseList(%q) = %v, the net package reference gives %v", s, got, want)
		}
		if len(got) < 1 || len(got) > 2 {
			t.Fatalf("ParseList(%q) = %v: want one or two prefixes", s, got)
		}
		text := make([]string, len(got))
		for i, p := range got {
			if p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("ParseList(%q) gives %s, which is not canonical", s, p)
			}
			text[i] = p.String()
		}
		back, err := cidr.ParseList(strings.Join(text, ","))
		if err != nil || !slices.Equal(back, got) {
			t.Fatalf("ParseList(%q) = %v, but its own text reads back as %v, %v", s, got, back, err)
		}
	})
}
