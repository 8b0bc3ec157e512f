// Package cidr is the address arithmetic behind snapshift's remap rules:
// offsets of addresses and prefixes inside a range, offset-preserving maps
// from an old range to a new one, and the bitmap kube-apiserver's service IP
// allocator stores in its RangeAllocation. It uses net/netip, and math/big
// for offsets (IPv6 ranges exceed 64 bits).
package cidr

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
)

// ErrDoesNotFit is wrapped when an offset is outside the target range.
var ErrDoesNotFit = errors.New("does not fit in the new range")

// Parse parses one CIDR and requires it to be in canonical form: no host
// bits, no zone, IPv4 written as IPv4. Surrounding blanks are ignored.
//
// kube-apiserver masks its --service-cluster-ip-range flag silently
// (k8s.io/utils/net ParseCIDRSloppy: 10.96.0.1/12 runs as 10.96.0.0/12), but
// Kubernetes' strict API validation (k8s.io/apimachinery validation
// IsValidCIDR) refuses a CIDR with "bits set beyond the prefix length" in an
// object's field. snapshift writes the new CIDRs into stored objects
// (ServiceCIDR spec.cidrs, RangeAllocation range, Node podCIDRs), so it
// follows the object rule and refuses, naming the network meant: a typo such
// as 10.55.3.0/16 must not move a cluster to 10.55.0.0/16 unnoticed.
func Parse(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return p, fmt.Errorf("%q is not a CIDR (want e.g. 172.24.0.0/16 or fd00:10:96::/108)", s)
	}
	if p.Addr().Zone() != "" {
		return p, fmt.Errorf("%q: a CIDR has no zone", s)
	}
	if p.Masked() != p {
		return p, fmt.Errorf("%q has host bits set; the network is %s", s, p.Masked())
	}
	if p.Addr().Is4In6() {
		return p, fmt.Errorf("%q is an IPv4-mapped IPv6 CIDR; write it as IPv4", s)
	}
	return p, nil
}

// ParseList parses a dual-stack CIDR list as kubeadm's networking.serviceSubnet
// and kube-apiserver's --service-cluster-ip-range write it: one CIDR, or two
// separated by a comma, one IPv4 and one IPv6, in the order given (the first
// is the primary family). Blanks around each CIDR are ignored; an empty list
// or an empty element is an error. Each CIDR must be canonical (see Parse).
//
// k8s.io/utils/net has ParseCIDRs and IsDualStackCIDRs for the same rules,
// but they work on net.IPNet and mask host bits silently; this package works
// in net/netip and refuses them.
func ParseList(s string) ([]netip.Prefix, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("%q: at most two CIDRs (one per family)", s)
	}
	out := make([]netip.Prefix, len(parts))
	for i, part := range parts {
		p, err := Parse(part)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	if len(out) == 2 && SameFamily(out[0], out[1]) {
		return nil, fmt.Errorf("%q: two CIDRs must be one IPv4 and one IPv6", s)
	}
	return out, nil
}

// Size is the number of addresses in p.
func Size(p netip.Prefix) *big.Int {
	return new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
}

func toInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}

