package leftovers

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math/rand"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/rules"
)

func TestTextPrefixes(t *testing.T) {
	for _, c := range []struct {
		cidr string
		want []string
	}{
		{"192.168.0.0/16", []string{"192.168."}},
		{"10.244.0.0/16", []string{"10.244."}},
		{"10.96.0.0/12", []string{"10.96.", "10.97.", "10.98.", "10.99.", "10.100.", "10.101.", "10.102.", "10.103.", "10.104.", "10.105.", "10.106.", "10.107.", "10.108.", "10.109.", "10.110.", "10.111."}},
		{"172.24.0.0/13", []string{"172.24.", "172.25.", "172.26.", "172.27.", "172.28.", "172.29.", "172.30.", "172.31."}},
		{"10.0.0.0/8", []string{"10."}},
		{"10.1.2.0/24", []string{"10.1.2."}},
		{"10.1.2.16/28", []string{"10.1.2."}},
		{"0.0.0.0/0", []string{""}},
	} {
		if got := textPrefixes(netip.MustParsePrefix(c.cidr)); !slices.Equal(got, c.want) {
			t.Errorf("textPrefixes(%s) = %v, want %v", c.cidr, got, c.want)
		}
	}
}

// TestLeftoverScanFindsExactlyTheOldAddresses embeds random addresses in
// text and protobuf-like bytes: the scan must report exactly those inside
// the old ranges, each once, and nothing for look-alikes (longer numbers).
func TestLeftoverScanFindsExactlyTheOldAddresses(t *testing.T) {
	old := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("192.168.0.0/16")}
	plan := &rules.Plan{Service: &rules.ServicePlan{Old: old[:1], New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}},
		Pod: &rules.PodPlan{Old: old[1:], New: []netip.Prefix{netip.MustParsePrefix("10.55.0.0/16")}}}
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 300; i++ {
		s := NewLeftoverScan(plan)
		var b strings.Builder
		want := map[string]bool{}
		for j := 0; j < 8; j++ {
			a := netip.AddrFrom4([4]byte{[]byte{10, 192, 172, 11}[r.Intn(4)], byte(r.Intn(256)), byte(r.Intn(256)), byte(r.Intn(256))})
			sep := []string{" ", "\x12\x0b", ",", "\"", "\n"}[r.Intn(5)]
			if r.Intn(5) == 0 {
				fmt.Fprintf(&b, "%s1%s%s", sep, a, sep) // a longer number: not an address
				continue
			}
			fmt.Fprintf(&b, "%s%s%s", sep, a, sep)
			for _, p := range old {
				if p.Contains(a) {
					want[a.String()] = true
				}
			}
		}
		s.Observe([]byte("/registry/pods/ns/p"), []byte(b.String()), false)
		got := map[string]bool{}
		for _, g := range s.Report().Groups {
			for _, e := range g.Examples {
				for _, a := range e.Addresses {
					if got[a] {
						t.Fatalf("%q: %s reported twice", b.String(), a)
					}
					got[a] = true
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%q: found %v, want %v", b.String(), got, want)
		}
		for a := range want {
			if !got[a] {
				t.Fatalf("%q: missed %s", b.String(), a)
			}
		}
	}
}

func TestTextPrefix6(t *testing.T) {
	for _, c := range []struct{ cidr, want string }{
		{"fd00:10:96::/108", "fd00:10:96:"},
		{"2001:db8:0:1::/64", "2001:db8:"},
		{"fd00::/8", ""},
		{"fd00:abcd::/32", "fd00:abcd:"},
		{"fd00:abcd:12::/40", "fd00:abcd:"},
	} {
		if got := textPrefix6(netip.MustParsePrefix(c.cidr)); got != c.want {
			t.Errorf("textPrefix6(%s) = %q, want %q", c.cidr, got, c.want)
		}
	}
}

// TestLeftoverScanIPv6: old IPv6 ranges are scanned too (they used to be
// skipped): canonical addresses in text, with ports and brackets, and CIDRs;
// not look-alikes outside the range or inside longer tokens.
func TestLeftoverScanIPv6(t *testing.T) {
	plan := &rules.Plan{Service: &rules.ServicePlan{
		Old: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fd00:10:96::/108")},
		New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16"), netip.MustParsePrefix("fd00:24::/108")}}}
	s := NewLeftoverScan(plan)
	value := "upstream [fd00:10:96::a]:53, fd00:10:96::1234 and range fd00:10:96::/108; " +
		"not fd00:10:97::1 nor 1fd00:10:96::5 nor fd00:10:96:1::5; v4 192.168.0.10"
	s.Observe([]byte("/registry/configmaps/demo/c"), []byte(value), false)
	var got []string
	for _, g := range s.Report().Groups {
		for _, e := range g.Examples {
			got = append(got, e.Addresses...)
		}
	}
	slices.Sort(got)
	want := []string{"192.168.0.10", "fd00:10:96::/108", "fd00:10:96::1234", "fd00:10:96::a"}
	if !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
}

// TestLeftoverScanOverlappingRanges: with a new range that overlaps the old
// one (192.168.0.0/16 -> 192.168.0.0/17 with repack; 10.244.0.0/16 ->
// 10.244.0.0/17), what the plan moved or left in place on purpose is no
// leftover; a moved-away address, or one outside the new range, is.
func TestLeftoverScanOverlappingRanges(t *testing.T) {
	plan := &rules.Plan{
		Service: &rules.ServicePlan{Old: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/17")},
			IPs: map[netip.Addr]netip.Addr{netip.MustParseAddr("192.168.200.14"): netip.MustParseAddr("192.168.1.1")}},
		Pod: &rules.PodPlan{Old: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/17")}},
	}
	s := NewLeftoverScan(plan)
	value := "svc 192.168.3.7 moved-to 192.168.1.1 moved-away 192.168.200.14 beyond 192.168.130.1 pod 10.244.1.5 pod 10.244.200.5"
	s.Observe([]byte("/registry/configmaps/demo/c"), []byte(value), false)
	var got []string
	for _, g := range s.Report().Groups {
		for _, e := range g.Examples {
			got = append(got, e.Addresses...)
		}
	}
	slices.Sort(got)
	want := []string{"10.244.200.5", "192.168.130.1", "192.168.200.14"}
	if !slices.Equal(got, want) {
		t.Errorf("leftovers %v, want %v", got, want)
	}
}

// TestLeftoverScanCoveringCIDRs: in policies and ConfigMaps, a CIDR that
// contains an old range or crosses its edge is reported with the range it
// covers; one inside is reported by the address scan as before; other
// resources are not searched for covering CIDRs.
func TestLeftoverScanCoveringCIDRs(t *testing.T) {
	plan := &rules.Plan{Pod: &rules.PodPlan{Old: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("10.55.0.0/16")}}}
	s := NewLeftoverScan(plan)
	policy := `{"spec":{"ingress":[{"from":[{"ipBlock":{"cidr":"10.0.0.0/8","except":["10.244.0.0/15","10.244.3.0/24","192.168.0.0/16"]}}]}]}}`
	s.Observe([]byte("/registry/networkpolicies/demo/allow"), []byte(policy), false)
	s.Observe([]byte("/registry/pods/demo/p"), []byte(`"note":"10.0.0.0/8"`), false)
	var got []string
	for _, g := range s.Report().Groups {
		for _, e := range g.Examples {
			got = append(got, e.Key+" "+strings.Join(e.Addresses, "; "))
		}
	}
	want := []string{"/registry/networkpolicies/demo/allow 10.244.0.0/15; 10.244.3.0/24; 10.0.0.0/8 (covers the old range 10.244.0.0/16)"}
	if !slices.Equal(got, want) {
		t.Errorf("leftovers\n%q\nwant\n%q", got, want)
	}
}

// TestLeftoverScanEncrypted: with the EncryptionConfiguration, values
// encrypted at rest are scanned too; without it they are only counted.
func TestLeftoverScanEncrypted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "enc.yaml")
	conf := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [configmaps]\n  providers:\n" +
		"  - secretbox:\n      keys:\n      - {name: k1, secret: Y29uZmlnbWFwcy1zZWNyZXRib3gta2V5LTMyYnl0ZXM=}\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	key := "/registry/configmaps/demo/c"
	ct, err := enc.Encrypt(key, []byte("upstream http://192.168.3.7:80"), encryption.Info{Provider: "secretbox", KeyName: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	plan := &rules.Plan{Service: &rules.ServicePlan{Old: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}}}
	without := NewLeftoverScan(plan)
	without.Observe([]byte(key), ct, false)
	if r := without.Report(); r.Encrypted != 1 || len(r.Groups) != 0 {
		t.Errorf("without the configuration: %+v, want the value counted as not scanned", r)
	}
	with := NewLeftoverScan(plan)
	with.Encryption = enc
	with.Observe([]byte(key), ct, false)
	if r := with.Report(); r.Encrypted != 0 || len(r.Groups) != 1 || strings.Join(r.Groups[0].Examples[0].Addresses, ",") != "192.168.3.7" {
		t.Errorf("with the configuration: %+v, want 192.168.3.7 found", r)
	}
}

// TestLeftoverScanEncryptedCustomPrefix: under another --etcd-prefix the
// scan sees canonical keys, but aesgcm binds each value to its stored key:
// told the prefix, the scan decrypts it; not told, it cannot.
func TestLeftoverScanEncryptedCustomPrefix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "enc.yaml")
	conf := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [configmaps]\n  providers:\n" +
		"  - aesgcm:\n      keys:\n      - {name: k1, secret: Y29uZmlnbWFwcy1zZWNyZXRib3gta2V5LTMyYnl0ZXM=}\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := enc.Encrypt("/kubernetes.io/configmaps/demo/c", []byte("upstream http://192.168.3.7:80"), encryption.Info{Provider: "aesgcm", KeyName: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	plan := &rules.Plan{Service: &rules.ServicePlan{Old: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}}}
	for _, told := range []bool{false, true} {
		s := NewLeftoverScan(plan)
		s.Encryption = enc
		if told {
			s.SetEtcdPrefix("/kubernetes.io/")
		}
		s.Observe([]byte("/registry/configmaps/demo/c"), ct, false)
		if r := s.Report(); (len(r.Groups) == 1) != told || (r.Encrypted == 1) == told {
			t.Errorf("prefix told %v: %+v", told, r)
		}
	}
}

