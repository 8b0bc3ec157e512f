package state_test

import (
	"slices"
	"testing"

	"github.com/snapshift/snapshift/state"
)

// TestParseNodeArgs reads node-args as pkg/nodeconfig writes them (flags and values as separate
// elements, the subcommand first) with k3s's defaults for absent flags.
func TestParseNodeArgs(t *testing.T) {
	for _, c := range []struct {
		name, ann, sub        string
		cluster, service, dns string
		defaulted             []string
	}{
		{"defaults", `["server","--cluster-init","--token","********"]`, "server", "10.42.0.0/16", "10.43.0.0/16", "10.43.0.10",
			[]string{"--cluster-cidr", "--service-cidr", "--cluster-dns"}},
		{"service range given: the DNS default follows it", `["server","--service-cidr","10.96.0.0/12"]`, "server", "10.42.0.0/16", "10.96.0.0/12", "10.96.0.10",
			[]string{"--cluster-cidr", "--cluster-dns"}},
		{"dual-stack, every flag", `["server","--cluster-cidr","10.42.0.0/16,2001:cafe:42::/56","--service-cidr","10.43.0.0/16,2001:cafe:43::/112","--cluster-dns","10.43.0.10"]`,
			"server", "10.42.0.0/16,2001:cafe:42::/56", "10.43.0.0/16,2001:cafe:43::/112", "10.43.0.10", nil},
		{"a repeated flag is a list", `["server","--cluster-cidr","10.42.0.0/16","--cluster-cidr","2001:cafe:42::/56"]`, "server",
			"10.42.0.0/16,2001:cafe:42::/56", "10.43.0.0/16", "10.43.0.10", []string{"--service-cidr", "--cluster-dns"}},
		{"agent", `["agent","--server","https://10.0.0.1:6443"]`, "agent", "10.42.0.0/16", "10.43.0.0/16", "10.43.0.10",
			[]string{"--cluster-cidr", "--service-cidr", "--cluster-dns"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub, na, err := state.ParseNodeArgs("n1", c.ann)
			if err != nil {
				t.Fatal(err)
			}
			if sub != c.sub || na.ClusterCIDR != c.cluster || na.ServiceCIDR != c.service || na.ClusterDNS != c.dns || !slices.Equal(na.Defaulted, c.defaulted) {
				t.Errorf("got %q %+v, want %q %s %s %s defaulted %v", sub, na, c.sub, c.cluster, c.service, c.dns, c.defaulted)
			}
		})
	}
	if _, _, err := state.ParseNodeArgs("n1", `{"not":"a list"}`); err == nil {
		t.Error("a node-args that is not a JSON list was accepted")
	}
}

// TestDefaultClusterDNS: the tenth address of each service range, as k3s's server does.
func TestDefaultClusterDNS(t *testing.T) {
	for in, want := range map[string]string{
		"10.43.0.0/16":                    "10.43.0.10",
		"172.24.0.0/16":                   "172.24.0.10",
		"10.43.0.0/16,2001:cafe:43::/112": "10.43.0.10,2001:cafe:43::a",
	} {
		if got, err := state.DefaultClusterDNS(in); err != nil || got != want {
			t.Errorf("DefaultClusterDNS(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := state.DefaultClusterDNS("10.43.0.0/29"); err == nil {
		t.Error("a /29 has no tenth address, and was accepted")
	}
}
