package rules

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/wellknown"
)

// svcAddrs builds the planner's input: "ns/name" -> its cluster IPs.
func svcAddrs(m map[string][]string) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for name, ips := range m {
		as := []netip.Addr{}
		for _, ip := range ips {
			as = append(as, netip.MustParseAddr(ip))
		}
		out[wellknown.PrefixServices+name] = as
	}
	return out
}

func svcKeys(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, wellknown.PrefixServices+n)
	}
	return out
}

// moveLines renders a plan's moves one line each, as "ns/name old -> new"
// with " kept" or " packed" appended.
func moveLines(sp *ServicePlan) []string {
	var out []string
	for _, mv := range sp.Services {
		l := svcName(mv.Key) + " " + strings.Join(mv.Old, ",") + " -> " + strings.Join(mv.New, ",")
		if mv.Kept {
			l += " kept"
		}
		if mv.Packed {
			l += " packed"
		}
		out = append(out, l)
	}
	return out
}

// sample is a small cluster's Services in 192.168.0.0/16.
var sample = map[string][]string{
	"default/kubernetes":         {"192.168.0.1"},
	"kube-system/kube-dns":       {"192.168.0.10"},
	"demo/api":                   {"192.168.200.14"},
	"demo/web":                   {"192.168.3.7"},
	"demo/headless":              nil,
	"kube-system/metrics-server": {"192.168.255.254"},
}