// TestLeftoverScanNamespaces: pod-level leftovers (Pods, Endpoints,
// EndpointSlices) are counted per namespace in the order to recreate them:
// the CNI's namespace, kube-system, then the rest by name; other resources
// get no such list.
func TestLeftoverScanNamespaces(t *testing.T) {
	plan := &rules.Plan{Pod: &rules.PodPlan{Old: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("10.55.0.0/16")}}}
	s := NewLeftoverScan(plan)
	for _, k := range []string{"/registry/pods/demo/a", "/registry/pods/kube-system/b", "/registry/pods/demo/c", "/registry/pods/kube-flannel/d",
		"/registry/services/endpoints/demo/web", "/registry/endpointslices/kube-system/dns-x", "/registry/configmaps/demo/c"} {
		s.Observe([]byte(k), []byte(`"podIP":"10.244.1.5"`), false)
	}
	got := map[string]string{}
	for _, g := range s.Report().Groups {
		var parts []string
		for _, n := range g.Namespaces {
			parts = append(parts, fmt.Sprintf("%s=%d", n.Namespace, n.Keys))
		}
		got[g.Resource] = strings.Join(parts, " ")
	}
	want := map[string]string{"pods": "kube-flannel=1 kube-system=1 demo=2", "endpoints": "demo=1", "endpointslices.discovery.k8s.io": "kube-system=1", "configmaps": ""}
	if !maps.Equal(got, want) {
		t.Errorf("per-namespace counts %v, want %v", got, want)
	}
}

