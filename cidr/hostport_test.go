package cidr_test

import (
	"testing"

	"github.com/snapshift/snapshift/cidr"
)

func TestSplitHostPort(t *testing.T) {
	for in, want := range map[string]string{"cp.example.com": "cp.example.com|", "10.0.0.5:6443": "10.0.0.5|6443",
		"[fd00::5]:6443": "fd00::5|6443", "fd00::5": "fd00::5|", "a:0": "error", "a:65536": "error", ":6443": "error", "10.0.0.0/8": "error"} {
		h, p, err := cidr.SplitHostPort(in)
		got := h + "|" + p
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("SplitHostPort(%q) = %s (%v), want %s", in, got, err, want)
		}
	}
}
