package verify

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/cni"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/wellknown"
)

// cniKeyPrefixes are where the CNI checks read: the groups of the CNIs'
// IPAM resources (package cni's table; with the ConfigMaps of kube-system,
// which networkKeyPrefixes has).
var cniKeyPrefixes = cniGroupPrefixes()

// cniConfigPrefixes are the namespaces of the CNIs' ConfigMaps other than
// kube-system (flannel's kube-flannel).
func cniConfigPrefixes() []string {
	var out []string
	for _, c := range cni.All() {
		for _, o := range c.ConfigMaps {
			if p := wellknown.Prefix("configmaps") + o.Namespace + "/"; o.Namespace != "kube-system" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func cniGroupPrefixes() []string {
	var out []string
	for _, g := range cni.Groups(false) {
		out = append(out, wellknown.DefaultPrefix+g+"/")
	}
	return out
}

// cidrObject is one IPAM object's CIDR (and for Calico the node it is
// affine to), named for the problems.
type cidrObject struct {
	name  string
	cidr  netip.Prefix
	owner string // an IPAMBlock's spec.affinity, a BlockAffinity's node
}

// addCNIChecks checks that the CNIs' own copies of the pod network agree
// with each other (ARCHITECTURE.md: what the calico and cilium rules keep):
// every Calico IPAMBlock inside an IPPool, the blocks disjoint, every
// confirmed BlockAffinity naming a block affine to its node; every
// CiliumNode's pod CIDRs inside cilium-config's cluster pool and disjoint.
// A cluster without the objects gets no check.
func addCNIChecks(c *checker, v *state.View) error {
	pools, err := cidrObjects(v, wellknown.PrefixCalicoPools, "")
	if err != nil {
		return err
	}
	blocks, err := cidrObjects(v, wellknown.PrefixCalicoBlocks, "affinity")
	if err != nil {
		return err
	}
	if len(blocks) > 0 {
		affs, err := confirmedAffinities(v)
		if err != nil {
			return err
		}
		probs := append(blocksInPools(blocks, pools), overlaps(blocks)...)
		probs = append(probs, affinitiesMatch(affs, blocks)...)
		c.add("Calico IPAM: blocks inside the IPPools, disjoint, affinities matching", probs, "%d IPPools, %d IPAMBlocks, %d confirmed affinities", len(pools), len(blocks), len(affs))
	}
	return addCiliumCheck(c, v)
}

// cidrObjects reads spec.cidr (and spec.<owner>, if given) of every object
// under prefix; an object without a CIDR is skipped.
func cidrObjects(v *state.View, prefix, owner string) ([]cidrObject, error) {
	return listCIDRs(v, prefix, func(u *unstructured.Unstructured) []cidrObject {
		if co, ok := specCIDR(u, owner); ok {
			return []cidrObject{co}
		}
		return nil
	})
}

// confirmedAffinities are the BlockAffinities in state confirmed, their
// owner "host:<node>" as a block's affinity names it.
func confirmedAffinities(v *state.View) ([]cidrObject, error) {
	return listCIDRs(v, wellknown.PrefixCalicoAffs, func(u *unstructured.Unstructured) []cidrObject {
		st, _, _ := unstructured.NestedString(u.Object, "spec", "state")
		a, ok := specCIDR(u, "node")
		if st != "confirmed" || !ok {
			return nil
		}
		a.owner = "host:" + a.owner
		return []cidrObject{a}
	})
}

// listCIDRs lists the objects under prefix and collects the CIDRs cidrsOf
// finds in each, in key order.
func listCIDRs(v *state.View, prefix string, cidrsOf func(*unstructured.Unstructured) []cidrObject) ([]cidrObject, error) {
	_, us, err := state.ListCustom(v, prefix, "")
	if err != nil {
		return nil, err
	}
	var out []cidrObject
	for _, u := range us {
		out = append(out, cidrsOf(u)...)
	}
	return out, nil
}

// specCIDR is u's spec.cidr, owned by spec.<owner> when owner is given;
// false when spec.cidr is no CIDR.
func specCIDR(u *unstructured.Unstructured, owner string) (cidrObject, bool) {
	s, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return cidrObject{}, false
	}
	co := cidrObject{name: u.GetName(), cidr: p.Masked()}
	if owner != "" {
		co.owner, _, _ = unstructured.NestedString(u.Object, "spec", owner)
	}
	return co, true
}

func contains(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

func blocksInPools(blocks, pools []cidrObject) []string {
	var probs []string
	for _, b := range blocks {
		if !slices.ContainsFunc(pools, func(p cidrObject) bool { return contains(p.cidr, b.cidr) }) {
			probs = append(probs, fmt.Sprintf("IPAMBlock %s (%s) is inside no IPPool", b.name, b.cidr))
		}
	}
	return probs
}

// overlaps names every pair of objects whose CIDRs overlap.
func overlaps(objs []cidrObject) []string {
	s := slices.Clone(objs)
	sort.Slice(s, func(i, j int) bool { return s[i].cidr.Addr().Less(s[j].cidr.Addr()) })
	var probs []string
	for i := 1; i < len(s); i++ {
		if s[i-1].cidr.Overlaps(s[i].cidr) {
			probs = append(probs, fmt.Sprintf("%s (%s) overlaps %s (%s)", s[i-1].name, s[i-1].cidr, s[i].name, s[i].cidr))
		}
	}
	return probs
}

func affinitiesMatch(affs, blocks []cidrObject) []string {
	var probs []string
	for _, a := range affs {
		if !slices.ContainsFunc(blocks, func(b cidrObject) bool { return b.cidr == a.cidr && b.owner == a.owner }) {
			probs = append(probs, fmt.Sprintf("BlockAffinity %s (%s, %s) has no IPAMBlock of that CIDR affine to its node", a.name, a.cidr, a.owner))
		}
	}
	return probs
}

// addCiliumCheck: with cluster-pool IPAM, every CiliumNode's pod CIDRs lie
// in cilium-config's pool and no two nodes' overlap.
func addCiliumCheck(c *checker, v *state.View) error {
	o, ok, err := v.Get(wellknown.KeyCiliumConfig)
	if err != nil || !ok {
		return err
	}
	cm, ok := o.Value.Obj.(*corev1.ConfigMap)
	if !ok {
		return nil
	}
	data := cm.Data
	if ipam := data["ipam"]; ipam != "" && ipam != state.IPAMClusterPool {
		return nil
	}
	var pool []netip.Prefix
	for _, k := range []string{"cluster-pool-ipv4-cidr", "cluster-pool-ipv6-cidr"} {
		for _, f := range strings.Fields(strings.ReplaceAll(data[k], ",", " ")) {
			if p, err := netip.ParsePrefix(f); err == nil {
				pool = append(pool, p.Masked())
			}
		}
	}
	nodes, err := ciliumNodeCIDRs(v)
	if err != nil || len(nodes) == 0 || len(pool) == 0 {
		return err
	}
	var probs []string
	for _, n := range nodes {
		if !slices.ContainsFunc(pool, func(p netip.Prefix) bool { return contains(p, n.cidr) }) {
			probs = append(probs, fmt.Sprintf("CiliumNode %s pod CIDR %s is outside the cluster pool %s", n.name, n.cidr, cidr.Join(pool)))
		}
	}
	probs = append(probs, overlaps(nodes)...)
	c.add("Cilium cluster pool: node pod CIDRs inside it and disjoint", probs, "%d CiliumNode pod CIDRs in %s", len(nodes), cidr.Join(pool))
	return nil
}

// ciliumNodeCIDRs lists every CiliumNode's spec.ipam.podCIDRs.
func ciliumNodeCIDRs(v *state.View) ([]cidrObject, error) {
	return listCIDRs(v, wellknown.PrefixCiliumNodes, func(u *unstructured.Unstructured) []cidrObject {
		var out []cidrObject
		cidrs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ipam", "podCIDRs")
		for _, s := range cidrs {
			if p, err := netip.ParsePrefix(s); err == nil {
				out = append(out, cidrObject{name: u.GetName(), cidr: p.Masked()})
			}
		}
		return out
	})
}
