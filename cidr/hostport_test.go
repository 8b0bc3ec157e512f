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

// TestSplitHostPortURL: a URL for an endpoint says what to drop.
func TestSplitHostPortURL(t *testing.T) {
	_, _, err := cidr.SplitHostPort("https://10.0.0.50:6443/")
	if err == nil || err.Error() != `"https://10.0.0.50:6443/" is not host[:port]: drop the https:// (give 10.0.0.50:6443)` {
		t.Errorf("SplitHostPort of a URL: %v", err)
	}
}