func fromInt(i *big.Int, v4 bool) netip.Addr {
	n := 16
	if v4 {
		n = 4
	}
	b := make([]byte, n)
	i.FillBytes(b)
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Offset is a's distance from p's network address. a must be in p.
func Offset(p netip.Prefix, a netip.Addr) (*big.Int, error) {
	if !p.Contains(a) {
		return nil, fmt.Errorf("%s is not in %s", a, p)
	}
	return new(big.Int).Sub(toInt(a), toInt(p.Masked().Addr())), nil
}

// AddrAt is the address at offset off in p.
func AddrAt(p netip.Prefix, off *big.Int) (netip.Addr, error) {
	if off.Sign() < 0 || off.Cmp(Size(p)) >= 0 {
		return netip.Addr{}, fmt.Errorf("offset %s: %w %s", off, ErrDoesNotFit, p)
	}
	return fromInt(new(big.Int).Add(toInt(p.Masked().Addr()), off), p.Addr().Is4()), nil
}

// SameFamily reports whether both prefixes are IPv4 or both IPv6.
func SameFamily(a, b netip.Prefix) bool { return a.Addr().Is4() == b.Addr().Is4() }

// Family names p's family as Kubernetes does.
func Family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// ServiceRange is the part of a service CIDR kube-apiserver allocates from
// with its bitmap allocator: the network address is never used, nor the
// IPv4 broadcast address, and an IPv6 bitmap covers at most 65536 addresses.
type ServiceRange struct {
	Prefix netip.Prefix
	// Count is how many allocatable offsets follow the network address
	// (the first is offset 1).
	Count *big.Int
}

// maxIPv6Bitmap is kube-apiserver's cap on an IPv6 bitmap's size.
const maxIPv6Bitmap = 1 << 16

// NewServiceRange describes p as the service IP allocator sees it.
func NewServiceRange(p netip.Prefix) ServiceRange {
	max := Size(p)
	if p.Addr().Is4() {
		max.Sub(max, big.NewInt(1)) // broadcast
	} else if max.Cmp(big.NewInt(maxIPv6Bitmap)) > 0 {
		max = big.NewInt(maxIPv6Bitmap)
	}
	max.Sub(max, big.NewInt(1)) // network address
	if max.Sign() < 0 {
		max.SetInt64(0)
	}
	return ServiceRange{Prefix: p, Count: max}
}

// Usable reports whether offset off (from the network address) may hold a
// Service IP: not the network address, not the IPv4 broadcast address, and
// inside the range. IPv6 addresses beyond the bitmap are usable (the
// IPAddress allocator takes any address in the ServiceCIDR).
func Usable(p netip.Prefix, off *big.Int) bool {
	size := Size(p)
	if off.Sign() <= 0 || off.Cmp(size) >= 0 {
		return false
	}
	if p.Addr().Is4() && off.Cmp(new(big.Int).Sub(size, big.NewInt(1))) == 0 {
		return false
	}
	return true
}

// Bitmap encodes the allocated addresses of a service range as the
// RangeAllocation stores them: bit i set for address network+1+i, the
// bytes of the big integer, big-endian, minimal (empty when nothing is
// allocated). Addresses outside the bitmap range are an error.
func Bitmap(p netip.Prefix, addrs []netip.Addr) ([]byte, error) {
	r := NewServiceRange(p)
	bits := new(big.Int)
	for _, a := range addrs {
		off, err := Offset(p, a)
		if err != nil {
			return nil, err
		}
		i := off.Sub(off, big.NewInt(1))
		if i.Sign() < 0 || i.Cmp(r.Count) >= 0 {
			return nil, fmt.Errorf("%s is not allocatable in %s (network, broadcast or beyond the bitmap)", a, p)
		}
		bits.SetBit(bits, int(i.Int64()), 1)
	}
	return bits.Bytes(), nil
}

// BitmapAddrs decodes a RangeAllocation bitmap back to addresses, in order.
func BitmapAddrs(p netip.Prefix, data []byte) ([]netip.Addr, error) {
	bits := new(big.Int).SetBytes(data)
	r := NewServiceRange(p)
	if bits.BitLen() > int(r.Count.Int64()) {
		return nil, fmt.Errorf("bitmap has bit %d set, beyond the %s addresses of %s", bits.BitLen()-1, r.Count, p)
	}
	var out []netip.Addr
	base := toInt(p.Masked().Addr())
	for i := 0; i < bits.BitLen(); i++ {
		if bits.Bit(i) == 1 {
			out = append(out, fromInt(new(big.Int).Add(base, big.NewInt(int64(i+1))), p.Addr().Is4()))
		}
	}
	return out, nil
}

// Mapper maps prefixes from an old range to a new one of the same family,
// keeping each one's offset from the network address.
type Mapper struct {
	Old, New netip.Prefix
}

// NewMapper checks that old and new are canonical and of one family.
func NewMapper(old, new netip.Prefix) (*Mapper, error) {
	if !SameFamily(old, new) {
		return nil, fmt.Errorf("cannot map %s %s to %s %s: the families differ", Family(old), old, Family(new), new)
	}
	return &Mapper{Old: old.Masked(), New: new.Masked()}, nil
}

// MapPrefix maps a prefix inside the old range (a node's pod CIDR) to the
// prefix of the same length at the same offset in the new range.
func (m *Mapper) MapPrefix(p netip.Prefix) (netip.Prefix, error) {
	p = p.Masked()
	if p.Bits() < m.Old.Bits() || !m.Old.Contains(p.Addr()) {
		return netip.Prefix{}, fmt.Errorf("%s is not inside %s", p, m.Old)
	}
	if p.Bits() < m.New.Bits() {
		return netip.Prefix{}, fmt.Errorf("%s (/%d) is larger than the whole new range %s: %w", p, p.Bits(), m.New, ErrDoesNotFit)
	}
	off, _ := Offset(m.Old, p.Addr())
	last := new(big.Int).Add(off, Size(p))
	if last.Cmp(Size(m.New)) > 0 {
		return netip.Prefix{}, fmt.Errorf("%s at offset %s: %w %s", p, off, ErrDoesNotFit, m.New)
	}
	a, err := AddrAt(m.New, off)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, p.Bits()), nil
}