// findByNeedle is find as one pass a needle: the reference the grouped
// search must agree with, result and order.
func findByNeedle(s *LeftoverScan, value []byte, needles [][]byte, part func(byte) bool, longest int, seen map[netip.Addr]bool) []string {
	var found []string
	for _, needle := range needles {
		rest, base := value, 0
		for {
			i := bytes.Index(rest, needle)
			if i < 0 {
				break
			}
			at := base + i
			step := max(len(needle), 1)
			rest, base = rest[i+step:], at+step
			if at > 0 && part(value[at-1]) {
				continue
			}
			j := at
			for j < len(value) && j-at < longest && part(value[j]) {
				j++
			}
			a, err := netip.ParseAddr(trimToken(string(value[at:j])))
			if err != nil || seen[a] || !s.inRanges(a) {
				continue
			}
			seen[a] = true
			found = append(found, cidrText(value, at, j, a))
		}
	}
	return found
}

// TestFindMatchesOnePassANeedle: kubeadm's default ranges (16 needles under
// "10." and one more) and overlapping ones, random addresses and CIDRs in
// random order: the grouped search finds what one pass a needle finds, in
// the same order.
func TestFindMatchesOnePassANeedle(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, olds := range [][]string{{"10.96.0.0/12", "10.244.0.0/16"}, {"192.168.0.0/16", "10.244.0.0/16"}, {"10.0.0.0/8", "10.96.0.0/12"}, {"fd00:10:96::/108", "10.96.0.0/12"}} {
		var old []netip.Prefix
		for _, o := range olds {
			old = append(old, netip.MustParsePrefix(o))
		}
		plan := &rules.Plan{Service: &rules.ServicePlan{Old: old[:1], New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}},
			Pod: &rules.PodPlan{Old: old[1:], New: []netip.Prefix{netip.MustParsePrefix("172.30.0.0/16")}}}
		s := NewLeftoverScan(plan)
		s.prepare()
		for i := 0; i < 400; i++ {
			var b strings.Builder
			for j := 0; j < 12; j++ {
				var a netip.Addr
				if r.Intn(6) == 0 {
					a = netip.AddrFrom16([16]byte{0xfd, 0, 0, 0x10, 0, 0x96, 14: byte(r.Intn(256)), 15: byte(r.Intn(256))})
				} else {
					a = netip.AddrFrom4([4]byte{[]byte{10, 192, 172, 110}[r.Intn(4)], []byte{96, 100, 111, 244, 168, 1}[r.Intn(6)], byte(r.Intn(4)), byte(r.Intn(256))})
				}
				sep := []string{" ", "\x12\x0b", ",", "\"", "\n", "1"}[r.Intn(6)]
				suffix := []string{"", "/24", "/32"}[r.Intn(3)]
				fmt.Fprintf(&b, "%s%s%s%s", sep, a, suffix, sep)
			}
			v := []byte(b.String())
			for _, f := range []struct {
				needles [][]byte
				groups  []leadGroup
				part    func(byte) bool
				longest int
			}{{s.needles, s.groups4, isV4Char, 15}, {s.needle6, s.groups6, isV6Char, 45}} {
				got := s.find(v, f.needles, f.groups, f.part, f.longest, map[netip.Addr]bool{})
				want := findByNeedle(s, v, f.needles, f.part, f.longest, map[netip.Addr]bool{})
				if !slices.Equal(got, want) {
					t.Fatalf("%v in %q:\n got %q\nwant %q", olds, v, got, want)
				}
			}
		}
	}
}

