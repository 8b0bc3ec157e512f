// Package verify re-opens a snapshot and checks what snapshift promises:
// the file (trailer, bbolt structure), the etcd layer (every revision and
// KeyValue valid, revision metadata consistent, compaction markers sane),
// the Kubernetes layer (every stored value decodes), and, when the new
// networks are given, the invariants of the remap rules: Services, the
// allocator state, Nodes and the ConfigMaps all agree with the new ranges.
package verify

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/progress"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
)

// ErrFailed is wrapped when at least one check failed.
var ErrFailed = errors.New("verification failed")

// Config configures Run.
type Config struct {
	Path          string
	SkipHashCheck bool
	// ServiceCIDR and PodNetworkCIDR, when set, turn on the network
	// invariants (comma-separated for dual stack).
	ServiceCIDR    string
	PodNetworkCIDR string
	// KeepServiceIPs are Services allowed outside the new service range.
	KeepServiceIPs []string
	// DNSService is the cluster DNS Service kubelet's clusterDNS must point
	// at (or at its bridge). Default kube-system/kube-dns.
	DNSService string
	// Structure runs bbolt's page-by-page check and decodes every stored
	// Kubernetes value (the verify command does; transform's own check of
	// its output skips these two, which re-read everything it just wrote).
	Structure bool
	Progress  progress.Reporter
	// Encryption decrypts values encrypted at rest so they are checked too.
	Encryption *encryption.Config
	// JustWritten is for a file this process has just written (transform's
	// check of its own output, before its trailer is appended: give
	// SkipHashCheck too): no trailer check, no per-key metadata walk.
	JustWritten bool
}

