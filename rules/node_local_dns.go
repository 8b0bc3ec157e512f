package rules

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/ruleset"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameNodeLocalDNS is the node-local-dns rule.
const NameNodeLocalDNS = "node-local-dns"

// Where NodeLocal DNSCache keeps the cluster DNS address: its Corefile
// forwards the cluster domain and the reverse zones to the kube-dns
// ClusterIP (and, in iptables mode, binds it too), and its DaemonSet may
// carry that address in -localip or env. The upstream addon
// (cluster/addons/dns/nodelocaldns) names ConfigMap and DaemonSet
// node-local-dns; kubespray names both nodelocaldns (plus
// nodelocaldns-second for its secondary cache).
var (
	nodeLocalDNSConfigs    = wellknown.NodeLocalDNSConfigMaps
	nodeLocalDNSDaemonSets = wellknown.NodeLocalDNSDaemonSets
)

// NodeLocalDNS moves the Service addresses NodeLocal DNSCache holds as text
// (the Corefile's forward targets, the DaemonSet's args and env) with the
// Services. kubelet's clusterDNS there is the cache's link-local address,
// which no range holds: it is left alone.
//
// A DNS Service kept with a bridge (--keep-service-ip kube-system/kube-dns
// --dns-bridge) is the one address that does not follow its Service: the
// cache names the bridge's address instead of the kept one. The cache
// binds the kubelets' clusterDNS (the bridge's address, after the
// cluster-config rule) and forwards to it, or to kube-dns-upstream, which
// moves as any Service: the bridge serves that address during the window
// and kube-dns itself after the restart's handover recreates it there,
// while the kept address is released by the handover.
type NodeLocalDNS struct {
	plan    *Plan
	mapping map[netip.Addr]netip.Addr
	notes   []string
}

// addresses is the Service plan's mapping, plus the kept DNS Service's
// address to its bridge's.
func (r *NodeLocalDNS) addresses() map[netip.Addr]netip.Addr {
	if r.mapping != nil {
		return r.mapping
	}
	sp := r.plan.Service
	r.mapping = sp.IPs
	if sp.Bridge.IsValid() && sp.DNS.IsValid() && sp.DNS != sp.Bridge {
		r.mapping = make(map[netip.Addr]netip.Addr, len(sp.IPs)+1)
		for a, b := range sp.IPs {
			r.mapping[a] = b
		}
		r.mapping[sp.DNS] = sp.Bridge
	}
	return r.mapping
}

var nodeLocalDNSEntry = Entry{
	Name:    NameNodeLocalDNS,
	Summary: "move the Service addresses NodeLocal DNSCache holds as text (Corefile forward targets, DaemonSet args and env)",
	Touches: []string{"configmaps kube-system/node-local-dns, nodelocaldns (every data value)",
		"daemonsets.apps kube-system/node-local-dns, nodelocaldns, nodelocaldns-second (container args, command, env)"},
	After:   []string{NameServiceCIDR}, // it reads the service plan
	Enabled: func(o *Options) bool { return o.ServiceCIDR != "" },
	New:     func(_ Options, p *Plan) transform.Rule { return &NodeLocalDNS{plan: p} },
	Example: func() Options { return Options{ServiceCIDROptions: ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}} },
	Options: func(*Options) []Option { return nil },
}

func (r *NodeLocalDNS) Name() string { return NameNodeLocalDNS }

func (r *NodeLocalDNS) Prefixes() []string {
	return append(slices.Clone(nodeLocalDNSConfigs), nodeLocalDNSDaemonSets...)
}

func (r *NodeLocalDNS) Notes() []string { return r.notes }

