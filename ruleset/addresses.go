package ruleset

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/snapshift/snapshift/cidr"
)

// Range is one old range and the new range it moves to, offsets kept.
type Range struct {
	Old, New netip.Prefix
	// Source names where the pair comes from ("--service-cidr",
	// "addressMap of rules.yaml"), for messages.
	Source string
}

// Mapping is a run's address mapping: exact addresses first (the Services'
// own moves, which need not keep offsets), then the ranges, the most
// specific old range that holds an address deciding.
type Mapping struct {
	Exact  map[netip.Addr]netip.Addr
	Ranges []Range
}

// Addr maps one address; ok is false when no range holds it.
func (m *Mapping) Addr(a netip.Addr) (netip.Addr, bool, error) {
	if n, ok := m.Exact[a]; ok {
		return n, true, nil
	}
	r, ok := m.rangeOf(netip.PrefixFrom(a, a.BitLen()))
	if !ok {
		return a, false, nil
	}
	p, err := (&cidr.Mapper{Old: r.Old, New: r.New}).MapPrefix(netip.PrefixFrom(a, a.BitLen()))
	if err != nil {
		return a, false, fmt.Errorf("mapping %s with %s -> %s (%s): %w", a, r.Old, r.New, r.Source, err)
	}
	return p.Addr(), true, nil
}

// Prefix maps a CIDR inside an old range (or equal to it); a CIDR around an
// old range is not moved (the leftover scan reports it).
func (m *Mapping) Prefix(p netip.Prefix) (netip.Prefix, bool, error) {
	r, ok := m.rangeOf(p)
	if !ok {
		return p, false, nil
	}
	if p.Masked() == r.Old {
		return r.New, true, nil
	}
	n, err := (&cidr.Mapper{Old: r.Old, New: r.New}).MapPrefix(p)
	if err != nil {
		return p, false, fmt.Errorf("mapping %s with %s -> %s (%s): %w", p, r.Old, r.New, r.Source, err)
	}
	return n, true, nil
}

// OldRange returns the old range that holds a (for verify).
func (m *Mapping) OldRange(a netip.Addr) (Range, bool) {
	return m.rangeOf(netip.PrefixFrom(a, a.BitLen()))
}

func (m *Mapping) rangeOf(p netip.Prefix) (Range, bool) {
	var best Range
	found := false
	for _, r := range m.Ranges {
		if p.Bits() >= r.Old.Bits() && r.Old.Contains(p.Addr()) && (!found || r.Old.Bits() > best.Old.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// addressToken finds IPv4 literals and IPv6 candidates (anything with a
// colon), each with an optional /bits: a Corefile, a flag list, a
// "host:port", a CIDR list. Candidates are parsed before they are trusted.
var addressToken = regexp.MustCompile(`(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?:/[0-9]{1,3})?|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*(?:/[0-9]{1,3})?`)

// TextChange is one address or CIDR MapText replaced.
type TextChange struct{ Old, New string }

// MapText replaces every whole address or CIDR literal in s that m moves;
// every other byte of s is kept. A literal that runs on into more digits
// or dots ("10.96.0.10.1") is left alone.
func (m *Mapping) MapText(s string) (string, []TextChange, error) {
	return ReplaceTokens(s, addressToken, func(tok string) (string, bool, error) {
		n, ok, err := m.token(tok)
		return n, ok && n != tok, err
	})
}

// ReplaceTokens replaces every whole token of s that re finds (one that
// runs on into more digits or dots is left alone) and fn maps, keeping
// every other byte of s, and lists what it replaced.
func ReplaceTokens(s string, re *regexp.Regexp, fn func(tok string) (string, bool, error)) (string, []TextChange, error) {
	var ch []TextChange
	var b strings.Builder
	last := 0
	for _, loc := range re.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		if runsOn(s, loc[0], loc[1]) {
			continue
		}
		n, ok, err := fn(tok)
		if err != nil {
			return s, nil, err
		}
		if !ok {
			continue
		}
		b.WriteString(s[last:loc[0]])
		b.WriteString(n)
		last = loc[1]
		ch = append(ch, TextChange{Old: tok, New: n})
	}
	if len(ch) == 0 {
		return s, nil, nil
	}
	b.WriteString(s[last:])
	return b.String(), ch, nil
}

// token maps one candidate literal: an address or a CIDR.
func (m *Mapping) token(tok string) (string, bool, error) {
	if strings.Contains(tok, "/") {
		p, err := netip.ParsePrefix(tok)
		if err != nil {
			return tok, false, nil
		}
		n, ok, err := m.Prefix(p)
		if !ok || err != nil {
			return tok, false, err
		}
		if p.Addr() != p.Masked().Addr() { // an interface address: 10.0.100.5/24
			a, _, err := m.Addr(p.Addr())
			return netip.PrefixFrom(a, n.Bits()).String(), err == nil, err
		}
		return n.String(), true, nil
	}
	a, err := netip.ParseAddr(tok)
	if err != nil || a.Zone() != "" {
		return tok, false, nil
	}
	n, ok, err := m.Addr(a)
	return n.String(), ok, err
}

// runsOn reports whether s[i:j] is part of a longer run of digits and dots.
func runsOn(s string, i, j int) bool {
	part := func(c byte) bool { return c == '.' || (c >= '0' && c <= '9') }
	return (i > 0 && part(s[i-1])) || (j < len(s) && part(s[j]) && !(s[j] == '.' && (j+1 == len(s) || !part(s[j+1]))))
}

// Literals returns every address or CIDR literal in the strings at pointer
// p in doc (a string's text, a list's or an object's strings); ok is false
// when doc has nothing at p.
func Literals(doc any, p string) (lits []netip.Prefix, ok bool) {
	v, ok := get(doc, p)
	if !ok {
		return nil, false
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			for _, loc := range addressToken.FindAllStringIndex(t, -1) {
				if runsOn(t, loc[0], loc[1]) {
					continue
				}
				tok := t[loc[0]:loc[1]]
				if pr, err := netip.ParsePrefix(tok); err == nil {
					lits = append(lits, pr)
				} else if a, err := netip.ParseAddr(tok); err == nil && a.Zone() == "" {
					lits = append(lits, netip.PrefixFrom(a, a.BitLen()))
				}
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		case map[string]any:
			for _, k := range unionKeys(t, nil) {
				walk(t[k])
			}
		}
	}
	walk(v)
	return lits, true
}