// Check is one named check.
type Check struct {
	Name     string   `json:"name"`
	OK       bool     `json:"ok"`
	Detail   string   `json:"detail,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// Report lists every check.
type Report struct {
	Path   string  `json:"path"`
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

const maxProblems = 20

type checker struct {
	r *Report
}

func (c *checker) add(name string, problems []string, detail string, args ...any) {
	ch := Check{Name: name, OK: len(problems) == 0, Detail: fmt.Sprintf(detail, args...)}
	if len(problems) > maxProblems {
		more := len(problems) - maxProblems
		problems = append(problems[:maxProblems], fmt.Sprintf("... and %d more", more))
	}
	ch.Problems = problems
	c.r.Checks = append(c.r.Checks, ch)
	if !ch.OK {
		c.r.OK = false
	}
}

// Run checks one snapshot. A snapshot that cannot be opened is an error;
// failed checks are in the report (and Err says whether any failed).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.DNSService == "" {
		cfg.DNSService = "kube-system/kube-dns"
	}
	hash := snapshot.HashVerify
	if cfg.JustWritten {
		hash = snapshot.HashTrailerOnly
	}
	snap, err := snapshot.Open(cfg.Path, snapshot.OpenOptions{AllowNoTrailer: cfg.SkipHashCheck, Hash: hash, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	c := &checker{r: &Report{Path: cfg.Path, OK: true}}
	if snap.HasTrailer && cfg.JustWritten {
		c.add("sha256 trailer", nil, "written by this run (%s)", snap.SHA256)
	} else if snap.HasTrailer {
		c.add("sha256 trailer", nil, "matches (%s)", snap.SHA256)
	} else {
		c.add("sha256 trailer", nil, "absent; not checked (--skip-hash-check)")
	}
	if cfg.Structure {
		probs, err := snap.CheckStructure(maxProblems)
		if err != nil {
			return nil, err
		}
		c.add("bbolt structure", probs, "every bucket, key and value readable")
	}
	// A check of a file just written reads only the keys the network checks
	// read: a second full index of a large output would double the memory.
	opts := snapshot.IndexOptions{Named: networkListed}
	if cfg.JustWritten && !cfg.Structure {
		opts.Only = networkKey
	}
	ix, err := snap.IndexWith(ctx, cfg.Progress, opts)
	if err != nil {
		// Index stops at the first malformed revision or KeyValue.
		c.add("key bucket", []string{err.Error()}, "")
		return c.r, nil
	}
	c.add("key bucket", nil, "%d revisions, every key a valid revision and every value a valid mvccpb.KeyValue", ix.Entries)
	if !cfg.JustWritten {
		kc, err := snap.CheckKeys(ctx, maxProblems)
		if err != nil {
			return nil, err
		}
		c.add("revision metadata", kc.Problems, "mod_revision equals its revision, create_revision and version consistent per key")
	}
	var mark []string
	m := snap.Meta
	if m.FinishedCompact > m.ScheduledCompact {
		mark = append(mark, fmt.Sprintf("finishedCompactRev %d is after scheduledCompactRev %d", m.FinishedCompact, m.ScheduledCompact))
	}
	if m.ScheduledCompact > ix.LastRevision.Main+1 {
		mark = append(mark, fmt.Sprintf("scheduledCompactRev %d is beyond the next revision %d", m.ScheduledCompact, ix.LastRevision.Main+1))
	}
	c.add("compaction markers", mark, "scheduled %d, finished %d, last revision %d", m.ScheduledCompact, m.FinishedCompact, ix.LastRevision.Main)

	cd := codec.New()
	if cfg.Structure {
		if err := checkDecode(ctx, c, snap, ix, cd, cfg.Encryption, cfg.Progress); err != nil {
			return nil, err
		}
	}
	if cfg.ServiceCIDR != "" || cfg.PodNetworkCIDR != "" {
		if err := checkNetworks(ctx, c, state.NewView(snap, ix, cd, cfg.Encryption), cfg); err != nil {
			return nil, err
		}
	}
	return c.r, nil
}

// Err returns an error wrapping ErrFailed that names the failed checks.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	var names []string
	for _, c := range r.Checks {
		if !c.OK {
			first := ""
			if len(c.Problems) > 0 {
				first = ": " + c.Problems[0]
			}
			names = append(names, c.Name+first)
		}
	}
	return fmt.Errorf("%w: %s", ErrFailed, strings.Join(names, "; "))
}

func checkDecode(ctx context.Context, c *checker, snap *snapshot.Snapshot, ix *snapshot.Index, cd *codec.Codec, enc *encryption.Config, p progress.Reporter) error {
	var probs []string
	counts := map[string]int{}
	err := snap.Live(ctx, ix, "verify", p, func(e *snapshot.Entry) error {
		key := string(e.KV.Key)
		if !strings.HasPrefix(key, "/registry/") {
			return nil
		}
		value := e.KV.Value
		kind := codec.Detect(value)
		if kind == codec.Encrypted && enc != nil {
			plain, info, err := enc.Decrypt(key, value)
			switch {
			case errors.Is(err, encryption.ErrKMS):
			case err != nil:
				probs = append(probs, fmt.Sprintf("%s: %v", key, err))
				return nil
			default:
				counts["decrypted "+info.Provider]++
				value, kind = plain, codec.Detect(plain)
			}
		}
		counts[kind.String()]++
		switch kind {
		case codec.Encrypted:
			return nil
		case codec.Unknown:
			probs = append(probs, fmt.Sprintf("%s: not a Kubernetes value (%d bytes)", key, len(value)))
			return nil
		}
		if _, err := cd.Decode(value); err != nil {
			if errors.Is(err, codec.ErrUnknownType) {
				counts["unknown-to-this-build"]++
				return nil
			}
			probs = append(probs, fmt.Sprintf("%s: %v", key, err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.add("Kubernetes values decode", probs, "protobuf %d, json %d, cbor %d, encrypted (not checked) %d, types unknown to this build %d",
		counts["protobuf"], counts["json"], counts["cbor"], counts["encrypted"], counts["unknown-to-this-build"])
	return nil
}

func parseList(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range state.SplitCIDRs(s) {
		p, err := cidr.Parse(part)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func inAny(ps []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, p := range ps {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

func familyOf(ps []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, p := range ps {
		if p.Addr().Is4() == a.Is4() {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

func checkNetworks(ctx context.Context, c *checker, v *state.View, cfg Config) error {
	svcNet, err := parseList(cfg.ServiceCIDR)
	if err != nil {
		return fmt.Errorf("--service-cidr: %w", err)
	}
	podNet, err := parseList(cfg.PodNetworkCIDR)
	if err != nil {
		return fmt.Errorf("--pod-network-cidr: %w", err)
	}
	keep := map[string]bool{}
	for _, k := range cfg.KeepServiceIPs {
		keep[state.PrefixServices+k] = true
	}
	nets, err := state.Detect(ctx, v)
	if err != nil {
		return err
	}
	var dnsIPs []string
	if len(svcNet) > 0 {
		svcs, err := v.List(state.PrefixServices)
		if err != nil {
			return err
		}
		owner := map[netip.Addr]string{}
		var outside, dups []string
		for _, o := range svcs {
			svc, ok := o.Value.Obj.(*corev1.Service)
			if !ok {
				continue
			}
			ips := svc.Spec.ClusterIPs
			if len(ips) == 0 && svc.Spec.ClusterIP != "" {
				ips = []string{svc.Spec.ClusterIP}
			}
			for _, ip := range ips {
				a, err := netip.ParseAddr(ip)
				if err != nil || svc.Spec.Type == corev1.ServiceTypeExternalName {
					continue
				}
				if o.Key == state.PrefixServices+cfg.DNSService || svc.Annotations["snapshift.io/bridge-for"] != "" {
					dnsIPs = append(dnsIPs, a.String())
				}
				if prev, dup := owner[a]; dup {
					dups = append(dups, fmt.Sprintf("%s: %s and %s", a, prev, o.Key))
				}
				owner[a] = o.Key
				if fam, ok := familyOf(svcNet, a); ok && !fam.Contains(a) && !keep[o.Key] {
					outside = append(outside, fmt.Sprintf("%s: %s is outside %s", o.Key, a, fam))
				}
			}
		}
		exempt := ""
		if len(cfg.KeepServiceIPs) > 0 {
			exempt = "; exempt: " + strings.Join(cfg.KeepServiceIPs, ",")
		}
		c.add("Service ClusterIPs in the new range", outside, "%d Service addresses%s", len(owner), exempt)
		c.add("no duplicate ClusterIPs", dups, "")

		// RangeAllocation bitmaps equal what the Services imply.
		var rangeProbs []string
		for _, key := range []string{state.KeyServiceIPRange, state.KeySecondaryIPRange} {
			o, ok, err := v.Get(key)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			ra, ok := o.Value.Obj.(*corev1.RangeAllocation)
			if !ok {
				rangeProbs = append(rangeProbs, key+": not a RangeAllocation")
				continue
			}
			rp, err := netip.ParsePrefix(ra.Range)
			if err != nil {
				rangeProbs = append(rangeProbs, fmt.Sprintf("%s: range %q is not a CIDR", key, ra.Range))
				continue
			}
			want, ok := familyOf(svcNet, rp.Addr())
			if !ok {
				continue
			}
			if rp != want {
				rangeProbs = append(rangeProbs, fmt.Sprintf("%s: range %s, want %s", key, rp, want))
				continue
			}
			have, err := cidr.BitmapAddrs(rp, ra.Data)
			if err != nil {
				rangeProbs = append(rangeProbs, fmt.Sprintf("%s: %v", key, err))
				continue
			}
			var expect []netip.Addr
			sr := cidr.NewServiceRange(rp)
			for a := range owner {
				if off, err := cidr.Offset(rp, a); err == nil && off.Sign() > 0 && off.Cmp(sr.Count) <= 0 {
					expect = append(expect, a)
				}
			}
			if d := diffAddrs(have, expect); d != "" {
				rangeProbs = append(rangeProbs, fmt.Sprintf("%s: bitmap differs from the Services: %s", key, d))
			}
		}
		c.add("RangeAllocation matches the Services", rangeProbs, "")

		// IPAddress objects: one per ClusterIP, named after it, parentRef right.
		ipKeys := v.Index().LiveKeysWithPrefix(state.PrefixIPAddresses)
		if len(ipKeys) > 0 {
			var probs []string
			seen := map[netip.Addr]bool{}
			for _, kr := range ipKeys {
				o, _, err := v.Get(kr.Key)
				if err != nil {
					return err
				}
				a, err := netip.ParseAddr(strings.TrimPrefix(kr.Key, state.PrefixIPAddresses))
				if err != nil {
					probs = append(probs, kr.Key+": name is not an IP")
					continue
				}
				seen[a] = true
				ns, name, group, res := parentRef(o.Value.Obj)
				want, owned := owner[a]
				switch {
				case !owned:
					probs = append(probs, fmt.Sprintf("%s: no Service has this address (orphan)", kr.Key))
				case group != "" || res != "services" || state.PrefixServices+ns+"/"+name != want:
					probs = append(probs, fmt.Sprintf("%s: parentRef %s/%s %s/%s, want %s", kr.Key, group, res, ns, name, want))
				}
			}
			for a, k := range owner {
				if _, ok := inAny(svcNet, a); ok && !seen[a] {
					probs = append(probs, fmt.Sprintf("%s: %s has no IPAddress object", k, a))
				}
			}
			sort.Strings(probs)
			c.add("IPAddress objects match the Services", probs, "%d IPAddress objects", len(ipKeys))
		}
		// The default ServiceCIDR.
		if o, ok, err := v.Get(state.KeyDefaultServiceCIDR); err != nil {
			return err
		} else if ok {
			var got []string
			switch sc := o.Value.Obj.(type) {
			case *networkingv1.ServiceCIDR:
				got = sc.Spec.CIDRs
			case *networkingv1beta1.ServiceCIDR:
				got = sc.Spec.CIDRs
			}
			var probs []string
			if strings.Join(got, ",") != prefixes(svcNet) {
				probs = append(probs, fmt.Sprintf("spec.cidrs %s, want %s", strings.Join(got, ","), prefixes(svcNet)))
			}
			c.add("default ServiceCIDR is the new range", probs, "")
		}
	}
	if len(podNet) > 0 {
		var probs []string
		type nc struct {
			node string
			p    netip.Prefix
		}
		var all []nc
		for _, n := range nets.Nodes {
			for _, s := range n.PodCIDRs {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					probs = append(probs, fmt.Sprintf("node %s: %q is not a CIDR", n.Node, s))
					continue
				}
				fam, ok := familyOf(podNet, p.Addr())
				if !ok {
					probs = append(probs, fmt.Sprintf("node %s: %s has a family the cluster CIDR does not (kube-controller-manager exits)", n.Node, p))
					continue
				}
				if !fam.Contains(p.Addr()) || p.Bits() < fam.Bits() {
					probs = append(probs, fmt.Sprintf("node %s: %s is outside the cluster CIDR %s (kube-controller-manager exits)", n.Node, p, fam))
				}
				all = append(all, nc{n.Node, p})
			}
		}
		for i := range all {
			for j := i + 1; j < len(all); j++ {
				if all[i].p.Overlaps(all[j].p) {
					probs = append(probs, fmt.Sprintf("nodes %s (%s) and %s (%s) overlap", all[i].node, all[i].p, all[j].node, all[j].p))
				}
			}
		}
		c.add("node pod CIDRs inside the cluster CIDR and disjoint", probs, "%d nodes", len(nets.Nodes))
	}
	// ConfigMaps agree with the CIDRs.
	var probs []string
	for _, s := range nets.ServiceCIDR {
		if len(svcNet) > 0 && strings.Join(s.CIDRs, ",") != prefixes(svcNet) {
			probs = append(probs, fmt.Sprintf("%s says %s, want %s", s.Source, strings.Join(s.CIDRs, ","), prefixes(svcNet)))
		}
	}
	for _, s := range nets.PodCIDR {
		if strings.HasPrefix(s.Source, "Node podCIDRs") {
			continue
		}
		if len(podNet) > 0 && strings.Join(s.CIDRs, ",") != prefixes(podNet) {
			probs = append(probs, fmt.Sprintf("%s says %s, want %s", s.Source, strings.Join(s.CIDRs, ","), prefixes(podNet)))
		}
	}
	if len(svcNet) > 0 {
		for _, d := range nets.ClusterDNS {
			if !contains(dnsIPs, d) {
				probs = append(probs, fmt.Sprintf("kubelet-config clusterDNS %s is not the address of kube-dns or kube-dns-bridge (%s)", d, strings.Join(dnsIPs, ",")))
			}
		}
	}
	c.add("configuration agrees with the CIDRs", probs, "kubeadm-config, kubelet-config, kube-proxy, flannel, ServiceCIDR, RangeAllocation")
	return nil
}

func parentRef(o any) (ns, name, group, resource string) {
	switch ip := o.(type) {
	case *networkingv1.IPAddress:
		if r := ip.Spec.ParentRef; r != nil {
			return r.Namespace, r.Name, r.Group, r.Resource
		}
	case *networkingv1beta1.IPAddress:
		if r := ip.Spec.ParentRef; r != nil {
			return r.Namespace, r.Name, r.Group, r.Resource
		}
	}
	return
}

func prefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func diffAddrs(have, want []netip.Addr) string {
	h, w := map[netip.Addr]bool{}, map[netip.Addr]bool{}
	for _, a := range have {
		h[a] = true
	}
	for _, a := range want {
		w[a] = true
	}
	var extra, missing []string
	for a := range h {
		if !w[a] {
			extra = append(extra, a.String())
		}
	}
	for a := range w {
		if !h[a] {
			missing = append(missing, a.String())
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, "allocated but no Service: "+strings.Join(extra, ","))
	}
	if len(missing) > 0 {
		parts = append(parts, "Service but not allocated: "+strings.Join(missing, ","))
	}
	return strings.Join(parts, "; ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// networkListed are the prefixes checkNetworks (and clusterinfo) list.
var networkListed = []string{state.PrefixServices, state.PrefixIPAddresses, state.PrefixNodes}

// networkKeyPrefixes are where everything checkNetworks reads lives.
var networkKeyPrefixes = []string{
	state.PrefixServices, state.PrefixIPAddresses, state.PrefixNodes,
	"/registry/ranges/", "/registry/servicecidrs/",
	"/registry/configmaps/kube-system/", "/registry/configmaps/kube-flannel/",
}

func networkKey(key []byte) bool {
	for _, p := range networkKeyPrefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}
