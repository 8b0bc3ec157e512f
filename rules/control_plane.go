package rules

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/textdist"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameControlPlaneAddress is the control-plane-address rule.
const NameControlPlaneAddress = "control-plane-address"

// ControlPlaneOptions are the control-plane-address rule's options: the
// control plane restored onto machines with other addresses.
type ControlPlaneOptions struct {
	// ControlPlaneEndpoint is the new shared endpoint, host[:port]
	// (kubeadm's controlPlaneEndpoint). Empty: the recorded one, with its
	// host moved when it is a moved node's address.
	ControlPlaneEndpoint string `json:"controlPlaneEndpoint,omitempty"`
	// ControlPlaneAddresses are "<node>=<new IP>" for the control-plane
	// nodes; a node whose recorded address is already that is left alone.
	ControlPlaneAddresses []string `json:"controlPlaneAddresses,omitempty"`
}

var controlPlaneEntry = Entry{
	Name:    NameControlPlaneAddress,
	Summary: "move the control plane to new addresses: kubeadm-config, cluster-info and kube-proxy servers, the kubernetes Endpoints/EndpointSlice, mirror Pod annotations; stale master leases deleted",
	Touches: []string{"configmaps kube-system/kubeadm-config, kube-system/kube-proxy, kube-public/cluster-info (endpoint and addresses as scalars)",
		"endpoints and endpointslices default/kubernetes", "pods kube-system/kube-apiserver-<node> (advertise-address annotation)",
		"masterleases (deleted for moved addresses)"},
	Enabled:  func(o *Options) bool { return o.ControlPlaneEndpoint != "" || len(o.ControlPlaneAddresses) > 0 },
	Validate: func(o *Options) error { _, err := o.ControlPlaneOptions.parse(); return err },
	New: func(o Options, _ *Plan) transform.Rule {
		m, _ := o.ControlPlaneOptions.parse()
		return &ControlPlaneAddress{opts: o.ControlPlaneOptions, nodes: m, recordedOnly: o.RecordedNodesOnly}
	},
	Example: func() Options {
		return Options{ControlPlaneOptions: ControlPlaneOptions{ControlPlaneEndpoint: "k8s-api.internal:6443", ControlPlaneAddresses: []string{"cp1=10.1.0.10"}}}
	},
	Options: func(o *Options) []Option {
		return []Option{
			{Field: "ControlPlaneEndpoint", Name: "control-plane-endpoint", CLI: true, Config: "networking.controlPlaneEndpoint",
				Usage: "the control plane's new shared endpoint, host[:port] (kubeadm's controlPlaneEndpoint)", Value: &o.ControlPlaneEndpoint},
			{Field: "ControlPlaneAddresses", Name: "control-plane-address", CLI: true, Config: "etcd.members[].advertiseAddress",
				Usage: "a control-plane node's new address, <node>=<IP> (repeatable)", Value: &o.ControlPlaneAddresses},
		}
	},
}

// parse checks the options and returns node -> new address.
func (o ControlPlaneOptions) parse() (map[string]netip.Addr, error) {
	if e := o.ControlPlaneEndpoint; e != "" {
		if _, _, err := cidr.SplitHostPort(e); err != nil {
			return nil, option.Errorf("ControlPlaneEndpoint", "{} %v", err) // the error quotes the value
		}
	}
	out := map[string]netip.Addr{}
	seen := map[netip.Addr]string{}
	for _, s := range o.ControlPlaneAddresses {
		node, ip, ok := strings.Cut(s, "=")
		a, err := netip.ParseAddr(ip)
		switch {
		case !ok || node == "":
			return nil, option.Errorf("ControlPlaneAddresses", "{} %q is not NODE=IP: give the node's name and its new address, e.g. cp1=10.0.0.11", s)
		case err != nil || a.Zone() != "":
			return nil, option.Errorf("ControlPlaneAddresses", "{} %q: %q is not an IP address (e.g. %s=10.0.0.11)", s, ip, node)
		}
		if prev, dup := seen[a]; dup && prev != node {
			return nil, option.Errorf("ControlPlaneAddresses", "{}: %s and %s cannot both move to %s", prev, node, a)
		}
		if prev, dup := out[node]; dup && prev != a.Unmap() {
			return nil, option.Errorf("ControlPlaneAddresses", "{} gives node %s two addresses, %s and %s: give each node one", node, prev, a.Unmap())
		}
		seen[a], out[node] = node, a.Unmap()
	}
	return out, nil
}

