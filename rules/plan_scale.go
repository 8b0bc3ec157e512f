package rules

import (
	"errors"
	"fmt"
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// ScalePlan is the cluster's size as the snapshot holds it, and what that
// size means for the window. When the restored kube-apiserver comes back,
// every client relists at once: each kubelet its pods and Node, each
// DaemonSet's agent on every node what it watches, CoreDNS every Service
// and EndpointSlice (Kubernetes' 5,000-node test has failed since it
// gained an apiserver restart: kubernetes#139191, kubelets that cannot
// renew their Leases; #139117, CoreDNS OOM-killed by a relist).
type ScalePlan struct {
	Nodes          int `json:"nodes"`
	Pods           int `json:"pods"`
	Services       int `json:"services"`
	EndpointSlices int `json:"endpointSlices"`
	DaemonSets     int `json:"daemonSets"`
	// Relisting is how many clients relist at once when the apiserver
	// comes back, at least: every kubelet and every DaemonSet's pod on
	// every node (Nodes × (1 + DaemonSets)).
	Relisting int `json:"relisting"`
	// DNS is the cluster DNS Deployment's memory limit against what a
	// relist needs; nil when the snapshot has no Deployment behind the DNS
	// Service.
	DNS *DNSMemory `json:"dns,omitempty"`
	// Warnings say what to do before the window, one sentence each.
	Warnings []string `json:"warnings,omitempty"`
}

// DNSMemory is the cluster DNS Deployment's memory limit and the estimate
// of what its relist of the snapshot's objects needs.
type DNSMemory struct {
	Deployment string `json:"deployment"` // namespace/name
	Container  string `json:"container"`
	// Limit is the container's resources.limits.memory as written; empty
	// when it has none (it can then use what its node has).
	Limit string `json:"limit,omitempty"`
	// WatchesPods says its Corefile keeps every Pod in memory (autopath,
	// or pods verified), which CoreDNS's scaling guide estimates apart.
	WatchesPods bool `json:"watchesPods,omitempty"`
	// RelistMiB is the estimate of what it needs while it relists.
	RelistMiB int64 `json:"relistMiB"`

	limitBytes int64
}

// LargeClusterNodes is the size from which the plan warns that the
// clients relisting at once are a risk, and the runbook starts the workers'
// kubelets in batches: at 500 Nodes the kubelets' relists alone are
// over kube-apiserver's default concurrency for reads (--max-requests-inflight
// 400, which API Priority and Fairness shares among its priority levels).
const LargeClusterNodes = 500

// DNSRelistMiB estimates the memory CoreDNS needs while it relists the
// snapshot's objects: CoreDNS's own scaling guide (coredns/deployment,
// kubernetes/Scaling_CoreDNS.md) gives (Pods + Services) / 1000 + 54 MB
// with its default settings, (Pods + Services) / 250 + 56 MB when it keeps
// every Pod (autopath, pods verified); a relist decodes the new lists
// while it holds the old ones, which kubernetes#139117 saw double its
// memory: twice that, in MiB, rounded up.
func DNSRelistMiB(pods, services int, watchesPods bool) int64 {
	per, base := 1000.0, 54.0
	if watchesPods {
		per, base = 250, 56
	}
	return int64(math.Ceil(2 * (float64(pods+services)/per + base)))
}

// scaleCounted are the prefixes the scale plan counts without listing.
var scaleCounted = []string{wellknown.PrefixPods, wellknown.PrefixEndpointSlices, wellknown.PrefixDaemonSets}

// scaleListed are the prefixes the scale plan lists (the DNS namespace's
// Deployments: dnsDeployment).
func scaleListed(dnsService string) []string {
	ns, _, _ := strings.Cut(dnsOrDefault(dnsService), "/")
	return []string{wellknown.PrefixDeployments + ns + "/"}
}

func dnsOrDefault(s string) string {
	if s == "" {
		return DefaultDNSService
	}
	return s
}

// readScale is the scale plan (Plan.Scale), read once, by the first range
// rule that asks; its warnings are printed apart from the rules' notes.
func (p *Plan) readScale(v *state.View, dnsService string) error {
	if p.Scale != nil {
		return nil
	}
	s := &ScalePlan{
		Nodes:          v.Count(wellknown.PrefixNodes),
		Pods:           v.Count(wellknown.PrefixPods),
		Services:       v.Count(wellknown.PrefixServices),
		EndpointSlices: v.Count(wellknown.PrefixEndpointSlices),
		DaemonSets:     v.Count(wellknown.PrefixDaemonSets),
	}
	p.Scale = s
	s.Relisting = s.Nodes * (1 + s.DaemonSets)
	dns, err := dnsDeployment(v, dnsOrDefault(dnsService), s)
	if err != nil {
		return err
	}
	s.DNS = dns
	if s.Nodes >= LargeClusterNodes {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d nodes: when the restored kube-apiserver comes back, about %d clients relist at once (every kubelet and the %d DaemonSets' pods on every node), "+
			"over kube-apiserver's default concurrency (--max-requests-inflight 400): the runbook starts the workers' kubelets in batches; "+
			"give the control-plane nodes the memory and --max-requests-inflight a cluster of this size needs, and watch apiserver_flowcontrol_rejected_requests_total through the window",
			s.Nodes, s.Relisting, s.DaemonSets))
	}
	if dns != nil && dns.Limit != "" {
		if dns.limitBytes < dns.RelistMiB<<20 {
			mode := "(Pods + Services) / 1000 + 54 MB"
			if dns.WatchesPods {
				mode = "(Pods + Services) / 250 + 56 MB, its Corefile keeping every Pod"
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s's memory limit %s is below the %d MiB it needs to relist the snapshot's Pods and Services (%d and %d) when the apiserver comes back "+
				"(CoreDNS's scaling guide: %s, doubled for the relist): it would be OOM-killed and DNS lost; raise the limit before the window "+
				"(kubectl -n %s set resources deployment %s -c %s --limits=memory=%dMi)",
				dns.Deployment, dns.Limit, dns.RelistMiB, s.Pods, s.Services, mode,
				strings.Split(dns.Deployment, "/")[0], strings.Split(dns.Deployment, "/")[1], dns.Container, dns.RelistMiB))
		}
	}
	return nil
}

