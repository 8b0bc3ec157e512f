package rules

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameCalico is the calico rule.
const NameCalico = "calico"

// calicoNodeAnnotations are the Node annotations in which Calico keeps
// addresses it allocated from a pool (libcalico-go/lib/backend/k8s/
// resources/node.go); the node's own addresses (projectcalico.org/IPv4Address,
// IPv6Address) are not in the pod range and are left alone.
var calicoNodeAnnotations = []string{
	"projectcalico.org/IPv4IPIPTunnelAddr",
	"projectcalico.org/IPv4VXLANTunnelAddr",
	"projectcalico.org/IPv6VXLANTunnelAddr",
	"projectcalico.org/IPv4WireguardInterfaceAddr",
	"projectcalico.org/IPv6WireguardInterfaceAddr",
}

// Calico moves Calico's IPAM state with the pod range (DESIGN.md decision
// 17): IPPools (and the operator Installation's pools), IPAMBlocks and
// BlockAffinities (whose names Calico derives from their CIDR: renamed),
// IPAMHandles' block references, the tunnel addresses on Nodes, and the
// pool CIDR in calico-node's environment and calico-config. Every block
// keeps its offset and its allocations, so every pod address maps by
// offset, as the Nodes' pod CIDRs do.
type Calico struct {
	plan *Plan
	m    calicoMap

	pools   map[string]string       // IPPool key -> new spec.cidr
	renames map[string]calicoRename // IPAMBlock / BlockAffinity key -> its new self
	counts  map[string]int          // what Apply moved, by kind, for the notes
}

// calicoRename is one object whose name encodes its CIDR.
type calicoRename struct {
	kind          string
	key, name     string // the new key and name
	oldCIDR, cidr string
}

var calicoEntry = Entry{
	Name:    NameCalico,
	Summary: "move Calico's IPAM state with the pod range: pools, blocks and affinities (renamed), handles, tunnel addresses, offsets kept",
	Touches: []string{"ippools.crd.projectcalico.org (spec.cidr), ipamblocks.crd.projectcalico.org and blockaffinities.crd.projectcalico.org (renamed, spec.cidr), ipamhandles.crd.projectcalico.org (spec.block)",
		"installations.operator.tigera.io (spec/status calicoNetwork.ipPools[].cidr)",
		"nodes (projectcalico.org tunnel and WireGuard address annotations)",
		"daemonsets.apps kube-system|calico-system/calico-node (CALICO_IPV4POOL_CIDR, CALICO_IPV6POOL_CIDR)", "configmaps kube-system/calico-config"},
	After: []string{NamePodCIDR}, // it reads the pod plan
	// --leave-cni-state calico: the operator moves Calico's state by hand.
	Enabled: func(o *Options) bool {
		return o.PodNetworkCIDR != "" && !slices.Contains(o.LeaveCNIState, state.CNICalico)
	},
	New: func(_ Options, p *Plan) transform.Rule { return &Calico{plan: p} },
	Example: func() Options {
		return Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}
	},
	Options: func(*Options) []Option { return nil },
}

func (r *Calico) Name() string { return NameCalico }

func (r *Calico) Prefixes() []string {
	p := []string{wellknown.PrefixCalicoPools, wellknown.PrefixCalicoBlocks, wellknown.PrefixCalicoAffs, wellknown.PrefixCalicoHandles, wellknown.PrefixTigeraInstall, wellknown.PrefixNodes}
	return append(append(p, wellknown.CalicoDaemonSets...), wellknown.CalicoConfigMaps...)
}

// Lists names what Prepare lists.
func (r *Calico) Lists() []string {
	return []string{wellknown.PrefixCalicoPools, wellknown.PrefixCalicoBlocks, wellknown.PrefixCalicoAffs, wellknown.PrefixCalicoHandles, wellknown.PrefixTigeraInstall}
}