// ControlPlaneAddress moves the control plane to new addresses, consistently:
// every copy of a moved node's address and of the control-plane endpoint.
type ControlPlaneAddress struct {
	opts         ControlPlaneOptions
	nodes        map[string]netip.Addr
	recordedOnly bool // Options.RecordedNodesOnly
	// addrs maps each moved node's recorded address to its new one;
	// endpoint maps the recorded control-plane endpoint to the new one.
	addrs          map[netip.Addr]netip.Addr
	known          map[netip.Addr]bool // every recorded control-plane address, moved or not
	oldEP, newEP   string
	leasesToDelete map[string]bool
	notes          []string
}

func (r *ControlPlaneAddress) Name() string { return NameControlPlaneAddress }

func (r *ControlPlaneAddress) Prefixes() []string {
	return []string{wellknown.KeyKubeadmConfig, wellknown.KeyKubeProxy, wellknown.KeyClusterInfo, wellknown.KeyKubernetesEndpoints,
		wellknown.KeyKubernetesEndpointSlice, wellknown.PrefixMasterLeases, wellknown.PrefixAPIServerPods}
}

func (r *ControlPlaneAddress) Notes() []string { return r.notes }

// Prepare finds each node's recorded address (its kube-apiserver mirror
// Pod's advertise-address annotation, else its Node's InternalIP) and the
// recorded control-plane endpoint.
func (r *ControlPlaneAddress) Prepare(_ context.Context, v *state.View) error {
	r.addrs, r.leasesToDelete, r.known = map[netip.Addr]netip.Addr{}, map[string]bool{}, map[netip.Addr]bool{}
	names := make([]string, 0, len(r.nodes))
	for n := range r.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, node := range names {
		old, err := recordedAddress(v, node)
		if err != nil {
			return err
		}
		if old.IsValid() {
			r.known[old] = true
		}
		switch {
		case !old.IsValid() && r.recordedOnly:
			return unrecordedNode(v, node, r.nodes[node])
		case !old.IsValid():
			r.notes = append(r.notes, fmt.Sprintf("node %s: no recorded address in the snapshot (a new node): nothing to move", node))
		case old != r.nodes[node]:
			r.addrs[old] = r.nodes[node]
			r.leasesToDelete[wellknown.PrefixMasterLeases+old.String()] = true
			r.notes = append(r.notes, fmt.Sprintf("node %s: %s -> %s", node, old, r.nodes[node]))
		}
	}
	ep, err := recordedEndpoint(v)
	if err != nil {
		return err
	}
	r.oldEP, r.newEP = ep, r.opts.ControlPlaneEndpoint
	if r.newEP == "" && ep != "" {
		r.newEP = r.mapHostPort(ep)
	}
	if r.newEP != "" && r.oldEP != "" && r.newEP != r.oldEP {
		r.notes = append(r.notes, fmt.Sprintf("control-plane endpoint %s -> %s: make the new name or address reach the API servers (DNS, load balancer) before the nodes start", r.oldEP, r.newEP))
	}
	return nil
}

// recordedAddress is a node's API server address as the snapshot records it.
func recordedAddress(v *state.View, node string) (netip.Addr, error) {
	p, isPod, err := getAs[*corev1.Pod](v, wellknown.PrefixAPIServerPods+node)
	if err != nil {
		return netip.Addr{}, err
	}
	if isPod {
		if host, _, err := net.SplitHostPort(p.Annotations[wellknown.AnnotationAPIServerEndpoint]); err == nil {
			if a, err := netip.ParseAddr(host); err == nil {
				return a.Unmap(), nil
			}
		}
	}
	n, isNode, err := getAs[*corev1.Node](v, wellknown.PrefixNodes+node)
	if err != nil || !isNode {
		return netip.Addr{}, err
	}
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == corev1.NodeInternalIP {
			return ip.Unmap(), nil
		}
	}
	return netip.Addr{}, nil
}