// PairOf returns the old range of a's family and the new range paired
// with it (old[i] with new[i]), if there is one.
func PairOf(old, new []netip.Prefix, a netip.Addr) (o, n netip.Prefix, ok bool) {
	for i, p := range old {
		if p.Addr().Is4() == a.Is4() && i < len(new) {
			return p, new[i], true
		}
	}
	return o, n, false
}

// Join writes a list of CIDRs (or addresses) as kube-apiserver's flags and
// the Kubernetes objects hold them: comma-separated, no spaces.
func Join[T fmt.Stringer](ps []T) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// Split splits a comma-separated list as kubeadm's ClusterConfiguration
// holds it, trimming spaces and dropping empty items, without parsing them.
func Split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// special are the ranges no service or pod range may overlap: kube-apiserver
// refuses their addresses for a Service's endpoints (ValidateEndpointIP:
// unspecified, loopback, link-local), a multicast address is no host's, and
// a packet to any of them never leaves the host (or the link) it is sent on.
var special = []struct {
	what   string
	prefix netip.Prefix
}{
	{"the unspecified address", netip.MustParsePrefix("0.0.0.0/32")},
	{"the loopback range", netip.MustParsePrefix("127.0.0.0/8")},
	{"the link-local range", netip.MustParsePrefix("169.254.0.0/16")},
	{"the multicast range", netip.MustParsePrefix("224.0.0.0/4")},
	{"the unspecified address", netip.MustParsePrefix("::/128")},
	{"the loopback address", netip.MustParsePrefix("::1/128")},
	{"the link-local range", netip.MustParsePrefix("fe80::/10")},
	{"the multicast range", netip.MustParsePrefix("ff00::/8")},
}

// Unusable says why p cannot be a service or pod range ("overlaps the
// loopback range 127.0.0.0/8"), or "" when it can.
func Unusable(p netip.Prefix) string {
	for _, s := range special {
		if p.Overlaps(s.prefix) {
			return fmt.Sprintf("overlaps %s %s", s.what, s.prefix)
		}
	}
	return ""
}

// UsableNote is what a refusal of an Unusable range tells the user to give.
const UsableNote = "give a range of ordinary unicast addresses (not loopback, link-local or multicast)"

// ParseUsable is ParseList for a range a cluster is to use (a new service or
// pod range): one that Unusable refuses is an error naming why.
func ParseUsable(s string) ([]netip.Prefix, error) {
	ps, err := ParseList(s)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if why := Unusable(p); why != "" {
			return nil, fmt.Errorf("%s %s: %s", p, why, UsableNote)
		}
	}
	return ps, nil
}