func TestPlanServices(t *testing.T) {
	v4Old, v4New := pfxs("192.168.0.0/16"), pfxs("172.24.0.0/16")
	for _, c := range []struct {
		name  string
		wish  serviceWish
		moves []string
		dns   string // the DNS Service's final address
		notes []string
		// A refusal: the option at fault ("" for a plain error), whether it
		// wraps transform.ErrRefused, and the whole message.
		field   string
		refused bool
		err     string
	}{
		{name: "offset kept", wish: serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: v4New},
			moves: []string{
				"default/kubernetes 192.168.0.1 -> 172.24.0.1",
				"demo/api 192.168.200.14 -> 172.24.200.14",
				"demo/web 192.168.3.7 -> 172.24.3.7",
				"kube-system/kube-dns 192.168.0.10 -> 172.24.0.10",
				"kube-system/metrics-server 192.168.255.254 -> 172.24.255.254",
			}},
		{name: "default/kubernetes gets the first address",
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"default/kubernetes": {"10.96.0.77"}, "demo/web": {"10.96.0.1"}}),
				Old: pfxs("10.96.0.0/12"), New: v4New, Repack: true},
			// demo/web's offset 1 belongs to default/kubernetes: with
			// Repack it moves to the lowest free address of the upper band
			// (a /16 keeps its first 256 for static clusterIPs, as
			// kube-apiserver's allocator does).
			moves: []string{
				"default/kubernetes 10.96.0.77 -> 172.24.0.1",
				"demo/web 10.96.0.1 -> 172.24.1.1 packed",
			}},
		{name: "dual stack, only IPv4 remapped",
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"demo/api": {"192.168.0.20", "fd00:10:96::20"}, "demo/v6": {"fd00:10:96::30"}}),
				Old: v4Old, New: v4New},
			moves: []string{"demo/api 192.168.0.20,fd00:10:96::20 -> 172.24.0.20,fd00:10:96::20"}},
		{name: "dual stack, only IPv6 remapped",
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"demo/api": {"192.168.0.20", "fd00:10:96::20"}}),
				Old: pfxs("fd00:10:96::/108"), New: pfxs("fd00:20::/108")},
			moves: []string{"demo/api 192.168.0.20,fd00:10:96::20 -> 192.168.0.20,fd00:20::20"}},
		{name: "kept Services keep their addresses",
			wish: serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: v4New,
				Keep: svcKeys("kube-system/kube-dns", "demo/web"), DNS: wellknown.PrefixServices + "kube-system/kube-dns"},
			moves: []string{
				"default/kubernetes 192.168.0.1 -> 172.24.0.1",
				"demo/api 192.168.200.14 -> 172.24.200.14",
				"demo/web 192.168.3.7 -> 192.168.3.7 kept",
				"kube-system/kube-dns 192.168.0.10 -> 192.168.0.10 kept",
				"kube-system/metrics-server 192.168.255.254 -> 172.24.255.254",
			},
			dns: "192.168.0.10",
			notes: []string{
				"demo/web keeps 192.168.3.7, outside the new range 172.24.0.0/16: move it later (delete and recreate the Service with a new-range clusterIP) once nothing depends on the old address",
				"kube-system/kube-dns keeps 192.168.0.10, outside the new range 172.24.0.0/16: move it later (delete and recreate the Service with a new-range clusterIP) once nothing depends on the old address",
			}},
		{name: "a kept Service's address wins a clash",
			// demo/z-kept claims first although it sorts last: demo/a-old,
			// mapped onto its address, is the one repacked.
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"demo/a-old": {"192.168.0.10"}, "demo/z-kept": {"172.24.0.10"}}),
				Old: v4Old, New: v4New, Keep: svcKeys("demo/z-kept"), Repack: true},
			moves: []string{
				"demo/a-old 192.168.0.10 -> 172.24.1.1 packed",
				"demo/z-kept 172.24.0.10 -> 172.24.0.10 kept",
			}},
		{name: "smaller range refused, misfits listed",
			wish:  serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: pfxs("172.24.0.0/20")},
			field: "ServiceCIDR", refused: true,
			err: "refused: the new service range 172.24.0.0/20 is too small to keep 2 Services at their offsets (offsets 51214 to 65534; e.g. " +
				"demo/api (192.168.200.14, offset 51214), kube-system/metrics-server (192.168.255.254, offset 65534)); " +
				"the smallest range at that address that keeps every one where it is: 172.24.0.0/16; choose a larger range or pass Repack"},
		{name: "smaller range with Repack",
			wish: serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: pfxs("172.24.0.0/20"), Repack: true},
			moves: []string{
				"default/kubernetes 192.168.0.1 -> 172.24.0.1",
				"demo/api 192.168.200.14 -> 172.24.1.1 packed",
				"demo/web 192.168.3.7 -> 172.24.3.7",
				"kube-system/kube-dns 192.168.0.10 -> 172.24.0.10",
				"kube-system/metrics-server 192.168.255.254 -> 172.24.1.2 packed",
			}},
		{name: "Repack with no room left",
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"demo/a": {"192.168.0.1"}, "demo/b": {"192.168.0.2"}, "demo/c": {"192.168.0.200"}}),
				Old: v4Old, New: pfxs("172.24.0.0/30"), Repack: true},
			field: "Repack", refused: true,
			err: "refused: Repack: no free address left in 172.24.0.0/30"},
		{name: "clash",
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"demo/moved": {"172.24.0.10"}, "demo/old": {"192.168.0.10"}, "demo/web": {"192.168.3.7"}}),
				Old: v4Old, New: v4New},
			refused: true,
			err:     "refused: after the mapping two Services would share an address: demo/moved and demo/old at 172.24.0.10"},
		{name: "clash with Repack",
			wish: serviceWish{IPs: svcAddrs(map[string][]string{"demo/moved": {"172.24.0.10"}, "demo/old": {"192.168.0.10"}}),
				Old: v4Old, New: v4New, Repack: true},
			moves: []string{"demo/old 192.168.0.10 -> 172.24.1.1 packed"}},
		{name: "DNS bridge at the DNS Service's mapped address",
			wish: serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: v4New, Keep: svcKeys("kube-system/kube-dns"),
				DNS: wellknown.PrefixServices + "kube-system/kube-dns", Bridge: wellknown.PrefixServices + "kube-system/kube-dns-bridge"},
			moves: []string{
				"default/kubernetes 192.168.0.1 -> 172.24.0.1",
				"demo/api 192.168.200.14 -> 172.24.200.14",
				"demo/web 192.168.3.7 -> 172.24.3.7",
				"kube-system/kube-dns 192.168.0.10 -> 192.168.0.10 kept",
				"kube-system/metrics-server 192.168.255.254 -> 172.24.255.254",
			},
			dns: "192.168.0.10",
			notes: []string{
				"kube-system/kube-dns keeps 192.168.0.10, outside the new range 172.24.0.0/16: move it later (delete and recreate the Service with a new-range clusterIP) once nothing depends on the old address",
			}},
		{name: "two kept Services missing, both named, sorted",
			wish:  serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: v4New, Keep: svcKeys("demo/zz", "demo/web", "demo/nope")},
			field: "KeepServiceIPs",
			err:   "KeepServiceIPs demo/nope, demo/zz: no such Service with a cluster IP in the snapshot"},
		{name: "kept Services missing or headless",
			wish:  serviceWish{IPs: svcAddrs(sample), Old: v4Old, New: v4New, Keep: svcKeys("demo/nope", "demo/headless")},
			field: "KeepServiceIPs",
			err: "KeepServiceIPs demo/nope: no such Service with a cluster IP in the snapshot; " +
				"demo/headless: the Service has no cluster IP to keep (headless or ExternalName)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lay, err := planServices(c.wish)
			if c.err != "" {
				checkRefusal(t, err, c.field, c.refused, c.err)
				return
			}
			if err != nil {
				t.Fatalf("planServices: %v", err)
			}
			if got := moveLines(lay.Plan); !slices.Equal(got, c.moves) {
				t.Errorf("moves:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.moves, "\n  "))
			}
			if got := lay.Plan.DNS.String(); c.dns != "" && got != c.dns {
				t.Errorf("DNS = %s, want %s", got, c.dns)
			}
			if !slices.Equal(lay.Notes, c.notes) {
				t.Errorf("notes = %q, want %q", lay.Notes, c.notes)
			}
			checkLayout(t, c.wish, lay)
		})
	}
}

