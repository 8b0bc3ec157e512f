package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

// TestCalicoNames checks the names Calico derives from CIDRs
// (libcalico-go/lib/names/cidr.go, resources/ipam_affinity_v1.go), worked
// out by hand from those functions.
func TestCalicoNames(t *testing.T) {
	for c, want := range map[string]string{
		"10.244.1.0/26":                         "10-244-1-0-26",
		"10.55.235.192/26":                      "10-55-235-192-26",
		"fd00:10:244::/122":                     "fd00-10-244---122",
		"fd00:10:244:0:7a1b:2c3d:4e5f:6a40/122": "fd00-10-244-0-7a1b-2c3d-4e5f-6a40-122",
		"2001:db8:0:1::40/122":                  "2001-db8-0-1--40-122",
	} {
		if got := calicoCIDRName(netip.MustParsePrefix(c)); got != want {
			t.Errorf("name of %s = %q, want %q", c, got, want)
		}
	}
	if got := calicoAffinityName("worker-1", netip.MustParsePrefix("10.244.1.0/26")); got != "worker-1-10-244-1-0-26" {
		t.Errorf("affinity name %q", got)
	}
	// A host name that would make the name reach 253 characters is cut and
	// a hash of the full name appended: 252 characters in all.
	host := strings.Repeat("h", 240)
	got := calicoAffinityName(host, netip.MustParsePrefix("10.244.1.0/26"))
	h := sha256.Sum256([]byte(host + "+10-244-1-0-26"))
	want := strings.Repeat("h", 252-13-13) + "-10-244-1-0-26-" + hex.EncodeToString(h[:])[:11]
	if got != want || len(got) != 252 {
		t.Errorf("long affinity name\n got %q (%d)\nwant %q", got, len(got), want)
	}
}

// TestCalicoMap checks the pool, block and address mapping.
func TestCalicoMap(t *testing.T) {
	m := calicoMap{old: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, new: []netip.Prefix{netip.MustParsePrefix("10.55.0.0/18")}}
	for _, c := range []struct {
		in, pool, block string
		fits            bool
	}{
		{"10.244.0.0/16", "10.55.0.0/18", "", false}, // the whole range becomes the whole new range; as a block it does not fit
		{"10.244.8.0/21", "10.55.8.0/21", "10.55.8.0/21", true},
		{"10.244.63.192/26", "10.55.63.192/26", "10.55.63.192/26", true},
		{"10.244.64.0/26", "", "", false},                         // beyond the new /18
		{"10.55.1.0/26", "10.55.1.0/26", "10.55.1.0/26", true},    // already moved: stays
		{"172.16.0.0/26", "172.16.0.0/26", "172.16.0.0/26", true}, // outside: stays
	} {
		p := netip.MustParsePrefix(c.in)
		b, _, err := m.block(p)
		if (err == nil) != c.fits || (c.fits && b.String() != c.block) {
			t.Errorf("block(%s) = %s, %v; want %q (fits %v)", c.in, b, err, c.block, c.fits)
		}
		if pl, _, err := m.pool(p); c.pool != "" && (err != nil || pl.String() != c.pool) {
			t.Errorf("pool(%s) = %s, %v; want %s", c.in, pl, err, c.pool)
		}
	}
	s, ch, err := m.mapCIDRsInText(`"ipv4_pools": ["10.244.0.0/16", "10.244.1.0/24"], "x": "110.244.0.0/16", "y": "10.244.0.0/16.1"`)
	if err != nil || s != `"ipv4_pools": ["10.55.0.0/18", "10.55.1.0/24"], "x": "110.244.0.0/16", "y": "10.244.0.0/16.1"` || ch.len() != 2 {
		t.Errorf("mapCIDRsInText = %s, %v, %v", s, ch, err)
	}
}
