package state

// What a snapshot says about a Kubernetes cluster's networks: the service
// CIDR and pod CIDR as recorded in the kubeadm, kube-proxy and flannel
// ConfigMaps, the default ServiceCIDR object, the service IP RangeAllocation,
// and the Nodes' podCIDRs. Rules use it to detect the old ranges; inspect
// shows it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	"sigs.k8s.io/yaml"
)

// Source is one place that records CIDRs.
type Source struct {
	Source string   `json:"source"`
	CIDRs  []string `json:"cidrs"`
}

// NodeCIDR is one Node's pod CIDRs.
type NodeCIDR struct {
	Node     string   `json:"node"`
	PodCIDRs []string `json:"podCIDRs"`
}

// Networks is what the snapshot says.
type Networks struct {
	ServiceCIDR []Source   `json:"serviceCIDR"`
	PodCIDR     []Source   `json:"podCIDR"`
	ClusterDNS  []string   `json:"clusterDNS,omitempty"`
	DNSDomain   string     `json:"dnsDomain,omitempty"`
	Nodes       []NodeCIDR `json:"nodes,omitempty"`
}

// Service returns the first recorded service CIDR set, with its source.
func (n *Networks) Service() (Source, bool) { return first(n.ServiceCIDR) }

// Pod returns the first recorded pod CIDR set, with its source.
func (n *Networks) Pod() (Source, bool) { return first(n.PodCIDR) }

func first(s []Source) (Source, bool) {
	if len(s) == 0 {
		return Source{}, false
	}
	return s[0], true
}

// ClusterConfiguration is the part of kubeadm's ClusterConfiguration read here.
type ClusterConfiguration struct {
	Networking struct {
		ServiceSubnet string `json:"serviceSubnet"`
		PodSubnet     string `json:"podSubnet"`
		DNSDomain     string `json:"dnsDomain"`
	} `json:"networking"`
}