// BenchmarkFind is the leftover scan's search over the sample's values with
// kubeadm's default ranges (10.96.0.0/12: 16 needles; 10.244.0.0/16) and
// with the bench's (192.168.0.0/16, 10.244.0.0/16: two lone needles): the
// one-pass search against one pass a group and one pass a needle.
func BenchmarkFind(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "sample.db"))
	if err != nil {
		b.Fatal(err)
	}
	for _, ranges := range [][2]string{{"10.96.0.0/12", "10.244.0.0/16"}, {"192.168.0.0/16", "10.244.0.0/16"}} {
		plan := &rules.Plan{Service: &rules.ServicePlan{Old: []netip.Prefix{netip.MustParsePrefix(ranges[0])}, New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}},
			Pod: &rules.PodPlan{Old: []netip.Prefix{netip.MustParsePrefix(ranges[1])}, New: []netip.Prefix{netip.MustParsePrefix("172.30.0.0/16")}}}
		s := NewLeftoverScan(plan)
		s.prepare()
		for name, find := range map[string]func([]byte) []string{
			"one-pass": func(v []byte) []string { return s.find(v, s.needles, s.groups4, isV4Char, 15, map[netip.Addr]bool{}) },
			"grouped": func(v []byte) []string {
				return findGrouped(s, v, s.needles, s.groups4, isV4Char, 15, map[netip.Addr]bool{})
			},
			"by-needle": func(v []byte) []string { return findByNeedle(s, v, s.needles, isV4Char, 15, map[netip.Addr]bool{}) },
		} {
			b.Run(strings.ReplaceAll(ranges[0], "/", "_")+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				for b.Loop() {
					find(raw)
				}
			})
		}
	}
}

