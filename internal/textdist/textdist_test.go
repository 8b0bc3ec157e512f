package textdist

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"peerUrl", "peerURL", 2}, {"servicesubnet", "serviceSubnet", 1},
		{"deploymnets", "deployments", 2}, {"svc", "", 3}, {"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

func TestSwapped(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"plna", "plan", true}, {"calcio", "calico", true}, {"ab", "ba", true},
		{"plan", "plan", false}, {"plna", "plans", false}, {"abcd", "badc", false}, {"abc", "cba", false},
	} {
		if got := Swapped(c.a, c.b); got != c.want {
			t.Errorf("Swapped(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestNearest(t *testing.T) {
	for _, c := range []struct {
		word  string
		cands []string
		want  string
	}{
		{"apisever", []string{"apiserver", "etcd"}, "apiserver"},
		{"calcio", []string{"calico", "cilium"}, "calico"},
		{"jsn", []string{"text", "json", "yaml"}, "json"},
		{"YAML", []string{"text", "json", "yaml"}, "yaml"},
		{"xml", []string{"text", "json", "yaml"}, ""},
		{"bulkk", []string{"bulk", "bbolt"}, "bulk"},
	} {
		if got := strings.Join(Nearest(c.word, c.cands), " "); got != c.want {
			t.Errorf("Nearest(%q, %q) = %q, want %q", c.word, c.cands, got, c.want)
		}
	}
}