// unrecordedNode refuses --control-plane-address for a node the snapshot
// records no address of, with the recorded nodes nearest in spelling.
func unrecordedNode(v *state.View, node string, a netip.Addr) error {
	var names []string
	for _, prefix := range []string{wellknown.PrefixAPIServerPods, wellknown.PrefixNodes} {
		for _, kr := range v.Keys(prefix) {
			if n := strings.TrimPrefix(kr.Key, prefix); n != "" && !strings.Contains(n, "/") && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	var near []string
	for _, n := range names {
		if d := textdist.Distance(strings.ToLower(n), strings.ToLower(node)); d <= max(1, min(3, len(node)/3)) {
			near = append(near, n)
		}
	}
	hint := ""
	if len(near) > 0 {
		hint = "; did you mean " + strings.Join(near, " or ") + "?"
	}
	return option.Errorf("ControlPlaneAddresses", "{} %s=%s: the snapshot records no node %q%s (its nodes: %s)", node, a, node, hint, strings.Join(names, ", "))
}

// recordedEndpoint is kubeadm-config's controlPlaneEndpoint ("" when absent).
func recordedEndpoint(v *state.View) (string, error) {
	cm, isCM, err := getAs[*corev1.ConfigMap](v, wellknown.KeyKubeadmConfig)
	if err != nil || !isCM {
		return "", err
	}
	var cc struct {
		ControlPlaneEndpoint string `json:"controlPlaneEndpoint"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc); err != nil {
		return "", fmt.Errorf("%s: ClusterConfiguration: %w", wellknown.KeyKubeadmConfig, err)
	}
	return cc.ControlPlaneEndpoint, nil
}

// mapAddr is a moved node's new address.
func (r *ControlPlaneAddress) mapAddr(a netip.Addr) (netip.Addr, bool) {
	n, ok := r.addrs[a.Unmap()]
	return n, ok
}

// mapHostPort maps "host:port" or "host" whose host is a moved address.
func (r *ControlPlaneAddress) mapHostPort(s string) string {
	host, port, err := cidr.SplitHostPort(s)
	if err != nil {
		return s
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return s
	}
	n, ok := r.mapAddr(a)
	if !ok {
		return s
	}
	if port == "" {
		return n.String()
	}
	return net.JoinHostPort(n.String(), port)
}

// mapScalar maps one configuration scalar: the endpoint (as host:port or
// in an https URL), or a moved address alone, as host:port or in a URL.
func (r *ControlPlaneAddress) mapScalar(s string) (string, bool) {
	if r.oldEP != "" && r.newEP != "" && s == r.oldEP {
		return r.newEP, r.newEP != s
	}
	if u, err := url.Parse(s); err == nil && u.Scheme == "https" && u.Host != "" && u.Path == "" {
		u.Host = r.mapServer(u)
		return u.String(), u.String() != s
	}
	if n := r.mapHostPort(s); n != s {
		return n, true
	}
	return s, false
}

// mapServer is the new host[:port] of an API server URL (kube-proxy's and
// cluster-info's kubeconfig): the new endpoint when one is given and the
// URL names the recorded endpoint or a control-plane node's address, else
// the URL's host moved with its node.
func (r *ControlPlaneAddress) mapServer(u *url.URL) string {
	host := u.Hostname()
	a, err := netip.ParseAddr(host)
	names := u.Host == r.oldEP || host == r.oldEP || (err == nil && r.known[a.Unmap()])
	if r.opts.ControlPlaneEndpoint == "" || !names {
		return r.mapHostPort(u.Host)
	}
	if _, port, _ := cidr.SplitHostPort(r.newEP); port == "" && u.Port() != "" {
		h, _, _ := cidr.SplitHostPort(r.newEP)
		return net.JoinHostPort(strings.Trim(h, "[]"), u.Port())
	}
	return r.newEP
}

// Apply edits one object.
func (r *ControlPlaneAddress) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	switch {
	case obj.Key == wellknown.KeyKubeadmConfig || obj.Key == wellknown.KeyKubeProxy || obj.Key == wellknown.KeyClusterInfo:
		return r.configMap(obj)
	case obj.Key == wellknown.KeyKubernetesEndpoints:
		return r.endpoints(obj)
	case obj.Key == wellknown.KeyKubernetesEndpointSlice:
		return r.endpointSlice(obj)
	case strings.HasPrefix(obj.Key, wellknown.PrefixMasterLeases):
		if r.leasesToDelete[obj.Key] {
			return transform.Result{Action: transform.Delete, Changes: []transform.Change{{Field: "master lease", Old: strings.TrimPrefix(obj.Key, wellknown.PrefixMasterLeases)}}}, nil
		}
	case strings.HasPrefix(obj.Key, wellknown.PrefixAPIServerPods):
		return r.mirrorPod(obj)
	}
	return transform.Result{}, nil
}

func (r *ControlPlaneAddress) configMap(obj *state.Object) (transform.Result, error) {
	changes, err := editConfigMapScalars(obj, r.mapScalar)
	if err != nil || len(changes) == 0 {
		return transform.Result{}, err
	}
	if obj.Key == wellknown.KeyClusterInfo {
		r.notes = append(r.notes, "cluster-info's server moved: kube-controller-manager's bootstrap signer re-signs it (jws-kubeconfig-*)")
	}
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

func (r *ControlPlaneAddress) endpoints(obj *state.Object) (transform.Result, error) {
	ep, err := state.As[*corev1.Endpoints](obj, "Endpoints")
	if err != nil {
		return transform.Result{}, err
	}
	var changes []transform.Change
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Addresses {
			changes = r.mapIn(changes, fmt.Sprintf("subsets[%d].addresses[%d].ip", i, j), &ep.Subsets[i].Addresses[j].IP)
		}
	}
	return replaceIf(changes), nil
}

func (r *ControlPlaneAddress) endpointSlice(obj *state.Object) (transform.Result, error) {
	es, err := state.As[*discoveryv1.EndpointSlice](obj, "an EndpointSlice")
	if err != nil {
		return transform.Result{}, err
	}
	var changes []transform.Change
	for i := range es.Endpoints {
		for j := range es.Endpoints[i].Addresses {
			changes = r.mapIn(changes, fmt.Sprintf("endpoints[%d].addresses[%d]", i, j), &es.Endpoints[i].Addresses[j])
		}
	}
	return replaceIf(changes), nil
}

func (r *ControlPlaneAddress) mirrorPod(obj *state.Object) (transform.Result, error) {
	p, err := state.As[*corev1.Pod](obj, "a Pod")
	if err != nil {
		return transform.Result{}, err
	}
	old, has := p.Annotations[wellknown.AnnotationAPIServerEndpoint]
	if n := r.mapHostPort(old); has && n != old {
		p.Annotations[wellknown.AnnotationAPIServerEndpoint] = n
		return transform.Result{Action: transform.Replace, Changes: []transform.Change{{Field: "metadata.annotations[" + wellknown.AnnotationAPIServerEndpoint + "]", Old: old, New: n}}}, nil
	}
	return transform.Result{}, nil
}

// mapIn moves the address *s in place when it is a moved node's, and
// returns changes with that change (at field) added.
func (r *ControlPlaneAddress) mapIn(changes []transform.Change, field string, s *string) []transform.Change {
	a, err := netip.ParseAddr(*s)
	if err != nil {
		return changes
	}
	n, ok := r.mapAddr(a)
	if !ok {
		return changes
	}
	changes = append(changes, transform.Change{Field: field, Old: *s, New: n.String()})
	*s = n.String()
	return changes
}

func replaceIf(changes []transform.Change) transform.Result {
	if len(changes) == 0 {
		return transform.Result{}
	}
	return transform.Result{Action: transform.Replace, Changes: slices.Clip(changes)}
}

// RecordedAPIServerAddress is a control-plane node's API server address as
// a snapshot records it: its kube-apiserver mirror Pod's advertise-address
// annotation, else its Node's InternalIP; invalid when neither is there.
// The View must hold the node's mirror Pod and Node keys.
func RecordedAPIServerAddress(v *state.View, node string) (netip.Addr, error) {
	return recordedAddress(v, node)
}

// ControlPlaneRecordPrefixes are the keys RecordedAPIServerAddress reads.
var ControlPlaneRecordPrefixes = []string{wellknown.PrefixAPIServerPods, wellknown.PrefixNodes}
