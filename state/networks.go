package state

// What a snapshot says about a Kubernetes cluster's networks: the service
// CIDR and pod CIDR as recorded in the kubeadm, kube-proxy and flannel
// ConfigMaps, the default ServiceCIDR object, the service IP RangeAllocation,
// and the Nodes' podCIDRs. Rules use it to detect the old ranges; inspect
// shows it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/wellknown"
)

// SourceKind says which kind of record a Source is. Compare kinds, not the
// display string.
type SourceKind string

// The kinds of Source, one per detector that records CIDRs (kubelet-config
// gives ClusterDNS only).
const (
	SourceKubeadm         SourceKind = "kubeadm-config"
	SourceServiceCIDR     SourceKind = "servicecidr"
	SourceRangeAllocation SourceKind = "rangeallocation"
	SourceKubeProxy       SourceKind = "kube-proxy"
	SourceFlannel         SourceKind = "flannel"
	// SourceNodes is the smallest prefix covering the Nodes' podCIDRs:
	// evidence of the pod range, not a record of it.
	SourceNodes SourceKind = "nodes"
)

// Source is one place that records CIDRs: its kind, a display string that
// names the object and field, and the CIDRs as recorded (not validated).
type Source struct {
	Kind   SourceKind `json:"kind"`
	Source string     `json:"source"`
	CIDRs  []string   `json:"cidrs"`
}

// NodeCIDR is one Node's pod CIDRs.
type NodeCIDR struct {
	Node     string   `json:"node"`
	PodCIDRs []string `json:"podCIDRs"`
}

// Networks is what the snapshot says.
type Networks struct {
	ServiceCIDR []Source `json:"serviceCIDR"`
	PodCIDR     []Source `json:"podCIDR"`
	ClusterDNS  []string `json:"clusterDNS,omitempty"`
	// ClusterDNSSource names where ClusterDNS was read ("" for kubeadm's
	// kubelet-config).
	ClusterDNSSource string     `json:"clusterDNSSource,omitempty"`
	DNSDomain        string     `json:"dnsDomain,omitempty"`
	Nodes            []NodeCIDR `json:"nodes,omitempty"`
	// KubernetesVersion is kubeadm's kubernetesVersion, when recorded.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Unread lists the sources DetectReadable could not decrypt, and why
	// (options said in words; UnreadErrors has the errors, for a front-end
	// to name its own flags).
	Unread     []string `json:"unread,omitempty"`
	unreadErrs []error
}

// UnreadErrors are the errors behind Unread, in its order.
func (n *Networks) UnreadErrors() []error { return n.unreadErrs }

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
	KubernetesVersion string `json:"kubernetesVersion"`
	Networking        struct {
		ServiceSubnet string `json:"serviceSubnet"`
		PodSubnet     string `json:"podSubnet"`
		DNSDomain     string `json:"dnsDomain"`
	} `json:"networking"`
}

// A detector reads one source of network facts into n. An absent source is
// no error; a present but unreadable one is, naming its key.
type detector func(v *View, n *Networks) error

// detectors are every source Detect reads, in the order their Sources are
// listed (the first service and pod Source is the one Service and Pod give).
var detectors = []detector{
	detectKubeadm,
	detectK3sRanges, // k3s and RKE2: distribution.go
	detectServiceCIDR,
	detectRangeAllocations,
	detectKubeProxy,
	detectFlannel,
	detectKubeletConfig,
	detectNodes,
}