// Prepare plans every move and refuses, naming each problem, what Calico
// could not use after the move.
func (r *Calico) Prepare(_ context.Context, v *state.View) error {
	r.pools, r.renames, r.counts = map[string]string{}, map[string]calicoRename{}, map[string]int{}
	if r.plan.Pod == nil {
		return nil
	}
	r.m = calicoMap{old: r.plan.Pod.Old, new: r.plan.Pod.New}
	var problems []string
	for _, step := range []func(*state.View) ([]string, error){r.planPools, r.checkInstallations, r.planBlocks, r.planAffinities, r.checkHandles} {
		p, err := step(v)
		if err != nil {
			return err
		}
		problems = append(problems, p...)
	}
	problems = append(problems, r.checkCollisions(v)...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: Calico's IPAM state cannot move to the new pod network CIDR %s: %s",
			transform.ErrRefused, cidr.Join(r.m.new), strings.Join(problems, "; "))
	}
	return nil
}

// eachCustom lists the custom resources of kind under prefix and collects
// what check finds wrong with each.
func eachCustom(v *state.View, prefix, kind string, check func(key string, u *unstructured.Unstructured) []string) ([]string, error) {
	objs, us, err := state.ListCustom(v, prefix, kind)
	if err != nil {
		return nil, err
	}
	var problems []string
	for i, u := range us {
		problems = append(problems, check(objs[i].Key, u)...)
	}
	return problems, nil
}

// planPools decides every IPPool's new CIDR.
func (r *Calico) planPools(v *state.View) ([]string, error) {
	return eachCustom(v, wellknown.PrefixCalicoPools, "IPPool", func(key string, u *unstructured.Unstructured) []string {
		c, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
		if p, err := netip.ParsePrefix(c); err == nil && loadBalancerPool(u) {
			if _, _, where := r.m.place(p.Masked()); where == calicoOther {
				return nil // addresses for Services, outside the pod range: not moved
			}
		}
		bs, hasBS, _ := unstructured.NestedInt64(u.Object, "spec", "blockSize")
		np, moved, problem := r.planPool("IPPool "+u.GetName(), c, bs, hasBS)
		if problem != "" {
			return []string{problem}
		}
		if moved {
			r.pools[key] = np.String()
		}
		return nil
	})
}

// planPool maps one pool (an IPPool, or an Installation's pool) and says
// what is wrong with it, if anything.
func (r *Calico) planPool(what, c string, blockSize int64, hasBS bool) (netip.Prefix, bool, string) {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		return p, false, fmt.Sprintf("%s: cidr %q is not a CIDR", what, c)
	}
	o, _, where := r.m.place(p.Masked())
	if where == calicoOther {
		if _, _, remapped := cidr.PairOf(r.m.old, r.m.new, p.Addr()); remapped {
			return p, false, fmt.Sprintf("%s (%s) is not inside the old pod network CIDR %s, so its blocks would stay where they are", what, p, o)
		}
		return p, false, ""
	}
	np, moved, err := r.m.pool(p)
	if err != nil {
		return p, false, fmt.Sprintf("%s (%s) does not fit the new range: %v", what, p, err)
	}
	if !hasBS || blockSize == 0 {
		blockSize = 26
		if p.Addr().Is6() {
			blockSize = 122
		}
	}
	if moved && int(blockSize) < np.Bits() {
		return p, false, fmt.Sprintf("%s: its blockSize %d does not fit the new range %s (a block would be larger than the pool)", what, blockSize, np)
	}
	return np, moved, ""
}

// loadBalancerPool reports whether an IPPool serves only LoadBalancer
// Services (allowedUses [LoadBalancer]): not a pod range.
func loadBalancerPool(u *unstructured.Unstructured) bool {
	uses, found, _ := unstructured.NestedStringSlice(u.Object, "spec", "allowedUses")
	return found && len(uses) > 0 && !slices.Contains(uses, "Workload") && !slices.Contains(uses, "Tunnel")
}

// checkInstallations checks the operator Installation's pools.
func (r *Calico) checkInstallations(v *state.View) ([]string, error) {
	return eachCustom(v, wellknown.PrefixTigeraInstall, "Installation", func(_ string, u *unstructured.Unstructured) []string {
		var problems []string
		for _, path := range installationPoolPaths {
			pools, _, _ := unstructured.NestedSlice(u.Object, path...)
			for _, x := range pools {
				pool, _ := x.(map[string]any)
				c, _ := pool["cidr"].(string)
				bs, hasBS := pool["blockSize"].(int64)
				if _, _, p := r.planPool("Installation "+u.GetName()+" pool "+c, c, bs, hasBS); p != "" {
					problems = append(problems, p)
				}
			}
		}
		return problems
	})
}

