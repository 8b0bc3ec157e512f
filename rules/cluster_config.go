package rules

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/snapshift/snapshift/internal/yamledit"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// ClusterConfig moves the copies of the CIDRs that live in ConfigMaps with
// the objects (DESIGN.md decision 11): kubeadm-config (networking.serviceSubnet,
// podSubnet, and any extraArgs copy), kubelet-config clusterDNS, kube-proxy
// clusterCIDR, and flannel's (and Canal's canal-config) net-conf.json Network. Each data value is
// edited as a YAML/JSON document: only scalars that exactly equal an old
// CIDR (or a comma-separated list of them) or a moved Service IP are
// replaced, in place, so every other byte stays as it was.
type ClusterConfig struct {
	plan  *Plan
	notes []string
}

var clusterConfigKeys = map[string]bool{
	wellknown.KeyKubeadmConfig: true,
	wellknown.KeyKubeProxy:     true,
}

func (r *ClusterConfig) Name() string { return NameClusterConfig }

func (r *ClusterConfig) Prefixes() []string {
	return append([]string{wellknown.KeyKubeadmConfig, wellknown.KeyKubeletConfig, wellknown.KeyKubeProxy, wellknown.KeyCanalConfig}, wellknown.FlannelConfigKeys...)
}

func (r *ClusterConfig) Notes() []string { return r.notes }

func claimsConfigMap(key string) bool {
	if clusterConfigKeys[key] || key == wellknown.KeyKubeletConfig || key == wellknown.KeyCanalConfig || strings.HasPrefix(key, wellknown.KeyKubeletConfig+"-1.") {
		return true
	}
	for _, k := range wellknown.FlannelConfigKeys {
		if key == k {
			return true
		}
	}
	return false
}

// Apply edits one ConfigMap.
func (r *ClusterConfig) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	if !claimsConfigMap(obj.Key) {
		return transform.Result{}, nil
	}
	changes, err := editConfigMapScalars(obj, r.mapScalar)
	if err != nil || len(changes) == 0 {
		return transform.Result{}, err
	}
	if strings.HasPrefix(obj.Key, wellknown.KeyKubeletConfig) {
		r.notes = append(r.notes, "kubelet-config changed: every node's /var/lib/kubelet/config.yaml holds its own copy of clusterDNS; update it on each node (kubeadm upgrade node phase kubelet-config does) before restarting kubelets")
	}
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// mapScalar returns the new value of one scalar, if it moves.
func (r *ClusterConfig) mapScalar(s string) (string, bool) {
	parts := strings.Split(s, ",")
	out := make([]string, len(parts))
	changed := false
	for i, part := range parts {
		out[i] = part
		t := strings.TrimSpace(part)
		if p, err := netip.ParsePrefix(t); err == nil && p.Masked() == p {
			if n, ok := r.mapPrefix(p); ok {
				out[i] = strings.Replace(part, t, n.String(), 1)
				changed = true
				continue
			}
		}
		if a, err := netip.ParseAddr(t); err == nil && len(parts) == 1 {
			if n, ok := r.mapAddr(a); ok {
				out[i] = strings.Replace(part, t, n.String(), 1)
				changed = true
				continue
			}
		}
		if len(parts) > 1 {
			// A list: all parts must be CIDRs, or it is not ours.
			if _, err := netip.ParsePrefix(t); err != nil {
				return s, false
			}
		}
	}
	return strings.Join(out, ","), changed
}

func (r *ClusterConfig) mapPrefix(p netip.Prefix) (netip.Prefix, bool) {
	if sp := r.plan.Service; sp != nil {
		for i, o := range sp.Old {
			if o == p && sp.New[i] != o {
				return sp.New[i], true
			}
		}
	}
	if pp := r.plan.Pod; pp != nil {
		for i, o := range pp.Old {
			if o == p && pp.New[i] != o {
				return pp.New[i], true
			}
		}
	}
	return p, false
}

func (r *ClusterConfig) mapAddr(a netip.Addr) (netip.Addr, bool) {
	sp := r.plan.Service
	if sp == nil {
		return a, false
	}
	if sp.Bridge.IsValid() {
		for _, mv := range sp.Services {
			if mv.Kept && len(mv.Old) > 0 && mv.Old[0] == a.String() && sp.DNS == a {
				return sp.Bridge, true
			}
		}
	}
	n, ok := sp.IPs[a]
	return n, ok
}

// editConfigMapScalars maps every scalar of a ConfigMap's data values
// with fn (editScalars), every other byte kept.
func editConfigMapScalars(obj *state.Object, fn func(string) (string, bool)) ([]transform.Change, error) {
	return editConfigMapData(obj, func(v string) (string, []transform.Change, error) { return editScalars(v, fn) })
}

// editScalars replaces, in the text of a YAML (or JSON) document, every
// plain or quoted scalar that fn maps, at its exact position and in its
// quoting style, leaving all other bytes alone. A value that is not YAML
// is returned unchanged.
func editScalars(doc string, fn func(string) (string, bool)) (string, []transform.Change, error) {
	text, root, err := yamledit.Parse([]byte(doc))
	if err != nil {
		return doc, nil, nil
	}
	var changes []transform.Change
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], path+"."+n.Content[i].Value)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.ScalarNode:
			if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				return
			}
			nv, ok := fn(n.Value)
			if !ok || text.SetScalar(n, nv) != nil {
				return // a tagged, anchored or unusual scalar: leave it rather than guess
			}
			changes = append(changes, transform.Change{Field: strings.TrimPrefix(path, "."), Old: n.Value, New: nv})
		}
	}
	walk(root, "")
	// The walk follows the document, so changes are in document order.
	return string(text.Bytes()), changes, nil
}

// NameClusterConfig is the cluster-config rule.
const NameClusterConfig = "cluster-config"

var clusterConfigEntry = rangeFollower(Entry{
	Name:    NameClusterConfig,
	Summary: "move the copies of the ranges that live in ConfigMaps, edited in place",
	Touches: []string{"configmaps kube-system/kubeadm-config (serviceSubnet, podSubnet)", "configmaps kube-system/kubelet-config (clusterDNS)",
		"configmaps kube-system/kube-proxy (clusterCIDR)", "configmaps kube-flannel-cfg (net-conf.json Network)",
		"configmaps kube-system/canal-config (net-conf.json Network)"},
	New: func(_ Options, p *Plan) transform.Rule { return &ClusterConfig{plan: p} },
})