// checkLayout checks what every layout must hold: IPs has exactly the
// changed addresses, and Used has every final address once, the bridge's
// included.
func checkLayout(t *testing.T, w serviceWish, lay *serviceLayout) {
	t.Helper()
	used := map[netip.Addr]string{}
	for key, ips := range w.IPs {
		for _, a := range ips {
			if na, moved := lay.Plan.IPs[a]; moved {
				a = na
			}
			if prev, dup := used[a]; dup {
				t.Errorf("%s and %s both end at %s", prev, key, a)
			}
			used[a] = key
		}
	}
	if lay.Plan.Bridge.IsValid() {
		used[lay.Plan.Bridge] = w.Bridge
	}
	if len(used) != len(lay.Used) {
		t.Errorf("Used has %d addresses, want %d", len(lay.Used), len(used))
	}
	for a, key := range used {
		if lay.Used[a] != key {
			t.Errorf("Used[%s] = %q, want %q", a, lay.Used[a], key)
		}
	}
}

func TestPlanServicesBridge(t *testing.T) {
	dns, bridge := wellknown.PrefixServices+"kube-system/kube-dns", wellknown.PrefixServices+"kube-system/kube-dns-bridge"
	w := serviceWish{IPs: svcAddrs(sample), Old: pfxs("192.168.0.0/16"), New: pfxs("172.24.0.0/16"),
		Keep: []string{dns}, DNS: dns, Bridge: bridge}
	lay, err := planServices(w)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lay.Plan.Bridge, netip.MustParseAddr("172.24.0.10"); got != want || lay.Used[want] != bridge {
		t.Errorf("bridge at %s (Used: %q), want %s owned by the bridge", got, lay.Used[want], want)
	}

	// A bridge from an earlier run stays; none is planned.
	w.IPs[bridge] = []netip.Addr{netip.MustParseAddr("172.24.0.10")}
	lay, err = planServices(w)
	if err != nil {
		t.Fatal(err)
	}
	if lay.Plan.Bridge.IsValid() || !slices.Contains(lay.Notes, bridge+" already exists; no new bridge created") {
		t.Errorf("bridge %s, notes %q: want none planned and a note", lay.Plan.Bridge, lay.Notes)
	}

	// The bridge's address taken by a Service already in the new range.
	delete(w.IPs, bridge)
	w.IPs[wellknown.PrefixServices+"demo/squatter"] = []netip.Addr{netip.MustParseAddr("172.24.0.10")}
	_, err = planServices(w)
	checkRefusal(t, err, "DNSBridge", true, "refused: DNSBridge: 172.24.0.10 is taken by "+wellknown.PrefixServices+"demo/squatter")

	// A headless DNS Service has nothing to bridge.
	w = serviceWish{IPs: svcAddrs(map[string][]string{"kube-system/kube-dns": nil}), Old: w.Old, New: w.New, DNS: dns, Bridge: bridge}
	_, err = planServices(w)
	checkRefusal(t, err, "DNSBridge", false, "DNSBridge: the DNS Service kube-system/kube-dns has no cluster IP in the snapshot")
}