// installationPoolPaths are where an Installation lists its pools: what
// the user asked for, and what the operator computed from it.
var installationPoolPaths = [][]string{
	{"spec", "calicoNetwork", "ipPools"},
	{"status", "computed", "calicoNetwork", "ipPools"},
}

// planBlocks plans the IPAMBlocks' renames.
func (r *Calico) planBlocks(v *state.View) ([]string, error) {
	return r.planRenames(v, wellknown.PrefixCalicoBlocks, "IPAMBlock", func(u *unstructured.Unstructured, p netip.Prefix) string {
		return calicoCIDRName(p)
	})
}

// planAffinities plans the BlockAffinities' renames.
func (r *Calico) planAffinities(v *state.View) ([]string, error) {
	return r.planRenames(v, wellknown.PrefixCalicoAffs, "BlockAffinity", func(u *unstructured.Unstructured, p netip.Prefix) string {
		node, _, _ := unstructured.NestedString(u.Object, "spec", "node")
		return calicoAffinityName(node, p)
	})
}

// planRenames maps the spec.cidr of every object under prefix and plans
// its new name, which Calico derives from the CIDR (nameOf). An object
// whose name is not the one Calico would look up is refused: Calico never
// reads it, and snapshift cannot tell what it is for.
func (r *Calico) planRenames(v *state.View, prefix, kind string, nameOf func(*unstructured.Unstructured, netip.Prefix) string) ([]string, error) {
	return eachCustom(v, prefix, kind, func(key string, u *unstructured.Unstructured) []string {
		c, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return []string{fmt.Sprintf("%s %s: spec.cidr %q is not a CIDR", kind, u.GetName(), c)}
		}
		np, moved, err := r.m.block(p)
		switch {
		case err != nil:
			return []string{fmt.Sprintf("%s %s (%s) does not fit the new range: %v", kind, u.GetName(), p, err)}
		case !moved:
			return nil
		case nameOf(u, p.Masked()) != u.GetName():
			return []string{fmt.Sprintf("%s %s is not named as Calico names the object of %s (%s)", kind, u.GetName(), p, nameOf(u, p.Masked()))}
		}
		name := nameOf(u, np)
		r.renames[key] = calicoRename{kind: kind, key: prefix + name, name: name, oldCIDR: c, cidr: np.String()}
		return nil
	})
}

// checkHandles checks that every block an IPAMHandle names can move.
func (r *Calico) checkHandles(v *state.View) ([]string, error) {
	return eachCustom(v, wellknown.PrefixCalicoHandles, "IPAMHandle", func(_ string, u *unstructured.Unstructured) []string {
		var problems []string
		blocks, _, _ := unstructured.NestedMap(u.Object, "spec", "block")
		for c := range blocks {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				continue // not a block reference Calico could use either
			}
			if _, _, err := r.m.block(p); err != nil {
				problems = append(problems, fmt.Sprintf("IPAMHandle %s: block %s does not fit the new range: %v", u.GetName(), c, err))
			}
		}
		return problems
	})
}

// checkCollisions refuses a new name that an object keeps.
func (r *Calico) checkCollisions(v *state.View) []string {
	var problems []string
	taken := map[string]string{}
	for key, rn := range r.renames {
		if other, dup := taken[rn.key]; dup {
			problems = append(problems, fmt.Sprintf("%s %s and %s would both be renamed to %s", rn.kind, nameOfKey(key), nameOfKey(other), rn.name))
		}
		taken[rn.key] = key
		if _, renamedAway := r.renames[rn.key]; renamedAway {
			continue
		}
		if _, exists, err := v.Raw(rn.key); err == nil && exists {
			problems = append(problems, fmt.Sprintf("%s %s would be renamed to %s, which already exists", rn.kind, nameOfKey(key), rn.name))
		}
	}
	return problems
}

func nameOfKey(key string) string { return key[strings.LastIndex(key, "/")+1:] }