// SplitCIDRs splits kubeadm's comma-separated dual-stack form.
func SplitCIDRs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Detect reads every source it knows. Sources that are absent are skipped;
// a source that is present but unreadable is an error naming its key.
func Detect(ctx context.Context, v *View) (*Networks, error) {
	n := &Networks{}
	if cm, ok, err := configMap(v, KeyKubeadmConfig); err != nil {
		return nil, err
	} else if ok {
		if doc := cm.Data["ClusterConfiguration"]; doc != "" {
			var cc ClusterConfiguration
			if err := yaml.Unmarshal([]byte(doc), &cc); err != nil {
				return nil, fmt.Errorf("%s: ClusterConfiguration: %w", KeyKubeadmConfig, err)
			}
			if c := SplitCIDRs(cc.Networking.ServiceSubnet); len(c) > 0 {
				n.ServiceCIDR = append(n.ServiceCIDR, Source{"kubeadm-config networking.serviceSubnet", c})
			}
			if c := SplitCIDRs(cc.Networking.PodSubnet); len(c) > 0 {
				n.PodCIDR = append(n.PodCIDR, Source{"kubeadm-config networking.podSubnet", c})
			}
			n.DNSDomain = cc.Networking.DNSDomain
		}
	}
	if o, ok, err := v.Get(KeyDefaultServiceCIDR); err != nil {
		return nil, err
	} else if ok {
		switch sc := o.Value.Obj.(type) {
		case *networkingv1.ServiceCIDR:
			n.ServiceCIDR = append(n.ServiceCIDR, Source{"ServiceCIDR kubernetes", sc.Spec.CIDRs})
		case *networkingv1beta1.ServiceCIDR:
			n.ServiceCIDR = append(n.ServiceCIDR, Source{"ServiceCIDR kubernetes", sc.Spec.CIDRs})
		}
	}
	var ranges []string
	for _, k := range []string{KeyServiceIPRange, KeySecondaryIPRange} {
		if o, ok, err := v.Get(k); err != nil {
			return nil, err
		} else if ok {
			if ra, ok := o.Value.Obj.(*corev1.RangeAllocation); ok && ra.Range != "" {
				ranges = append(ranges, ra.Range)
			}
		}
	}
	if len(ranges) > 0 {
		n.ServiceCIDR = append(n.ServiceCIDR, Source{"RangeAllocation serviceips", ranges})
	}
	if cm, ok, err := configMap(v, KeyKubeProxy); err != nil {
		return nil, err
	} else if ok {
		var kp struct {
			ClusterCIDR string `json:"clusterCIDR"`
		}
		if doc := cm.Data["config.conf"]; doc != "" {
			if err := yaml.Unmarshal([]byte(doc), &kp); err != nil {
				return nil, fmt.Errorf("%s: config.conf: %w", KeyKubeProxy, err)
			}
			if c := SplitCIDRs(kp.ClusterCIDR); len(c) > 0 {
				n.PodCIDR = append(n.PodCIDR, Source{"kube-proxy clusterCIDR", c})
			}
		}
	}
	for _, k := range FlannelConfigKeys {
		cm, ok, err := configMap(v, k)
		if err != nil {
			return nil, err
		}
		if !ok || cm.Data["net-conf.json"] == "" {
			continue
		}
		var nc struct {
			Network     string `json:"Network"`
			IPv6Network string `json:"IPv6Network"`
		}
		if err := json.Unmarshal([]byte(cm.Data["net-conf.json"]), &nc); err != nil {
			return nil, fmt.Errorf("%s: net-conf.json: %w", k, err)
		}
		var c []string
		for _, s := range []string{nc.Network, nc.IPv6Network} {
			if s != "" {
				c = append(c, s)
			}
		}
		if len(c) > 0 {
			n.PodCIDR = append(n.PodCIDR, Source{"kube-flannel-cfg net-conf.json Network", c})
		}
	}
	if cm, ok, err := configMap(v, KeyKubeletConfig); err != nil {
		return nil, err
	} else if ok {
		var kc struct {
			ClusterDNS []string `json:"clusterDNS"`
		}
		if doc := cm.Data["kubelet"]; doc != "" {
			if err := yaml.Unmarshal([]byte(doc), &kc); err != nil {
				return nil, fmt.Errorf("%s: kubelet: %w", KeyKubeletConfig, err)
			}
			n.ClusterDNS = kc.ClusterDNS
		}
	}
	nodes, err := v.List(PrefixNodes)
	if err != nil {
		return nil, err
	}
	for _, o := range nodes {
		node, ok := o.Value.Obj.(*corev1.Node)
		if !ok {
			continue
		}
		cidrs := node.Spec.PodCIDRs
		if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
			cidrs = []string{node.Spec.PodCIDR}
		}
		n.Nodes = append(n.Nodes, NodeCIDR{Node: node.Name, PodCIDRs: cidrs})
	}
	if len(n.Nodes) > 0 {
		if c := coveringNodeCIDRs(n.Nodes); len(c) > 0 {
			n.PodCIDR = append(n.PodCIDR, Source{"Node podCIDRs (smallest covering prefix)", c})
		}
	}
	return n, nil
}

func configMap(v *View, key string) (*corev1.ConfigMap, bool, error) {
	o, ok, err := v.Get(key)
	if err != nil || !ok {
		return nil, false, err
	}
	cm, ok := o.Value.Obj.(*corev1.ConfigMap)
	if !ok {
		return nil, false, fmt.Errorf("%s: stored object is %s, not a ConfigMap", key, o.Value.GVK)
	}
	return cm, true, nil
}

// coveringNodeCIDRs returns, per family, the smallest prefix that contains
// every node's pod CIDR of that family.
func coveringNodeCIDRs(nodes []NodeCIDR) []string {
	cover := map[bool]netip.Prefix{} // key: is IPv4
	for _, n := range nodes {
		for _, c := range n.PodCIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				continue
			}
			p = p.Masked()
			v4 := p.Addr().Is4()
			cur, ok := cover[v4]
			if !ok {
				cover[v4] = p
				continue
			}
			bits := min(cur.Bits(), p.Bits())
			for bits > 0 {
				a, _ := cur.Addr().Prefix(bits)
				b, _ := p.Addr().Prefix(bits)
				if a == b {
					break
				}
				bits--
			}
			cover[v4], _ = cur.Addr().Prefix(bits)
		}
	}
	var out []string
	for _, v4 := range []bool{true, false} {
		if p, ok := cover[v4]; ok {
			out = append(out, p.String())
		}
	}
	return out
}