// Detect reads every source it knows. Sources that are absent are skipped;
// a source that is present but unreadable is an error naming its key.
func Detect(ctx context.Context, v *View) (*Networks, error) {
	n := &Networks{}
	for _, d := range detectors {
		if err := d(v, n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// DetectReadable is Detect for a summary: a source whose value cannot be
// decrypted here (KMS, or no EncryptionConfiguration) is listed in Unread
// instead of stopping it. Rules use Detect: a migration planned from part
// of the records could pick the wrong old range.
func DetectReadable(ctx context.Context, v *View) (*Networks, error) {
	n := &Networks{}
	for _, d := range detectors {
		if err := d(v, n); errors.Is(err, ErrEncrypted) {
			msg, _ := option.Render(err, option.Words)
			n.Unread = append(n.Unread, strings.TrimPrefix(msg, ErrEncrypted.Error()+": "))
			n.unreadErrs = append(n.unreadErrs, err)
		} else if err != nil {
			return nil, err
		}
	}
	return n, nil
}

// detectKubeadm reads kubeadm's ClusterConfiguration: both subnets and the
// DNS domain.
func detectKubeadm(v *View, n *Networks) error {
	var cc ClusterConfiguration
	if ok, err := configDoc(v, wellknown.KeyKubeadmConfig, "ClusterConfiguration", unmarshalYAML, &cc); err != nil || !ok {
		return err
	}
	if c := cidr.Split(cc.Networking.ServiceSubnet); len(c) > 0 {
		n.ServiceCIDR = append(n.ServiceCIDR, Source{SourceKubeadm, "kubeadm-config networking.serviceSubnet", c})
	}
	if c := cidr.Split(cc.Networking.PodSubnet); len(c) > 0 {
		n.PodCIDR = append(n.PodCIDR, Source{SourceKubeadm, "kubeadm-config networking.podSubnet", c})
	}
	n.DNSDomain = cc.Networking.DNSDomain
	n.KubernetesVersion = cc.KubernetesVersion
	return nil
}

// detectServiceCIDR reads the default ServiceCIDR object (v1 or v1beta1).
func detectServiceCIDR(v *View, n *Networks) error {
	o, ok, err := v.Get(wellknown.KeyDefaultServiceCIDR)
	if err != nil || !ok {
		return err
	}
	if c, ok := ServiceCIDRSpec(o.Value.Obj); ok {
		n.ServiceCIDR = append(n.ServiceCIDR, Source{SourceServiceCIDR, "ServiceCIDR kubernetes", c})
	}
	return nil
}

// ServiceCIDRSpec returns a ServiceCIDR's spec.cidrs, for either API
// version it is stored as; ok is false for any other object.
func ServiceCIDRSpec(obj any) (cidrs []string, ok bool) {
	switch sc := obj.(type) {
	case *networkingv1.ServiceCIDR:
		return sc.Spec.CIDRs, true
	case *networkingv1beta1.ServiceCIDR:
		return sc.Spec.CIDRs, true
	}
	return nil, false
}

// AllocatorRange is one of the service IP allocator's keys and what it
// holds.
type AllocatorRange struct {
	Key    string
	Object *Object
	// Range is the decoded RangeAllocation; nil when the value is not one.
	Range *corev1.RangeAllocation
}

// ServiceAllocatorRanges reads the service IP allocator's keys that exist,
// primary then secondary family: the one reader of them (network
// detection, the service-cidr rule and verify).
func ServiceAllocatorRanges(v *View) ([]AllocatorRange, error) {
	var out []AllocatorRange
	for _, k := range []string{wellknown.KeyServiceIPRange, wellknown.KeySecondaryIPRange} {
		o, ok, err := v.Get(k)
		if err != nil {
			return nil, err
		}
		if ok {
			ra, _ := o.Value.Obj.(*corev1.RangeAllocation)
			out = append(out, AllocatorRange{Key: k, Object: o, Range: ra})
		}
	}
	return out, nil
}

// detectRangeAllocations reads the service IP allocator's ranges, primary
// then secondary family, as one Source.
func detectRangeAllocations(v *View, n *Networks) error {
	ars, err := ServiceAllocatorRanges(v)
	if err != nil {
		return err
	}
	var ranges []string
	for _, ar := range ars {
		if ar.Range != nil && ar.Range.Range != "" {
			ranges = append(ranges, ar.Range.Range)
		}
	}
	if len(ranges) > 0 {
		n.ServiceCIDR = append(n.ServiceCIDR, Source{SourceRangeAllocation, "RangeAllocation serviceips", ranges})
	}
	return nil
}

// detectKubeProxy reads kube-proxy's clusterCIDR.
func detectKubeProxy(v *View, n *Networks) error {
	var kp struct {
		ClusterCIDR string `json:"clusterCIDR"`
	}
	if ok, err := configDoc(v, wellknown.KeyKubeProxy, "config.conf", unmarshalYAML, &kp); err != nil || !ok {
		return err
	}
	if c := cidr.Split(kp.ClusterCIDR); len(c) > 0 {
		n.PodCIDR = append(n.PodCIDR, Source{SourceKubeProxy, "kube-proxy clusterCIDR", c})
	}
	return nil
}

// detectFlannel reads flannel's Network and IPv6Network, in every
// namespace flannel's manifests have used.
func detectFlannel(v *View, n *Networks) error {
	for _, k := range wellknown.FlannelConfigKeys {
		var nc struct {
			Network     string `json:"Network"`
			IPv6Network string `json:"IPv6Network"`
		}
		ok, err := configDoc(v, k, "net-conf.json", json.Unmarshal, &nc)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		var c []string
		for _, s := range []string{nc.Network, nc.IPv6Network} {
			if s != "" {
				c = append(c, s)
			}
		}
		if len(c) > 0 {
			n.PodCIDR = append(n.PodCIDR, Source{SourceFlannel, "kube-flannel-cfg net-conf.json Network", c})
		}
	}
	return nil
}

// detectKubeletConfig reads kubelet's clusterDNS.
func detectKubeletConfig(v *View, n *Networks) error {
	var kc struct {
		ClusterDNS []string `json:"clusterDNS"`
	}
	if ok, err := configDoc(v, wellknown.KeyKubeletConfig, "kubelet", unmarshalYAML, &kc); err != nil || !ok {
		return err
	}
	n.ClusterDNS = kc.ClusterDNS
	return nil
}

// detectNodes reads every Node's podCIDRs, and the smallest prefix per
// family that covers them as a pod Source of kind SourceNodes.
func detectNodes(v *View, n *Networks) error {
	err := v.Each(wellknown.PrefixNodes, func(o *Object) error {
		node, ok := o.Value.Obj.(*corev1.Node)
		if !ok {
			return nil
		}
		cidrs := node.Spec.PodCIDRs
		if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
			cidrs = []string{node.Spec.PodCIDR}
		}
		n.Nodes = append(n.Nodes, NodeCIDR{Node: node.Name, PodCIDRs: cidrs})
		return nil
	})
	if err != nil {
		return err
	}
	if c := coveringNodeCIDRs(n.Nodes); len(c) > 0 {
		n.PodCIDR = append(n.PodCIDR, Source{SourceNodes, "Node podCIDRs (smallest covering prefix)", c})
	}
	return nil
}

// configDoc decodes the document in field of the ConfigMap at key into
// into. ok is false when the ConfigMap or the field is absent or empty.
func configDoc(v *View, key, field string, decode func([]byte, any) error, into any) (ok bool, err error) {
	cm, ok, err := configMap(v, key)
	if err != nil || !ok {
		return false, err
	}
	doc := cm.Data[field]
	if doc == "" {
		return false, nil
	}
	if err := decode([]byte(doc), into); err != nil {
		return false, fmt.Errorf("%s: %s: %w", key, field, err)
	}
	return true, nil
}

// unmarshalYAML is yaml.Unmarshal without its options.
func unmarshalYAML(b []byte, into any) error { return yaml.Unmarshal(b, into) }

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
