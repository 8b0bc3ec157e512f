package rules

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// inUse is an address the cluster uses that no rule moves: a new service
// or pod range must not cover it, or a Service IP or pod address would be
// handed out on top of a node or an API endpoint.
type inUse struct {
	Addr netip.Addr
	What string
}

// clashListed are the prefixes the clash check lists.
var clashListed = []string{wellknown.PrefixNodes, wellknown.PrefixServices, wellknown.PrefixAPIServerPods}

// addressesInUse reads, once per run, every address a new range must stay
// clear of: the Nodes' addresses, the default/kubernetes Endpoints and
// EndpointSlice, kubeadm's controlPlaneEndpoint and the apiservers'
// advertise addresses, and the Services' external and load-balancer IPs.
func (p *Plan) addressesInUse(v *state.View) ([]inUse, error) {
	if p.inUse != nil {
		return *p.inUse, nil
	}
	var all []inUse
	readServices := serviceExternalIPs
	if p.serviceInUse != nil { // the service-cidr rule read them already
		readServices = func(*state.View) ([]inUse, error) { return *p.serviceInUse, nil }
	}
	for _, read := range []func(*state.View) ([]inUse, error){nodeAddresses, apiEndpoints, kubeadmEndpoints, readServices} {
		got, err := read(v)
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	p.inUse = &all
	return all, nil
}

// refuseClashes refuses a new range (of option field) that covers an
// address in use, naming every such address and what uses it. A new range
// inside the old one covers nothing new: it is not checked.
func refuseClashes(field, kind string, oldP, newP []netip.Prefix, used []inUse) error {
	users := map[netip.Addr][]string{}
	for _, n := range newP {
		if inside(n, oldP) {
			continue
		}
		for _, u := range used {
			if n.Contains(u.Addr) && !slices.Contains(users[u.Addr], u.What) {
				users[u.Addr] = append(users[u.Addr], u.What)
			}
		}
	}
	if len(users) == 0 {
		return nil
	}
	addrs := slices.SortedFunc(maps.Keys(users), func(a, b netip.Addr) int { return a.Compare(b) })
	const show = 8
	var hits []string
	for i, a := range addrs {
		if i == show {
			hits = append(hits, fmt.Sprintf("and %d more", len(addrs)-show))
			break
		}
		hits = append(hits, fmt.Sprintf("%s (%s)", a, strings.Join(users[a], ", ")))
	}
	return fmt.Errorf("%w: %w", transform.ErrRefused, option.Errorf(field,
		"the new %s CIDR %s ({}) covers addresses the cluster uses outside it: %s; choose a range that is free in every network the nodes reach",
		kind, cidr.Join(newP), strings.Join(hits, "; ")))
}

func addIP(out []inUse, s, what string) []inUse {
	if a, err := netip.ParseAddr(s); err == nil {
		return append(out, inUse{Addr: a.Unmap(), What: what})
	}
	return out
}

func nodeAddresses(v *state.View) ([]inUse, error) {
	var out []inUse
	err := v.Each(wellknown.PrefixNodes, func(o *state.Object) error {
		node, ok := o.Value.Obj.(*corev1.Node)
		if !ok {
			return nil
		}
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP {
				out = addIP(out, a.Address, "node "+node.Name+" "+string(a.Type))
			}
		}
		return nil
	})
	return out, err
}

// apiEndpoints reads the addresses behind default/kubernetes.
func apiEndpoints(v *state.View) ([]inUse, error) {
	var out []inUse
	ep, ok, err := getAs[*corev1.Endpoints](v, wellknown.KeyKubernetesEndpoints)
	if err != nil {
		return nil, err
	}
	if ok {
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				out = addIP(out, a.IP, "default/kubernetes endpoint")
			}
		}
	}
	es, ok, err := getAs[*discoveryv1.EndpointSlice](v, wellknown.KeyKubernetesEndpointSlice)
	if err != nil {
		return nil, err
	}
	if ok {
		for _, e := range es.Endpoints {
			for _, a := range e.Addresses {
				out = addIP(out, a, "default/kubernetes endpoint")
			}
		}
	}
	return out, nil
}

// kubeadmEndpoints reads kubeadm's controlPlaneEndpoint (when it is an
// address) and the advertise addresses its mirror pods record.
func kubeadmEndpoints(v *state.View) ([]inUse, error) {
	var out []inUse
	cm, ok, err := getAs[*corev1.ConfigMap](v, wellknown.KeyKubeadmConfig)
	if err != nil {
		return nil, err
	}
	if ok {
		var cc struct {
			ControlPlaneEndpoint string `json:"controlPlaneEndpoint"`
		}
		if yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc) == nil && cc.ControlPlaneEndpoint != "" {
			out = addIP(out, hostOf(cc.ControlPlaneEndpoint), "kubeadm controlPlaneEndpoint")
		}
	}
	pods, err := v.List(wellknown.PrefixAPIServerPods)
	if err != nil {
		return nil, err
	}
	for _, o := range pods {
		if pod, ok := o.Value.Obj.(*corev1.Pod); ok {
			if ep := pod.Annotations[wellknown.AnnotationAPIServerEndpoint]; ep != "" {
				out = addIP(out, hostOf(ep), "kube-apiserver advertise address ("+pod.Name+")")
			}
		}
	}
	return out, nil
}

// hostOf returns the host of "host:port", or s itself.
func hostOf(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return strings.Trim(s, "[]")
}

func serviceExternalIPs(v *state.View) ([]inUse, error) {
	var out []inUse
	err := v.Each(wellknown.PrefixServices, func(o *state.Object) error {
		if svc, ok := o.Value.Obj.(*corev1.Service); ok {
			out = append(out, externalIPs(svc)...)
		}
		return nil
	})
	return out, err
}

// externalIPs are a Service's external, load-balancer and ingress IPs.
func externalIPs(svc *corev1.Service) []inUse {
	var out []inUse
	name := svc.Namespace + "/" + svc.Name
	for _, ip := range svc.Spec.ExternalIPs {
		out = addIP(out, ip, "externalIP of Service "+name)
	}
	out = addIP(out, svc.Spec.LoadBalancerIP, "loadBalancerIP of Service "+name)
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		out = addIP(out, ing.IP, "load-balancer IP of Service "+name)
	}
	return out
}

// inside reports whether n lies within one of ps.
func inside(n netip.Prefix, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Bits() <= n.Bits() && p.Contains(n.Addr()) {
			return true
		}
	}
	return false
}

// checkClashes refuses new ranges that cover addresses in use.
func (p *Plan) checkClashes(v *state.View, field, kind string, oldP, newP []netip.Prefix) error {
	used, err := p.addressesInUse(v)
	if err != nil {
		return err
	}
	return refuseClashes(field, kind, oldP, newP, used)
}
