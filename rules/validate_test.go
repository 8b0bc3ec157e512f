package rules_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/transform"
)

// secondSentence finds a sentence break inside a message.
var secondSentence = regexp.MustCompile(`[.!?]\s+[A-Z]`)

// TestValidationErrors checks every refusal of bad flags: each is one clear
// sentence that names the flag and the value at fault, and nothing is
// written. Flag-only mistakes fail in Build; the ones that need the snapshot
// fail in the rules' Prepare, before the output exists.
func TestValidationErrors(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	for _, c := range []struct {
		name     string
		opts     rules.Options
		snapshot bool     // the error needs the snapshot (Prepare), not Build
		refused  bool     // wraps transform.ErrRefused
		want     []string // substrings, in order
	}{
		{name: "malformed service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/33"}},
			want: []string{"--service-cidr", `"172.24.0.0/33" is not a CIDR`}},
		{name: "garbage service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "banana"}},
			want: []string{"--service-cidr", `"banana" is not a CIDR`}},
		{name: "service CIDR with host bits", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.1/16"}},
			want: []string{"--service-cidr", `"172.24.0.1/16" has host bits set; the network is 172.24.0.0/16`}},
		{name: "malformed pod CIDR", opts: rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0"}},
			want: []string{"--pod-network-cidr", `"10.55.0.0" is not a CIDR`}},
		{name: "three service CIDRs", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16,fd00::/108,10.0.0.0/16"}},
			want: []string{"--service-cidr", "at most two CIDRs (one per family)"}},
		{name: "two IPv4 service CIDRs", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16,172.25.0.0/16"}},
			want: []string{"--service-cidr", "two CIDRs must be one IPv4 and one IPv6"}},
		{name: "new service CIDR overlaps new pod CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "10.0.0.0/8"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}},
			want: []string{"the new service CIDR 10.0.0.0/8 overlaps the new pod CIDR 10.55.0.0/16"}},
		{name: "dual-stack overlap in the IPv6 family", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16,fd00:55::/108"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16,fd00:55::/56"}},
			want: []string{"the new service CIDR fd00:55::/108 overlaps the new pod CIDR fd00:55::/56"}},
		{name: "service CIDR map without =", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", ServiceCIDRMap: []string{"10.100.0.0/16"}}},
			want: []string{"--service-cidr-map", `"10.100.0.0/16": want OLD=NEW`}},
		{name: "service CIDR map across families", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", ServiceCIDRMap: []string{"10.100.0.0/16=fd00:25::/108"}}},
			want: []string{"--service-cidr-map", "a mapping stays within one family"}},
		{name: "service CIDR map without a service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDRMap: []string{"10.100.0.0/16=172.25.0.0/16"}}},
			want: []string{"--service-cidr-map needs --service-cidr"}},
		{name: "service CIDR map of a range no ServiceCIDR holds", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", ServiceCIDRMap: []string{"10.100.0.0/16=172.25.0.0/16"}}},
			want: []string{"--service-cidr-map 10.100.0.0/16=172.25.0.0/16: no ServiceCIDR besides the default one holds 10.100.0.0/16"}},
		// (--dns-bridge's advice to keep the DNS Service waits for the snapshot: it must not
		// repeat a misspelt --dns-service.)
		{name: "dns bridge without keep", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", DNSBridge: true}},
			want: []string{"--dns-bridge", "add --keep-service-ip kube-system/kube-dns"}},
		{name: "dns bridge keeping another service", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", DNSBridge: true, KeepServiceIPs: []string{"demo/web"}}},
			want: []string{"--dns-bridge", "add --keep-service-ip kube-system/kube-dns"}},
		{name: "dns bridge with a misspelt dns service", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", DNSBridge: true, DNSService: "kube-system/kube-dnz"}},
			want: []string{"--dns-service kube-system/kube-dnz: no such Service in the snapshot; did you mean kube-system/kube-dns?"}},
		{name: "misspelt dns service", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", DNSService: "kube-system/coredns"}},
			want: []string{"--dns-service kube-system/coredns: no such Service in the snapshot"}},
		{name: "dns service without a namespace", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", DNSService: "kube-dns"}},
			want: []string{`--dns-service "kube-dns": want NAMESPACE/NAME, e.g. kube-system/kube-dns`}},
		{name: "dns bridge without service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{DNSBridge: true, KeepServiceIPs: []string{"kube-system/kube-dns"}}},
			want: []string{"--keep-service-ip needs --service-cidr"}},
		{name: "keep without service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{KeepServiceIPs: []string{"kube-system/kube-dns"}}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}},
			want: []string{"--keep-service-ip needs --service-cidr"}},
		{name: "old service CIDR without service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{OldServiceCIDR: "192.168.0.0/16"}},
			want: []string{"--old-service-cidr needs --service-cidr"}},
		{name: "old pod CIDR without pod CIDR", opts: rules.Options{PodCIDROptions: rules.PodCIDROptions{OldPodNetworkCIDR: "10.244.0.0/16"}, ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}},
			want: []string{"--old-pod-network-cidr needs --pod-network-cidr"}},
		{name: "repack without service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{Repack: true}},
			want: []string{"--repack needs --service-cidr"}},
		{name: "loopback service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "127.0.0.0/16"}},
			want: []string{"the new service CIDR 127.0.0.0/16 (--service-cidr) overlaps the loopback range 127.0.0.0/8: give a range of ordinary unicast addresses"}},
		{name: "multicast IPv6 service CIDR", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16,ff00::/108"}},
			want: []string{"the new service CIDR ff00::/108 (--service-cidr) overlaps the multicast range ff00::/8"}},
		{name: "link-local pod CIDR", opts: rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "169.254.0.0/16"}},
			want: []string{"the new pod network CIDR 169.254.0.0/16 (--pod-network-cidr) overlaps the link-local range 169.254.0.0/16"}},
		{name: "keep without a namespace", opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"kube-dns"}}},
			want: []string{`--keep-service-ip "kube-dns": want NAMESPACE/NAME`}},

		// These need the snapshot.
		{name: "mixed-family service mapping", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "fd00:20:96::/108"}},
			want: []string{"rule service-cidr: ", "the new service CIDR fd00:20:96::/108 (--service-cidr) is IPv6, but the old one (IPv4 192.168.0.0/16) has no IPv6 range: a mapping must stay within one family"}},
		{name: "mixed-family pod mapping", snapshot: true, opts: rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "fd00:55::/56"}},
			want: []string{"rule pod-cidr: ", "the new pod network CIDR fd00:55::/56 (--pod-network-cidr) is IPv6, but the old one (IPv4 10.244.0.0/16) has no IPv6 range"}},
		{name: "old service CIDR not in the snapshot", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", OldServiceCIDR: "10.96.0.0/12"}},
			want: []string{"--old-service-cidr 10.96.0.0/12 does not match what the snapshot holds", "kubeadm-config networking.serviceSubnet says 192.168.0.0/16"}},
		{name: "old pod CIDR not in the snapshot", snapshot: true, opts: rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16", OldPodNetworkCIDR: "10.32.0.0/12"}},
			want: []string{"--old-pod-network-cidr 10.32.0.0/12 does not match what the snapshot holds", "kube-proxy clusterCIDR says 10.244.0.0/16"}},
		{name: "unknown keep-service-ip", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"demo/nope"}}},
			want: []string{"--keep-service-ip demo/nope: no such Service"}},
		{name: "two unknown keep-service-ips", snapshot: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"demo/zz", "demo/nope"}}},
			want: []string{"--keep-service-ip demo/nope, demo/zz: no such Service with a cluster IP in the snapshot"}},
		{name: "shrink too far", snapshot: true, refused: true, opts: rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/24"}},
			want: []string{"refused: the new service range 172.24.0.0/24 is too small", "demo/api (192.168.200.14, offset 51214)", "pass --repack"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, buildErr := rules.Build(c.opts)
			var err error
			if c.snapshot {
				if buildErr != nil {
					t.Fatalf("Build refused flags that only the snapshot can refuse: %v", buildErr)
				}
				out := filepath.Join(t.TempDir(), "out.db")
				_, _, _, err = runRules(t, in, out, c.opts)
				if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
					t.Errorf("a refused transform wrote %s", out)
				}
			} else {
				err = buildErr
			}
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			// Options are named as the CLI names them.
			msg, _ := option.Render(err, rules.FlagName)
			at := 0
			for _, w := range c.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error %q\nwant it to contain (in order) %q", msg, c.want)
				}
				at += i + len(w)
			}
			if strings.ContainsAny(msg, "\n\t") || secondSentence.MatchString(msg) || strings.HasSuffix(msg, ".") {
				t.Errorf("error %q is not one sentence", msg)
			}
			if errors.Is(err, transform.ErrRefused) != c.refused {
				t.Errorf("errors.Is(err, ErrRefused) = %v, want %v", !c.refused, c.refused)
			}
		})
	}
}
