package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/transform"
)

// TestResolveOldOptionErrors: every way the old range cannot be settled is
// an *option.Error naming the option to give (never a command-line flag),
// still found through a rule's wrapping.
func TestResolveOldOptionErrors(t *testing.T) {
	kubeadm := detected{source: "kubeadm-config networking.serviceSubnet", prefixes: pfxs("192.168.0.0/16")}
	bitmap := detected{source: "RangeAllocation serviceips", prefixes: pfxs("10.96.0.0/12")}
	newP := pfxs("172.24.0.0/16")
	for _, c := range []struct {
		name     string
		override string
		srcs     []detected
		field    string
		err      string
	}{
		{name: "override not a CIDR", override: "banana", srcs: []detected{kubeadm}, field: "OldServiceCIDR",
			err: `OldServiceCIDR: "banana" is not a CIDR (want e.g. 172.24.0.0/16 or fd00:10:96::/108)`},
		{name: "override with three CIDRs", override: "10.0.0.0/8,fd00::/64,11.0.0.0/8", field: "OldServiceCIDR",
			err: `OldServiceCIDR: "10.0.0.0/8,fd00::/64,11.0.0.0/8": at most two CIDRs (one per family)`},
		{name: "override not in the snapshot", override: "10.32.0.0/12", srcs: []detected{kubeadm}, field: "OldServiceCIDR",
			err: "OldServiceCIDR 10.32.0.0/12 does not match what the snapshot holds (kubeadm-config networking.serviceSubnet says 192.168.0.0/16)"},
		{name: "nothing recorded", field: "OldServiceCIDR",
			err: "the snapshot records no service CIDR (no kubeadm-config, no matching object): give it with OldServiceCIDR"},
		{name: "sources disagree", srcs: []detected{kubeadm, bitmap}, field: "OldServiceCIDR",
			err: "the snapshot records different old service CIDRs (kubeadm-config networking.serviceSubnet says 192.168.0.0/16; " +
				"RangeAllocation serviceips says 10.96.0.0/12): give the right one with OldServiceCIDR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := resolveOld("service CIDR", "OldServiceCIDR", c.override, c.srcs, newP)
			checkRefusal(t, fmt.Errorf("rule service-cidr: %w", err), c.field, false, "rule service-cidr: "+c.err)
		})
	}
}

func TestResolveOldSources(t *testing.T) {
	kubeadm := detected{source: "kubeadm-config networking.serviceSubnet", prefixes: pfxs("192.168.0.0/16")}
	newP := pfxs("172.24.0.0/16")
	for _, c := range []struct {
		name, override string
		srcs           []detected
		old, src       string
	}{
		{name: "detected", srcs: []detected{kubeadm}, old: "192.168.0.0/16", src: "kubeadm-config networking.serviceSubnet"},
		{name: "override matches", override: "192.168.0.0/16", srcs: []detected{kubeadm}, old: "192.168.0.0/16",
			src: "given (matches kubeadm-config networking.serviceSubnet)"},
		{name: "override, nothing recorded", override: "192.168.0.0/16", old: "192.168.0.0/16", src: "given"},
		{name: "already migrated", override: "192.168.0.0/16", srcs: []detected{{source: "kubeadm-config", prefixes: newP}},
			old: "172.24.0.0/16", src: "already migrated (every source records 172.24.0.0/16)"},
	} {
		old, src, err := resolveOld("service CIDR", "OldServiceCIDR", c.override, c.srcs, newP)
		if err != nil || cidr.Join(old) != c.old || src != c.src {
			t.Errorf("%s: resolveOld = %s, %q, %v; want %s, %q", c.name, cidr.Join(old), src, err, c.old, c.src)
		}
	}
}

func pfxs(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// checkRefusal checks err is the refusal wanted: an *option.Error naming
// field (a plain error when field is ""), wrapping transform.ErrRefused or
// not, with message msg.
func checkRefusal(t *testing.T, err error, field string, refused bool, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", msg)
	}
	if err.Error() != msg {
		t.Errorf("error = %q\nwant    %q", err, msg)
	}
	var oe *option.Error
	if isOption := errors.As(err, &oe); isOption != (field != "") || (isOption && oe.Field != field) {
		t.Errorf("error %q: option field %v, want %q", err, oe, field)
	}
	if errors.Is(err, transform.ErrRefused) != refused {
		t.Errorf("errors.Is(err, ErrRefused) = %v, want %v", !refused, refused)
	}
}
