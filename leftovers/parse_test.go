package leftovers

import (
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/wellknown"
)

// randomToken is text of the characters the scans read as an address:
// digits, dots and, for IPv6, hex letters and colons, with a '/' and a
// prefix length now and then; often an address, often almost one.
func randomToken(r *rand.Rand) string {
	var b strings.Builder
	switch r.Intn(4) {
	case 0: // an address, perhaps broken
		a := netip.AddrFrom4([4]byte{byte(r.Intn(256)), byte(r.Intn(256)), byte(r.Intn(256)), byte(r.Intn(256))})
		b.WriteString(a.String())
	case 1:
		b.WriteString(netip.AddrFrom16([16]byte{0xfd, 0, 5: byte(r.Intn(256)), 15: byte(r.Intn(256))}).String())
	}
	alphabet := []string{"0", "1", "2", "5", "9", "25", "255", "256", "300", "00", "01", ".", ".", "..", ":", "::", "a", "f", "F", "x", "%", "/", "/8", "/24", "/32", "/33", "/128", "/129", "/0", "/00", "/+1"}
	for k := r.Intn(8); k > 0; k-- {
		b.WriteString(alphabet[r.Intn(len(alphabet))])
	}
	return b.String()
}

// TestParseAddrMatchesNetip: parseAddr and parseV4 accept exactly what
// netip.ParseAddr accepts, with the same address; maybePrefix is false only
// for texts netip.ParsePrefix refuses.
func TestParseAddrMatchesNetip(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	accepted := 0
	for i := 0; i < 200000; i++ {
		s := randomToken(r)
		want, err := netip.ParseAddr(s)
		got, ok := parseAddr([]byte(s))
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("parseAddr(%q) = %v, %v; netip: %v, %v", s, got, ok, want, err)
		}
		if !strings.Contains(s, ":") {
			if got, ok := parseV4([]byte(s)); ok != (err == nil) || ok && got != want {
				t.Fatalf("parseV4(%q) = %v, %v; netip: %v, %v", s, got, ok, want, err)
			}
		}
		if _, err := netip.ParsePrefix(s); err == nil {
			accepted++
			if !maybePrefix([]byte(s)) {
				t.Fatalf("maybePrefix(%q) is false, but netip.ParsePrefix accepts it", s)
			}
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d of the random texts are prefixes: the test does not test maybePrefix", accepted)
	}
	for _, s := range []string{"", ".", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.256", "1..2.3", "1.2.3.4.", "https:", "a/b", "10.0.0.0/", "10.0.0.0/08", "10.0.0.0/33", "apps/v1"} {
		if _, err := netip.ParsePrefix(s); err == nil || maybePrefix([]byte(s)) {
			t.Errorf("maybePrefix(%q) = true (netip: %v): a text that is no prefix passes", s, err)
		}
	}
}

// TestTrimTokenBytes: the bytes version trims as the string one did.
func TestTrimTokenBytes(t *testing.T) {
	for _, s := range []string{"", ".", "10.0.0.1.", "10.0.0.1..", "fd00::1:", "fd00::", "::", ":", "1:", "a::b:"} {
		if got, want := string(trimTokenBytes([]byte(s))), trimToken(s); got != want {
			t.Errorf("trimTokenBytes(%q) = %q, want %q", s, got, want)
		}
	}
}

// namespaceOfSplit is namespaceOf as it was, by strings.Split: the
// reference.
func namespaceOfSplit(key, res string) string {
	parts := strings.Split(strings.TrimPrefix(key, wellknown.DefaultPrefix), "/")
	skip := len(strings.Split(res, "/"))
	if res == "endpoints" {
		skip = 2 // services/endpoints
	}
	if len(parts) != skip+2 {
		return ""
	}
	return parts[skip]
}

// TestNamespaceAndResourceOfKeys: namespaceOf reads the namespace as the
// Split version did, and the scan's cached resource names every key as
// wellknown.Resource does, whichever key of a resource came first.
func TestNamespaceAndResourceOfKeys(t *testing.T) {
	keys := []string{
		"/registry/pods/demo/web-1", "/registry/pods/demo", "/registry/pods", "/registry/pods/a/b/c", "/registry/pods/",
		"/registry/services/endpoints/kube-system/kube-dns", "/registry/services/endpoints/x", "/registry/services/specs/default/kubernetes",
		"/registry/services/specs", "/registry/services", "/registry/minions/cp1", "/registry/minions", "/registry/endpointslices/demo/web-x9v4c",
		"/registry/cilium.io/ciliumendpoints/demo/p", "/registry/cilium.io/ciliumendpoints", "/registry/cilium.io",
		"/registry/ranges/serviceips", "/registry/ranges", "/registry/crd.projectcalico.org/ippools/default",
		"/registry/controllers/demo/rc", "/registry/ingress/demo/i", "/registry/deployments/demo/d", "/other/pods/demo/p", "pods/demo/p", "",
	}
	s := NewLeftoverScan(&rules.Plan{})
	for _, order := range [][]string{keys, reversed(keys)} {
		s.resources = nil
		for _, k := range order {
			res := wellknown.Resource(k)
			if got := s.resource(k); got != res {
				t.Errorf("resource(%q) = %q, want %q", k, got, res)
			}
			for _, r := range []string{res, "pods", "endpoints", "endpointslices.discovery.k8s.io", "ciliumendpoints.cilium.io", "a/b"} {
				if got, want := namespaceOf(k, r), namespaceOfSplit(k, r); got != want {
					t.Errorf("namespaceOf(%q, %q) = %q, want %q", k, r, got, want)
				}
			}
		}
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
