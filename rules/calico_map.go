package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/snapshift/snapshift/cidr"
)

// calicoMap maps Calico's copies of the pod range: pools, blocks and
// addresses of an old pod CIDR go to the same offset in the new one of
// their family (the pod plan's pairs). It needs no snapshot.
type calicoMap struct {
	old, new []netip.Prefix
}

// calicoPlace says where a prefix or address is relative to the move.
type calicoPlace int

const (
	// calicoOther: a family that does not move, or outside both ranges.
	calicoOther calicoPlace = iota
	// calicoMoves: inside the old range of its family.
	calicoMoves
	// calicoDone: already inside the new range (a second run).
	calicoDone
)

// place finds p's old and new range and whether it moves.
func (m calicoMap) place(p netip.Prefix) (o, n netip.Prefix, where calicoPlace) {
	o, n, ok := cidr.PairOf(m.old, m.new, p.Addr())
	switch {
	case !ok:
		return o, n, calicoOther
	case o.Contains(p.Addr()) && p.Bits() >= o.Bits():
		return o, n, calicoMoves
	case n.Contains(p.Addr()) && p.Bits() >= n.Bits():
		return o, n, calicoDone
	}
	return o, n, calicoOther
}

// block maps a block CIDR (or any prefix inside the old range) to the
// prefix of the same length at the same offset in the new range. ok is
// false when p does not move.
func (m calicoMap) block(p netip.Prefix) (netip.Prefix, bool, error) {
	p = p.Masked()
	o, n, where := m.place(p)
	if where != calicoMoves {
		return p, false, nil
	}
	mp, err := cidr.NewMapper(o, n)
	if err != nil {
		return p, false, err
	}
	q, err := mp.MapPrefix(p)
	if err != nil {
		return p, false, err
	}
	return q, q != p, nil
}

// pool maps a pool CIDR: a pool that is the whole old range becomes the
// whole new range (whatever its size); a pool inside it keeps its length
// and offset, like a block.
func (m calicoMap) pool(p netip.Prefix) (netip.Prefix, bool, error) {
	p = p.Masked()
	o, n, where := m.place(p)
	if where == calicoMoves && p == o {
		return n, n != p, nil
	}
	return m.block(p)
}

// mapText maps the CIDR s with fn (m.block or m.pool). A value that is no
// CIDR stays: Calico would not use it either.
func mapText(s string, fn func(netip.Prefix) (netip.Prefix, bool, error)) (string, bool, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return s, false, nil
	}
	np, moved, err := fn(p)
	if err != nil || !moved {
		return s, false, err
	}
	return np.String(), true, nil
}

// addr maps one address of the old range to the same offset in the new.
func (m calicoMap) addr(a netip.Addr) (netip.Addr, bool, error) {
	q, ok, err := m.block(netip.PrefixFrom(a, a.BitLen()))
	return q.Addr(), ok, err
}

// calicoCIDRName is the object name Calico derives from a CIDR
// (libcalico-go/lib/names/cidr.go CIDRToName): the CIDR's text with its
// dots, colons and slash replaced by dashes, "10.244.1.0/26" ->
// "10-244-1-0-26", "fd00:10:244::/122" -> "fd00-10-244---122".
func calicoCIDRName(p netip.Prefix) string {
	name := strings.Replace(p.String(), ".", "-", 3)
	name = strings.Replace(name, ":", "-", 7)
	return strings.Replace(name, "/", "-", 1)
}

// calicoAffinityName is a BlockAffinity's name as Calico derives it from
// its node and CIDR (libcalico-go/lib/backend/k8s/resources/
// ipam_affinity_v1.go parseKey): "<node>-<cidr name>", cut short with a
// hash when that would reach 253 characters.
func calicoAffinityName(node string, p netip.Prefix) string {
	cidrName := calicoCIDRName(p)
	name := node + "-" + cidrName
	if len(name) < 253 {
		return name
	}
	h := sha256.Sum256([]byte(node + "+" + cidrName))
	return fmt.Sprintf("%s-%s-%s", node[:252-len(cidrName)-13], cidrName, hex.EncodeToString(h[:])[:11])
}

// cidrToken finds IPv4 and IPv6 CIDR candidates in free text (a CNI
// network config, a flag list); each is parsed before it is trusted.
var cidrToken = regexp.MustCompile(`(?:[0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,3}|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*/[0-9]{1,3}`)

// mapCIDRsInText replaces every whole CIDR literal in s that lies in an
// old pod range, as a pool is mapped; every other byte is kept.
func (m calicoMap) mapCIDRsInText(s string) (string, textChanges, error) {
	return replaceTokens(s, cidrToken, func(tok string) (string, bool, error) {
		p, err := netip.ParsePrefix(tok)
		if err != nil {
			return "", false, nil
		}
		q, moved, err := m.pool(p)
		if err != nil || !moved {
			return "", false, err
		}
		return q.String(), true, nil
	})
}
