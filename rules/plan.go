package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"

	"github.com/snapshift/snapshift/wellknown"
)

// Plan is what the network rules decided in Prepare; cluster-config and
// the report read it.
type Plan struct {
	Service *ServicePlan `json:"service,omitempty"`
	Pod     *PodPlan     `json:"pod,omitempty"`
	// CNI names the CNIs the snapshot shows (the cni rule's detection).
	CNI []state.CNI `json:"cni,omitempty"`
	// Webhooks are the admission webhooks that would block the restart
	// (the webhooks rule).
	Webhooks []WebhookChange `json:"webhooks,omitempty"`

	detected *state.Networks
	inUse    *[]inUse // addresses no rule moves, read once
	// serviceInUse are the Services' external addresses, when the
	// service-cidr rule has read every Service already.
	serviceInUse *[]inUse
	// NoKubelet names the Nodes that run no kubelet
	// (state.NodesWithoutKubelet), read by the first range rule that asks.
	NoKubelet     []string `json:"nodesWithoutKubelet,omitempty"`
	noKubeletRead bool
	// Scale is the cluster's size and what it means for the window
	// (noteScale), read by the first range rule that asks.
	Scale *ScalePlan `json:"scale,omitempty"`
	// stamp is the time every object the rules create carries, read from
	// the input (creationStamp), never from a clock.
	stamp *time.Time
	// distribution is who wrote the snapshot, as the k3s-node-args rule
	// found it (Distribution).
	distribution *state.Distribution
}

// Distribution is who wrote the snapshot (kubeadm, k3s or RKE2 with its
// servers and their node-args), as the k3s-node-args rule found it; nil
// when that rule did not run (no range moved).
func (p *Plan) Distribution() *state.Distribution {
	if p == nil {
		return nil
	}
	return p.distribution
}

// creationStamp is the time the objects the rules create carry
// (creationTimestamp, and deletionTimestamp and condition times where they
// have them): the newest creationTimestamp among the input's Services, so
// a created Service, IPAddress, ServiceCIDR or Secret is no older than any
// Service it joins, and two runs of the same migration write the same
// bytes whenever they run (DESIGN.md decision 37). With no Service
// that records one (hand-written inputs), the Unix epoch. Read once: the
// service-cidr rule hands it over from its own pass over the Services.
func (p *Plan) creationStamp(v *state.View) (time.Time, error) {
	if p.stamp == nil {
		var newest time.Time
		for _, kr := range v.Keys(wellknown.PrefixServices) {
			o, ok, err := v.Get(kr.Key)
			if errors.Is(err, state.ErrEncrypted) {
				continue // unreadable here (KMS): the newest of the others, on every run alike
			}
			if err != nil {
				return time.Time{}, err
			}
			if ok {
				newest = newerStamp(newest, o)
			}
		}
		p.setStamp(newest)
	}
	return *p.stamp, nil
}

// setStamp records the newest creationTimestamp the Services hold.
func (p *Plan) setStamp(newest time.Time) {
	if newest.IsZero() {
		newest = time.Unix(0, 0)
	}
	t := newest.UTC().Truncate(time.Second)
	p.stamp = &t
}

// newerStamp is the later of t and o's creationTimestamp.
func newerStamp(t time.Time, o *state.Object) time.Time {
	if m, ok := o.Value.Obj.(metav1.Object); ok {
		if c := m.GetCreationTimestamp().Time; c.After(t) {
			return c
		}
	}
	return t
}

// noteNoKubelet is the note naming the Nodes without a kubelet, for the
// first rule that asks (one note per run, however many rules move ranges).
func (p *Plan) noteNoKubelet(v *state.View) ([]string, error) {
	if p.noKubeletRead {
		return nil, nil
	}
	p.noKubeletRead = true
	names, err := state.NodesWithoutKubelet(v)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	p.NoKubelet = names
	return []string{fmt.Sprintf("%d of the %d nodes run no kubelet (Ready is not True and the heartbeat Lease is missing or renewed an hour or more before the newest): %s. "+
		"Restarting pods does not reach them: whatever runs there outside kubelet (flannel, kube-proxy as plain services) needs its kubeconfig and ranges changed and a restart by hand",
		len(names), len(v.Keys(wellknown.PrefixNodes)), capNames(names, 10))}, nil
}

// capNames joins names with commas, the first max of them, and says how
// many more there are (a message stays one readable line; JSON output
// carries the full list).
func capNames(names []string, max int) string { return capList(names, max, ", ") }

