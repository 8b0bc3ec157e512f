package cidr_test

import (
	"net/netip"
	"testing"

	"github.com/snapshift/snapshift/cidr"
)

func TestComplete(t *testing.T) {
	for _, c := range []struct{ named, recorded, want string }{
		{"172.24.0.0/16", "192.168.0.0/16,fd00:10:96::/108", "172.24.0.0/16,fd00:10:96::/108"},
		{"fd00:20::/108", "192.168.0.0/16,fd00:10:96::/108", "192.168.0.0/16,fd00:20::/108"},
		{"172.24.0.0/16", "fd00:10:96::/108,192.168.0.0/16", "fd00:10:96::/108,172.24.0.0/16"},
		{"fd00:20::/108,172.24.0.0/16", "192.168.0.0/16,fd00:10:96::/108", "172.24.0.0/16,fd00:20::/108"},
		{"172.24.0.0/16", "192.168.0.0/16", "172.24.0.0/16"},
		{"fd00:20::/108", "192.168.0.0/16", "192.168.0.0/16,fd00:20::/108"},
		{"172.24.0.0/16", "", "172.24.0.0/16"},
	} {
		named, err := cidr.ParseList(c.named)
		if err != nil {
			t.Fatal(err)
		}
		var recorded = mustList(t, c.recorded)
		if got := cidr.Join(cidr.Complete(named, recorded)); got != c.want {
			t.Errorf("Complete(%s, %s) = %s, want %s", c.named, c.recorded, got, c.want)
		}
	}
}

func mustList(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	if s == "" {
		return nil
	}
	l, err := cidr.ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