// dnsDeployment finds the Deployment whose pods the DNS Service selects
// (CoreDNS: kube-system/coredns on kubeadm), its DNS container's memory
// limit and whether its Corefile keeps every Pod; nil when there is none
// (no such Service, a DaemonSet, or an object this run cannot read).
func dnsDeployment(v *state.View, dnsService string, s *ScalePlan) (*DNSMemory, error) {
	o, ok, err := v.Get(wellknown.PrefixServices + dnsService)
	if errors.Is(err, state.ErrEncrypted) || !ok {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	svc, err := state.As[*corev1.Service](o, "a Service")
	if err != nil || len(svc.Spec.Selector) == 0 {
		return nil, nil
	}
	var dep *appsv1.Deployment
	err = v.Each(wellknown.PrefixDeployments+svc.Namespace+"/", func(o *state.Object) error {
		d, ok := o.Value.Obj.(*appsv1.Deployment)
		if ok && dep == nil && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			dep = d
		}
		return nil
	})
	if errors.Is(err, state.ErrEncrypted) || dep == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cs := dep.Spec.Template.Spec.Containers
	if len(cs) == 0 {
		return nil, nil
	}
	c := cs[0]
	for _, x := range cs {
		if x.Name == "coredns" {
			c = x
		}
	}
	m := &DNSMemory{Deployment: dep.Namespace + "/" + dep.Name, Container: c.Name}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		m.Limit, m.limitBytes = q.String(), q.Value()
	}
	m.WatchesPods = corefileWatchesPods(v, dep)
	m.RelistMiB = DNSRelistMiB(s.Pods, s.Services, m.WatchesPods)
	return m, nil
}

// corefileWatchesPods says whether the Corefile in the Deployment's
// ConfigMap volume has the kubernetes plugin keep every Pod: autopath, or
// "pods verified" (kubeadm's "pods insecure" keeps none).
func corefileWatchesPods(v *state.View, dep *appsv1.Deployment) bool {
	for _, vol := range dep.Spec.Template.Spec.Volumes {
		if vol.ConfigMap == nil {
			continue
		}
		o, ok, err := v.Get(wellknown.PrefixConfigMaps + dep.Namespace + "/" + vol.ConfigMap.Name)
		if err != nil || !ok {
			continue
		}
		cm, ok := o.Value.Obj.(*corev1.ConfigMap)
		if !ok {
			continue
		}
		for _, text := range cm.Data {
			for _, line := range strings.Split(text, "\n") {
				f := strings.Fields(line)
				if len(f) > 0 && (f[0] == "autopath" || (len(f) > 1 && f[0] == "pods" && f[1] == "verified")) {
					return true
				}
			}
		}
	}
	return false
}