// capList joins items with sep, the first max of them, and says how many
// more there are.
func capList(items []string, max int, sep string) string {
	if len(items) <= max {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%s… and %d more", strings.Join(items[:max], sep), sep, len(items)-max)
}

// ServicePlan maps the service range.
type ServicePlan struct {
	// Old and New CIDRs, per family, in the order given.
	Old []netip.Prefix `json:"old"`
	New []netip.Prefix `json:"new"`
	// OldSource says where the old CIDRs were found.
	OldSource string `json:"oldSource"`
	// IPs maps every old Service IP that changes to its new IP.
	IPs map[netip.Addr]netip.Addr `json:"-"`
	// Services is the per-Service decision, sorted by key.
	Services []ServiceMove `json:"services"`
	// Bridge is the DNS bridge Service's address, if one is created.
	Bridge netip.Addr `json:"bridge,omitempty"`
	// DNS is the cluster DNS Service's final address.
	DNS netip.Addr `json:"dns,omitempty"`
	// KeptRanges are the old ranges that still hold kept addresses, and
	// KeptServiceCIDR the terminating ServiceCIDR created over them (none
	// on a cluster without ServiceCIDR objects).
	KeptRanges      []netip.Prefix `json:"keptRanges,omitempty"`
	KeptServiceCIDR string         `json:"keptServiceCIDR,omitempty"`
	// Extra are the ServiceCIDRs added beside the default one that move
	// with it (ServiceCIDRMap).
	Extra []RangeMove `json:"extra,omitempty"`
}

// ServiceMove is one Service's decision.
type ServiceMove struct {
	Key    string   `json:"key"`
	Old    []string `json:"old"`
	New    []string `json:"new"`
	Kept   bool     `json:"kept,omitempty"`   // exempt
	Packed bool     `json:"packed,omitempty"` // moved by --repack
}

// PodPlan maps the pod range.
type PodPlan struct {
	Old       []netip.Prefix `json:"old"`
	New       []netip.Prefix `json:"new"`
	OldSource string         `json:"oldSource"`
	Nodes     []NodeMove     `json:"nodes"`
}

// NodeMove is one Node's decision.
type NodeMove struct {
	Node string   `json:"node"`
	Old  []string `json:"old"`
	New  []string `json:"new"`
	// Repacked is true when a CIDR did not fit the new range at its
	// offset and got a free block of its size (RepackNodes).
	Repacked bool `json:"repacked,omitempty"`
}

// parseCIDRList parses the value of an option field with cidr.ParseList
// (one CIDR, or two of different families) and returns the CIDRs as text;
// errors name the option.
func parseCIDRList(field, s string) ([]string, error) {
	ps, err := parsePrefixes(field, s)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out, nil
}

// parsePrefixes parses the value of flag with cidr.ParseList; the error
// names the flag.
// parsePrefixes parses the value of an option field as a CIDR list; errors
// name the option.
func parsePrefixes(field, s string) ([]netip.Prefix, error) {
	ps, err := cidr.ParseList(s)
	if err != nil {
		return nil, option.Errorf(field, "{}: %w", err)
	}
	return ps, nil
}

// checkUsable refuses a new range of option field (kind "service" or "pod
// network") that no cluster can use: loopback, link-local, multicast or the
// unspecified address (cidr.Unusable).
func checkUsable(field, kind string, ps []netip.Prefix) error {
	for _, p := range ps {
		if why := cidr.Unusable(p); why != "" {
			return option.Errorf(field, "the new %s CIDR %s ({}) %s: %s", kind, p, why, cidr.UsableNote)
		}
	}
	return nil
}

func overlaps(a, b string) bool {
	pa, err1 := netip.ParsePrefix(a)
	pb, err2 := netip.ParsePrefix(b)
	return err1 == nil && err2 == nil && pa.Overlaps(pb)
}

// pairByFamily orders new to match old's families. A new family the old
// range does not have is a mixed-family mapping and refused.
func pairByFamily(kind string, old, new []netip.Prefix) ([]netip.Prefix, []netip.Prefix, error) {
	var o2, n2 []netip.Prefix
	for _, n := range new {
		found := false
		for _, o := range old {
			if cidr.SameFamily(o, n) {
				o2, n2 = append(o2, o), append(n2, n)
				found = true
			}
		}
		if !found {
			var olds []string
			for _, o := range old {
				olds = append(olds, cidr.Family(o)+" "+o.String())
			}
			return nil, nil, option.Errorf(kindField(kind), "the new %s %s ({}) is %s, but the old one (%s) has no %s range: a mapping must stay within one family",
				kind, n, cidr.Family(n), strings.Join(olds, ", "), cidr.Family(n))
		}
	}
	return o2, n2, nil
}

// maxListed is how many names a one-line message lists before "… and N
// more", as verify caps its problems.
const maxListed = 10

// agree checks detected sources agree with each other (as sets per
// family) and returns the agreed prefixes and their sources. A
// disagreement is an *option.Error asking for option field.
func agree(kind, field string, sources []detected) ([]netip.Prefix, string, error) {
	if len(sources) == 0 {
		return nil, "", nil
	}
	first := sources[0]
	var names []string
	for _, s := range sources {
		if cidr.Join(s.prefixes) != cidr.Join(first.prefixes) {
			var lines []string
			for _, s := range sources {
				lines = append(lines, fmt.Sprintf("%s says %s", s.source, cidr.Join(s.prefixes)))
			}
			return nil, "", option.Errorf(field, "the snapshot records different old %ss (%s): give the right one with {}",
				kind, strings.Join(lines, "; "))
		}
		names = append(names, s.source)
	}
	sort.Strings(names)
	return first.prefixes, strings.Join(names, ", "), nil
}

type detected struct {
	source   string
	prefixes []netip.Prefix
}