func TestPlanServicesCapacity(t *testing.T) {
	// A /30 bitmap holds two addresses (network and broadcast excluded);
	// three Services already in the new range need three.
	w := serviceWish{IPs: svcAddrs(map[string][]string{"demo/a": {"172.24.0.1"}, "demo/b": {"172.24.0.2"}, "demo/c": {"172.24.0.3"}}),
		Old: pfxs("192.168.0.0/16"), New: pfxs("172.24.0.0/30")}
	_, err := planServices(w)
	checkRefusal(t, err, "", true, "refused: the new service range 172.24.0.0/30 holds 2 addresses, but 3 Services need one")
}

// TestFreeAddressBands: repacked Services get addresses as kube-apiserver
// hands out dynamic ones, from the upper band first: the lower band holds
// min(max(16, size/16), 256) addresses after the network address.
func TestFreeAddressBands(t *testing.T) {
	for _, c := range []struct {
		cidr   string
		offset int
		first  string
	}{
		{"172.24.0.0/28", 0, "172.24.0.1"},
		{"172.24.0.0/24", 16, "172.24.0.17"},
		{"172.24.0.0/22", 64, "172.24.0.65"},
		{"172.24.0.0/16", 256, "172.24.1.1"},
		{"fd00:24::/108", 256, "fd00:24::101"},
	} {
		n := netip.MustParsePrefix(c.cidr)
		if got := rangeOffset(n); got != c.offset {
			t.Errorf("rangeOffset(%s) = %d, want %d", n, got, c.offset)
		}
		a, err := freeAddress(n, map[netip.Addr]string{})
		if err != nil || a.String() != c.first {
			t.Errorf("freeAddress(%s) = %s, %v; want %s", n, a, err, c.first)
		}
	}
	// The upper band full, the lower band is used.
	n := netip.MustParsePrefix("172.24.0.0/27") // 32 addresses, a lower band of 16
	used := map[netip.Addr]string{}
	for off := 17; off <= 30; off++ {
		used[netip.AddrFrom4([4]byte{172, 24, 0, byte(off)})] = "taken"
	}
	if a, err := freeAddress(n, used); err != nil || a.String() != "172.24.0.1" {
		t.Errorf("freeAddress with the upper band full = %s, %v; want 172.24.0.1", a, err)
	}
}

// TestPlanServicesMisfitsCapped: a refusal for a range too small is a
// summary (issue 52 item 7): how many Services, their offsets' span, the
// smallest range that keeps them all and three examples, instead of one
// line with every Service of the cluster (a 15 KB line for 199 Services).
func TestPlanServicesMisfitsCapped(t *testing.T) {
	m := map[string][]string{}
	for i := 0; i < 25; i++ {
		m[fmt.Sprintf("demo/s%02d", i)] = []string{fmt.Sprintf("192.168.%d.%d", 100+i, 10+i)}
	}
	_, err := planServices(serviceWish{IPs: svcAddrs(m), Old: pfxs("192.168.0.0/16"), New: pfxs("172.24.0.0/24")})
	if err == nil {
		t.Fatal("no refusal for a range too small")
	}
	msg := err.Error()
	if !strings.Contains(msg, "keep 25 Services at their offsets (offsets 25610 to 31778; e.g. demo/s00 (") || !strings.Contains(msg, "demo/s02 (") ||
		strings.Contains(msg, "demo/s03 (") || !strings.Contains(msg, ", … and 22 more); the smallest range at that address that keeps every one where it is: 172.24.0.0/17;") ||
		len(msg) > 400 {
		t.Errorf("refusal (%d characters) %q: want the count, the span, the smallest range and three of 25 Services", len(msg), msg)
	}
}