// findGrouped is find as it was before the one-pass search: one
// bytes.Index pass over value a lead group, each hit matched against the
// group's needles. Kept as a second reference (TestFindOnePass) and for
// BenchmarkFind.
func findGrouped(s *LeftoverScan, value []byte, needles [][]byte, groups []leadGroup, part func(byte) bool, longest int, seen map[netip.Addr]bool) []string {
	type hit struct {
		needle, at int
		text       string
	}
	var hits []hit
	for _, g := range groups {
		rest, base := value, 0
		for {
			i := bytes.Index(rest, g.lead)
			if i < 0 {
				break
			}
			at := base + i
			step := max(len(g.lead), 1)
			rest, base = rest[i+step:], at+step
			n := firstPrefix(value[at:], needles, g.members)
			if n < 0 || at > 0 && part(value[at-1]) {
				continue
			}
			j := at
			for j < len(value) && j-at < longest && part(value[j]) {
				j++
			}
			a, err := netip.ParseAddr(trimToken(string(value[at:j])))
			if err != nil || seen[a] || !s.inRanges(a) {
				continue
			}
			seen[a] = true
			hits = append(hits, hit{n, at, cidrText(value, at, j, a)})
		}
	}
	slices.SortFunc(hits, func(x, y hit) int { return cmp.Or(cmp.Compare(x.needle, y.needle), cmp.Compare(x.at, y.at)) })
	found := make([]string, len(hits))
	for i, h := range hits {
		found[i] = h.text
	}
	return found
}

