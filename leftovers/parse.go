package leftovers

import (
	"bytes"
	"net/netip"
)

// The scan reads every value of the input (3.2M on the 8 GiB bench), and
// most of the text it looks at is not an address: netip's parsers take a
// string, so each candidate was copied, and each failure built an error
// (net/netip.parseAddrError.Error alone was 100 MB of the plan's garbage).
// These read the bytes in place and give the same answers (parse_test.go
// checks them against netip).

// parseAddr is netip.ParseAddr of b: an IPv4 text (no ':') is read in
// place, without a copy or an error value; IPv6 goes to netip.
func parseAddr(b []byte) (netip.Addr, bool) {
	if bytes.IndexByte(b, ':') < 0 {
		return parseV4(b)
	}
	a, err := netip.ParseAddr(string(b))
	return a, err == nil
}

// parseV4 reads a dotted-decimal IPv4 address exactly as netip.ParseAddr
// does for a text without ':' (four fields of one to three digits, none
// above 255, no leading zero, nothing else), or reports false.
func parseV4(b []byte) (netip.Addr, bool) {
	var fields [4]uint8
	val, pos, digits := 0, 0, 0
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits == 1 && val == 0 {
				return netip.Addr{}, false // a leading zero
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return netip.Addr{}, false
			}
		case c == '.':
			if i == 0 || i == len(b)-1 || b[i-1] == '.' || pos == 3 {
				return netip.Addr{}, false
			}
			fields[pos] = uint8(val)
			pos++
			val, digits = 0, 0
		default:
			return netip.Addr{}, false
		}
	}
	if pos < 3 {
		return netip.Addr{}, false
	}
	fields[3] = uint8(val)
	return netip.AddrFrom4(fields), true
}

// trimTokenBytes drops punctuation a token may end with ("10.0.0.1." at the
// end of a sentence, "fd00::1:" before a port list) but keeps an IPv6 "::".
func trimTokenBytes(t []byte) []byte {
	t = bytes.TrimRight(t, ".")
	if bytes.HasSuffix(t, []byte(":")) && !bytes.HasSuffix(t, []byte("::")) {
		t = t[:len(t)-1]
	}
	return t
}

// maybePrefix reports whether netip.ParsePrefix could accept t (an
// address, '/', a prefix length): false only for a text it refuses, so
// that the scan calls it (and pays for its copy and, mostly, its error)
// only for the few that can be CIDRs. An IPv6 text (one with ':') is left
// to ParsePrefix.
func maybePrefix(t []byte) bool {
	slash := bytes.LastIndexByte(t, '/')
	if slash < 0 {
		return false
	}
	addr, bits := t[:slash], t[slash+1:]
	if len(bits) == 0 || len(bits) > 1 && (bits[0] < '1' || bits[0] > '9') {
		return false
	}
	n := 0
	for _, c := range bits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
		if n > 128 {
			return false
		}
	}
	if bytes.IndexByte(addr, ':') >= 0 {
		return true
	}
	_, ok := parseV4(addr)
	return ok && n <= 32
}
