package verify

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// TestNetworkChecks drives the pure network checks with hand-made data:
// each row is one check over one situation and the problems it must report
// (substrings, in order; none when the situation is sound).
func TestNetworkChecks(t *testing.T) {
	svcNet := []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16"), netip.MustParsePrefix("fd00:24::/108")}
	podNet := []netip.Prefix{netip.MustParsePrefix("10.55.0.0/16")}
	ip := func(key, a string) serviceIP {
		return serviceIP{key: wellknown.PrefixServices + key, addr: netip.MustParseAddr(a)}
	}
	ips := []serviceIP{ip("default/kubernetes", "172.24.0.1"), ip("demo/api", "172.24.3.7"), ip("demo/api", "fd00:24::7")}
	bitmap := func(addrs ...string) []byte {
		var as []netip.Addr
		for _, a := range addrs {
			as = append(as, netip.MustParseAddr(a))
		}
		b, err := cidr.Bitmap(netip.MustParsePrefix("172.24.0.0/16"), as)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nodes := func(pairs ...string) []state.NodeCIDR {
		var out []state.NodeCIDR
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, state.NodeCIDR{Node: pairs[i], PodCIDRs: []string{pairs[i+1]}})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		check func() []string
		want  []string
	}{
		{"Services in range", func() []string { return checkServicesInRange(ips, svcNet, nil) }, nil},
		{"a Service outside", func() []string {
			return checkServicesInRange(append(ips, ip("demo/old", "192.168.0.9")), svcNet, nil)
		}, []string{"/registry/services/specs/demo/old: 192.168.0.9 is outside 172.24.0.0/16"}},
		{"a kept Service outside", func() []string {
			return checkServicesInRange(append(ips, ip("demo/old", "192.168.0.9")), svcNet, []string{"demo/old"})
		}, nil},
		{"a family the range lacks is not checked", func() []string {
			return checkServicesInRange(ips, svcNet[:1], nil)
		}, nil},

		{"no duplicates", func() []string { return checkDuplicateIPs(ips) }, nil},
		{"two Services on one address", func() []string {
			return checkDuplicateIPs(append(ips, ip("demo/web", "172.24.3.7")))
		}, []string{"172.24.3.7: /registry/services/specs/demo/api and /registry/services/specs/demo/web"}},

		{"bitmap matches", func() []string {
			return checkRangeAllocations([]rangeAlloc{{key: wellknown.KeyServiceIPRange, valid: true, cidr: "172.24.0.0/16", data: bitmap("172.24.0.1", "172.24.3.7")}}, svcNet, owners(ips))
		}, nil},
		{"bitmap misses one, holds another", func() []string {
			return checkRangeAllocations([]rangeAlloc{{key: wellknown.KeyServiceIPRange, valid: true, cidr: "172.24.0.0/16", data: bitmap("172.24.0.1", "172.24.9.9")}}, svcNet, owners(ips))
		}, []string{"/registry/ranges/serviceips: bitmap differs from the Services: allocated but no Service: 172.24.9.9; Service but not allocated: 172.24.3.7"}},
		{"range still the old one", func() []string {
			return checkRangeAllocations([]rangeAlloc{{key: wellknown.KeyServiceIPRange, valid: true, cidr: "192.168.0.0/16"}}, svcNet, owners(ips))
		}, []string{"range 192.168.0.0/16, want 172.24.0.0/16"}},
		{"not a RangeAllocation, range not a CIDR", func() []string {
			return checkRangeAllocations([]rangeAlloc{{key: wellknown.KeyServiceIPRange}, {key: wellknown.KeySecondaryIPRange, valid: true, cidr: "x"}}, svcNet, owners(ips))
		}, []string{"serviceips: not a RangeAllocation", `secondaryserviceips: range "x" is not a CIDR`}},

		{"IPAddress objects", func() []string {
			objs := []ipAddress{
				{key: wellknown.PrefixIPAddresses + "172.24.0.1", ns: "default", name: "kubernetes", resc: "services"},
				{key: wellknown.PrefixIPAddresses + "172.24.3.7", ns: "demo", name: "web", resc: "services"},
				{key: wellknown.PrefixIPAddresses + "172.24.8.8", ns: "demo", name: "gone", resc: "services"},
				{key: wellknown.PrefixIPAddresses + "banana"},
			}
			return checkIPAddresses(objs, svcNet, owners(ips))
		}, []string{
			"/registry/ipaddresses/172.24.3.7: parentRef /services demo/web, want /registry/services/specs/demo/api",
			"/registry/ipaddresses/172.24.8.8: no Service has this address (orphan)",
			"/registry/ipaddresses/banana: name is not an IP",
			"/registry/services/specs/demo/api: fd00:24::7 has no IPAddress object",
		}},

		{"default ServiceCIDR", func() []string {
			return checkDefaultServiceCIDR([]string{"172.24.0.0/16", "fd00:24::/108"}, svcNet)
		}, nil},
		{"default ServiceCIDR lacks a family", func() []string { return checkDefaultServiceCIDR([]string{"172.24.0.0/16"}, svcNet) },
			[]string{"spec.cidrs 172.24.0.0/16, want 172.24.0.0/16,fd00:24::/108"}},

		{"nodes inside and disjoint", func() []string {
			return checkNodeCIDRs(nodes("a", "10.55.0.0/24", "b", "10.55.1.0/24"), podNet)
		}, nil},
		{"nodes outside, overlapping, of another family, unparsable", func() []string {
			return checkNodeCIDRs(nodes("a", "10.55.0.0/24", "b", "10.55.0.128/25", "c", "10.244.0.0/24", "d", "10.54.0.0/16", "e", "fd00::/64", "f", "x"), podNet)
		}, []string{
			"node c: 10.244.0.0/24 is outside the cluster CIDR 10.55.0.0/16",
			"node d: 10.54.0.0/16 is outside the cluster CIDR 10.55.0.0/16",
			"node e: fd00::/64 has a family the cluster CIDR does not",
			`node f: "x" is not a CIDR`,
			"nodes a (10.55.0.0/24) and b (10.55.0.128/25) overlap",
		}},
		{"a node range wider than the cluster CIDR", func() []string {
			return checkNodeCIDRs(nodes("a", "10.55.0.0/15"), podNet)
		}, []string{"node a: 10.55.0.0/15 is outside the cluster CIDR 10.55.0.0/16"}},

		{"configuration agrees; the Nodes' covering prefix is no record", func() []string {
			nets := &state.Networks{
				ServiceCIDR: []state.Source{{Kind: state.SourceKubeadm, Source: "kubeadm", CIDRs: []string{"172.24.0.0/16", "fd00:24::/108"}}},
				PodCIDR: []state.Source{{Kind: state.SourceKubeProxy, Source: "kube-proxy", CIDRs: []string{"10.55.0.0/16"}},
					{Kind: state.SourceNodes, Source: "Node podCIDRs", CIDRs: []string{"10.55.0.0/20"}}},
				ClusterDNS: []string{"172.24.0.10"},
			}
			return checkConfiguration(nets, svcNet, podNet, []string{"172.24.0.10"})
		}, nil},
		{"configuration disagrees", func() []string {
			nets := &state.Networks{
				ServiceCIDR: []state.Source{{Kind: state.SourceRangeAllocation, Source: "RangeAllocation", CIDRs: []string{"192.168.0.0/16"}}},
				PodCIDR:     []state.Source{{Kind: state.SourceFlannel, Source: "flannel", CIDRs: []string{"10.244.0.0/16"}}},
				ClusterDNS:  []string{"192.168.0.10"},
			}
			return checkConfiguration(nets, svcNet, podNet, []string{"172.24.0.10"})
		}, []string{
			"RangeAllocation says 192.168.0.0/16, want 172.24.0.0/16,fd00:24::/108",
			"flannel says 10.244.0.0/16, want 10.55.0.0/16",
			"kubelet-config clusterDNS 192.168.0.10 is not the address of kube-dns or kube-dns-bridge (172.24.0.10)",
		}},
		{"configuration: a NodeLocal DNSCache clusterDNS (link-local) is no Service address", func() []string {
			nets := &state.Networks{ClusterDNS: []string{"169.254.25.10", "fe80::a"}}
			return checkConfiguration(nets, svcNet, podNet, []string{"172.24.0.10"})
		}, nil},
		{"configuration: only the given network is checked", func() []string {
			nets := &state.Networks{
				ServiceCIDR: []state.Source{{Kind: state.SourceKubeadm, Source: "kubeadm", CIDRs: []string{"192.168.0.0/16"}}},
				PodCIDR:     []state.Source{{Kind: state.SourceKubeadm, Source: "kubeadm", CIDRs: []string{"10.55.0.0/16"}}},
				ClusterDNS:  []string{"192.168.0.10"},
			}
			return checkConfiguration(nets, nil, podNet, nil)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.check()
			if len(got) != len(c.want) {
				t.Fatalf("problems %q, want %d: %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d is %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

func TestServiceStateDNSIPs(t *testing.T) {
	s := &serviceState{ips: []serviceIP{
		{key: "a", addr: netip.MustParseAddr("172.24.0.10"), dns: true},
		{key: "b", addr: netip.MustParseAddr("172.24.0.11")},
		{key: "c", addr: netip.MustParseAddr("fd00:24::a"), dns: true},
	}}
	if got, want := s.dnsIPs(), []string{"172.24.0.10", "fd00:24::a"}; !slices.Equal(got, want) {
		t.Errorf("dnsIPs() = %v, want %v", got, want)
	}
}

func TestCheckExtraServiceCIDRs(t *testing.T) {
	extra, err := parseServiceCIDRMap([]string{"10.100.0.0/16=172.25.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string][]string{"/registry/servicecidrs/extra": {"172.25.0.0/16"}}
	if probs := checkExtraServiceCIDRs(moved, extra); len(probs) != 0 {
		t.Errorf("moved: %v", probs)
	}
	left := map[string][]string{"/registry/servicecidrs/extra": {"10.100.0.0/16"}}
	want := []string{"/registry/servicecidrs/extra: still holds 10.100.0.0/16 (want 172.25.0.0/16)", "no ServiceCIDR holds 172.25.0.0/16 (the new range of 10.100.0.0/16)"}
	if probs := checkExtraServiceCIDRs(left, extra); !slices.Equal(probs, want) {
		t.Errorf("not moved: %q, want %q", probs, want)
	}
	if _, err := parseServiceCIDRMap([]string{"10.100.0.0/16=banana"}); err == nil {
		t.Errorf("a bad map entry is accepted")
	}
}