// TestFindOnePass is the one-pass search against the two it replaced, one
// pass a needle and one pass a lead group, on random ranges (IPv4 of every
// length from /0, so needles of one to three octets, several first bytes,
// an empty needle; IPv6, also overlapping) and random values: addresses in
// and around the ranges, canonical or not, upper-case, CIDRs, repeated,
// glued to digits, dots and colons, between random bytes. The addresses
// found, their order, and what seen holds after both families (as Observe
// calls find) must be the same.
func TestFindOnePass(t *testing.T) {
	r := rand.New(rand.NewSource(39))
	randV4 := func() netip.Addr {
		firsts := []byte{1, 10, 100, 172, 192, 2, 25, 255, 0, 9}
		return netip.AddrFrom4([4]byte{firsts[r.Intn(len(firsts))], byte([]int{0, 1, 10, 96, 100, 168, 244, r.Intn(256)}[r.Intn(8)]), byte(r.Intn(4)), byte(r.Intn(256))})
	}
	randV6 := func() netip.Addr {
		b := [16]byte{0xfd, 0, 0, byte([]int{0, 0x10, 0x20}[r.Intn(3)]), 0, byte([]int{0, 0x96, 0x97}[r.Intn(3)])}
		for i := 6; i < 16; i++ {
			if r.Intn(3) == 0 {
				b[i] = byte(r.Intn(256))
			}
		}
		return netip.AddrFrom16(b)
	}
	for round := 0; round < 300; round++ {
		var old []netip.Prefix
		for k := 1 + r.Intn(4); k > 0; k-- {
			if r.Intn(4) == 0 {
				old = append(old, netip.PrefixFrom(randV6(), []int{16, 32, 48, 64, 108}[r.Intn(5)]).Masked())
			} else {
				bits := r.Intn(33)
				if r.Intn(40) > 0 && bits == 0 {
					bits = 8
				}
				old = append(old, netip.PrefixFrom(randV4(), bits).Masked())
			}
		}
		split := 1 + r.Intn(len(old))
		newOf := func(n int) []netip.Prefix {
			out := make([]netip.Prefix, n)
			for i := range out {
				out[i] = netip.MustParsePrefix("203.0.113.0/24")
			}
			return out
		}
		plan := &rules.Plan{Service: &rules.ServicePlan{Old: old[:split], New: newOf(split)}}
		if split < len(old) {
			plan.Pod = &rules.PodPlan{Old: old[split:], New: newOf(len(old) - split)}
		}
		s := NewLeftoverScan(plan)
		s.prepare()
		for i := 0; i < 40; i++ {
			var b []byte
			for j := r.Intn(20); j > 0; j-- {
				switch r.Intn(8) {
				case 0:
					for k := r.Intn(12); k > 0; k-- {
						b = append(b, byte(r.Intn(256)))
					}
				case 1:
					b = append(b, []string{".", ":", "1", "a", "F", "::", "0.", "/"}[r.Intn(8)]...)
				case 2, 3:
					a := randV6()
					text := a.String()
					switch r.Intn(3) {
					case 0:
						text = strings.ToUpper(text)
					case 1:
						text = a.StringExpanded()
					}
					b = append(b, text...)
				default:
					b = append(b, randV4().String()...)
				}
				b = append(b, []string{"", "", " ", "\x12\x0b", ",", "/24", "/8", "/128", "."}[r.Intn(9)]...)
			}
			type finder func(v []byte, needles [][]byte, groups []leadGroup, part func(byte) bool, longest int, seen map[netip.Addr]bool) []string
			run := func(f finder) ([]string, map[netip.Addr]bool) {
				seen := map[netip.Addr]bool{}
				found := f(b, s.needles, s.groups4, isV4Char, 15, seen)
				found = append(found, f(b, s.needle6, s.groups6, isV6Char, 45, seen)...)
				return found, seen
			}
			got, gotSeen := run(s.find)
			for name, ref := range map[string]finder{
				"one pass a needle": func(v []byte, needles [][]byte, _ []leadGroup, part func(byte) bool, longest int, seen map[netip.Addr]bool) []string {
					return findByNeedle(s, v, needles, part, longest, seen)
				},
				"one pass a group": func(v []byte, needles [][]byte, groups []leadGroup, part func(byte) bool, longest int, seen map[netip.Addr]bool) []string {
					return findGrouped(s, v, needles, groups, part, longest, seen)
				},
			} {
				want, wantSeen := run(ref)
				if !slices.Equal(got, want) || !maps.Equal(gotSeen, wantSeen) {
					t.Fatalf("ranges %v, value %q:\n one pass: %q\n %s: %q", old, b, got, name, want)
				}
			}
		}
	}
}

// trimToken is the scan's trimTokenBytes as it was, on strings, for the
// references: it drops punctuation a token may end with ("10.0.0.1." at the end
// of a sentence, "fd00::1:" before a port list) but keeps an IPv6 "::".
func trimToken(t string) string {
	t = strings.TrimRight(t, ".")
	if strings.HasSuffix(t, ":") && !strings.HasSuffix(t, "::") {
		t = t[:len(t)-1]
	}
	return t
}