// Apply edits the ConfigMap or the DaemonSet.
func (r *NodeLocalDNS) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	if r.plan.Service == nil || len(r.addresses()) == 0 {
		return transform.Result{}, nil
	}
	var changes []transform.Change
	switch o := obj.Value.Obj.(type) {
	case *corev1.ConfigMap:
		if !slices.Contains(nodeLocalDNSConfigs, obj.Key) {
			return transform.Result{}, nil
		}
		var err error
		if changes, err = r.editData(o); err != nil {
			return transform.Result{}, err
		}
	case *appsv1.DaemonSet:
		if !slices.Contains(nodeLocalDNSDaemonSets, obj.Key) {
			return transform.Result{}, nil
		}
		changes = r.editPodSpec(&o.Spec.Template.Spec)
	default:
		return transform.Result{}, fmt.Errorf("stored object is %s, not a ConfigMap or DaemonSet", obj.Value.GVK)
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	r.notes = append(r.notes, fmt.Sprintf("%s: the cluster DNS address moved in it; restart the node-local-dns pods", strings.TrimPrefix(obj.Key, wellknown.DefaultPrefix)))
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

func (r *NodeLocalDNS) editData(cm *corev1.ConfigMap) ([]transform.Change, error) {
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var changes []transform.Change
	before := maps.Clone(cm.Data)
	for _, k := range keys {
		if s, ch := mapAddressesInText(cm.Data[k], r.addresses()); ch.len() > 0 {
			cm.Data[k] = s
			changes = append(changes, transform.Change{Field: "data[" + k + "]", Old: strings.Join(ch.old, ","), New: strings.Join(ch.new, ",")})
		}
	}
	more, err := syncLastAppliedData(cm, before)
	return append(changes, more...), err
}

func (r *NodeLocalDNS) editPodSpec(spec *corev1.PodSpec) []transform.Change {
	var changes []transform.Change
	edit := func(field string, s *string) {
		if n, ch := mapAddressesInText(*s, r.addresses()); ch.len() > 0 {
			*s = n
			changes = append(changes, transform.Change{Field: field, Old: strings.Join(ch.old, ","), New: strings.Join(ch.new, ",")})
		}
	}
	for ci := range spec.Containers {
		c := &spec.Containers[ci]
		for i := range c.Args {
			edit(fmt.Sprintf("containers[%s].args[%d]", c.Name, i), &c.Args[i])
		}
		for i := range c.Command {
			edit(fmt.Sprintf("containers[%s].command[%d]", c.Name, i), &c.Command[i])
		}
		for i := range c.Env {
			edit(fmt.Sprintf("containers[%s].env[%s]", c.Name, c.Env[i].Name), &c.Env[i].Value)
		}
	}
	return changes
}

// textChanges are the addresses mapAddressesInText replaced, in order.
type textChanges struct{ old, new []string }

func (t textChanges) len() int { return len(t.old) }

// addressToken finds IPv4 literals and IPv6 candidates (anything with a
// colon) in text: a Corefile, a flag list "169.254.20.10,10.96.0.10", a
// "host:port". Each candidate is parsed before it is trusted, and one that
// runs on into more digits or dots ("10.96.0.10.1") is left alone.
var addressToken = regexp.MustCompile(`(?:[0-9]{1,3}\.){3}[0-9]{1,3}|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*`)

// mapAddressesInText replaces every whole address literal in s that
// mapping moves; everything else in s is kept byte for byte.
func mapAddressesInText(s string, mapping map[netip.Addr]netip.Addr) (string, textChanges) {
	out, ch, _ := replaceTokens(s, addressToken, func(tok string) (string, bool, error) {
		a, err := netip.ParseAddr(tok)
		if err != nil {
			return "", false, nil
		}
		n, ok := mapping[a]
		if !ok {
			return "", false, nil
		}
		return n.String(), true, nil
	})
	return out, ch
}

// replaceTokens is ruleset.ReplaceTokens, its changes as textChanges.
func replaceTokens(s string, re *regexp.Regexp, fn func(tok string) (string, bool, error)) (string, textChanges, error) {
	out, tc, err := ruleset.ReplaceTokens(s, re, fn)
	var ch textChanges
	for _, c := range tc {
		ch.old, ch.new = append(ch.old, c.Old), append(ch.new, c.New)
	}
	if err != nil {
		return s, ch, err
	}
	return out, ch, nil
}
