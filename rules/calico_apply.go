package rules

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// Apply moves one claimed object.
func (r *Calico) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	if r.plan.Pod == nil {
		return transform.Result{}, nil
	}
	switch key := obj.Key; {
	case strings.HasPrefix(key, wellknown.PrefixCalicoPools):
		return r.applyPool(obj)
	case strings.HasPrefix(key, wellknown.PrefixCalicoBlocks), strings.HasPrefix(key, wellknown.PrefixCalicoAffs):
		return r.applyRename(obj)
	case strings.HasPrefix(key, wellknown.PrefixCalicoHandles):
		return r.applyHandle(obj)
	case strings.HasPrefix(key, wellknown.PrefixTigeraInstall):
		return r.applyInstallation(obj)
	case strings.HasPrefix(key, wellknown.PrefixNodes):
		return r.applyNode(obj)
	case slices.Contains(wellknown.CalicoDaemonSets, key):
		return r.applyDaemonSet(obj)
	case slices.Contains(wellknown.CalicoConfigMaps, key):
		return r.applyConfigMap(obj)
	}
	return transform.Result{}, nil
}

func customOf(obj *state.Object) (*unstructured.Unstructured, error) {
	u, err := state.As[*unstructured.Unstructured](obj, "a custom resource")
	if err != nil {
		return nil, err
	}
	return u, nil
}

func (r *Calico) applyPool(obj *state.Object) (transform.Result, error) {
	nc, ok := r.pools[obj.Key]
	if !ok {
		return transform.Result{}, nil
	}
	u, err := customOf(obj)
	if err != nil {
		return transform.Result{}, err
	}
	old, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
	if err := unstructured.SetNestedField(u.Object, nc, "spec", "cidr"); err != nil {
		return transform.Result{}, err
	}
	changes := []transform.Change{{Field: "spec.cidr", Old: old, New: nc}}
	more, err := editCustomLastApplied(u, map[string]string{old: nc})
	if err != nil {
		return transform.Result{}, err
	}
	r.counts["IPPool"]++
	return transform.Result{Action: transform.Replace, Changes: append(changes, more...)}, nil
}

// editCustomLastApplied keeps kubectl's copy of a custom resource's
// spec.cidr in step.
func editCustomLastApplied(u *unstructured.Unstructured, mapping map[string]string) ([]transform.Change, error) {
	meta := metav1.ObjectMeta{Annotations: u.GetAnnotations()}
	if _, ok := meta.Annotations[LastApplied]; !ok {
		return nil, nil
	}
	changes, err := editSpecCopies(&meta, []string{"cidr"}, mapping, "cidr")
	if err != nil || len(changes) == 0 {
		return nil, err
	}
	u.SetAnnotations(meta.Annotations)
	return changes[:1], nil // managedFields hold no CIDR values here
}

// applyRename moves an IPAMBlock or BlockAffinity to the name of its new
// CIDR: the old key goes, a copy with the new name, a new UID and the new
// spec.cidr is created (allocations, attributes, affinity, sequence
// numbers and everything else kept).
func (r *Calico) applyRename(obj *state.Object) (transform.Result, error) {
	rn, ok := r.renames[obj.Key]
	if !ok {
		return transform.Result{}, nil
	}
	u, err := customOf(obj)
	if err != nil {
		return transform.Result{}, err
	}
	c := u.DeepCopy()
	c.SetName(rn.name)
	c.SetUID(newUID(rn.key, obj.Key))
	c.SetResourceVersion("")
	c.SetGeneration(1)
	if err := unstructured.SetNestedField(c.Object, rn.cidr, "spec", "cidr"); err != nil {
		return transform.Result{}, err
	}
	r.counts[rn.kind]++
	return transform.Result{
		Action:  transform.Delete,
		Changes: []transform.Change{{Field: "renamed", Old: obj.Key, New: rn.key}},
		Create: []transform.NewObject{{Key: rn.key, Value: &codec.Object{Encoding: obj.Value.Encoding, GVK: obj.Value.GVK, Obj: c},
			Changes:    []transform.Change{{Field: "renamed from", New: obj.Key}, {Field: "spec.cidr", Old: rn.oldCIDR, New: rn.cidr}},
			Encryption: &obj.Encryption}},
	}, nil
}

// applyHandle maps the block CIDRs an IPAMHandle counts its addresses in.
func (r *Calico) applyHandle(obj *state.Object) (transform.Result, error) {
	u, err := customOf(obj)
	if err != nil {
		return transform.Result{}, err
	}
	blocks, found, _ := unstructured.NestedMap(u.Object, "spec", "block")
	if !found {
		return transform.Result{}, nil
	}
	out := make(map[string]any, len(blocks))
	var olds, news []string
	for c, n := range blocks {
		out[c] = n
		nc, moved, err := mapText(c, r.m.block)
		if err != nil {
			return transform.Result{}, err
		}
		if moved {
			delete(out, c)
			out[nc] = n
			olds, news = append(olds, c), append(news, nc)
		}
	}
	if len(olds) == 0 {
		return transform.Result{}, nil
	}
	if err := unstructured.SetNestedMap(u.Object, out, "spec", "block"); err != nil {
		return transform.Result{}, err
	}
	changes := []transform.Change{{Field: "spec.block", Old: strings.Join(sorted(olds), ","), New: strings.Join(sorted(news), ",")}}
	if renameManagedKeys(u, olds, news) {
		changes = append(changes, transform.Change{Field: "metadata.managedFields", New: "spec.block keys updated"})
	}
	r.counts["IPAMHandle"]++
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// renameManagedKeys renames the map keys server-side apply records for
// spec.block ("f:10.244.1.0/26") in a custom resource's managedFields.
func renameManagedKeys(u *unstructured.Unstructured, olds, news []string) bool {
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	changed := false
	for _, e := range entries {
		em, _ := e.(map[string]any)
		block, ok := nested(em, "fieldsV1", "f:spec", "f:block")
		if !ok {
			continue
		}
		for i, o := range olds {
			if v, ok := block["f:"+o]; ok {
				delete(block, "f:"+o)
				block["f:"+news[i]], changed = v, true
			}
		}
	}
	if changed {
		_ = unstructured.SetNestedSlice(u.Object, entries, "metadata", "managedFields")
	}
	return changed
}

// applyInstallation maps the operator Installation's pools, as asked
// (spec) and as computed (status).
func (r *Calico) applyInstallation(obj *state.Object) (transform.Result, error) {
	u, err := customOf(obj)
	if err != nil {
		return transform.Result{}, err
	}
	var changes []transform.Change
	for _, path := range installationPoolPaths {
		pools, found, _ := unstructured.NestedSlice(u.Object, path...)
		if !found {
			continue
		}
		edited := false
		for i, x := range pools {
			pool, _ := x.(map[string]any)
			c, _ := pool["cidr"].(string)
			nc, moved, err := mapText(c, r.m.pool)
			if err != nil {
				return transform.Result{}, err
			}
			if moved {
				pool["cidr"], edited = nc, true
				changes = append(changes, transform.Change{Field: fmt.Sprintf("%s[%d].cidr", strings.Join(path, "."), i), Old: c, New: nc})
			}
		}
		if edited {
			if err := unstructured.SetNestedSlice(u.Object, pools, path...); err != nil {
				return transform.Result{}, err
			}
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	r.counts["Installation"]++
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// applyNode maps the pod-range addresses Calico keeps in a Node's
// annotations (tunnel and WireGuard interface addresses).
func (r *Calico) applyNode(obj *state.Object) (transform.Result, error) {
	node, err := state.As[*corev1.Node](obj, "a Node")
	if err != nil {
		return transform.Result{}, err
	}
	var changes []transform.Change
	for _, k := range calicoNodeAnnotations {
		s, ok := node.Annotations[k]
		if !ok {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue // Calico ignores an annotation that is no address too
		}
		na, moved, err := r.m.addr(a)
		if err != nil {
			return transform.Result{}, fmt.Errorf("annotation %s: %w", k, err)
		}
		if moved {
			node.Annotations[k] = na.String()
			changes = append(changes, transform.Change{Field: "metadata.annotations[" + k + "]", Old: s, New: na.String()})
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	r.counts["Node"]++
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// calicoPoolEnv are calico-node's variables for the pool it creates when
// none of that family exists.
var calicoPoolEnv = []string{"CALICO_IPV4POOL_CIDR", "CALICO_IPV6POOL_CIDR"}

// applyDaemonSet maps CALICO_IPV4POOL_CIDR / CALICO_IPV6POOL_CIDR in
// calico-node's containers (and kubectl's copy of them).
func (r *Calico) applyDaemonSet(obj *state.Object) (transform.Result, error) {
	ds, err := state.As[*appsv1.DaemonSet](obj, "a DaemonSet")
	if err != nil {
		return transform.Result{}, err
	}
	var changes []transform.Change
	mapping := map[string]string{}
	for _, cs := range [][]corev1.Container{ds.Spec.Template.Spec.InitContainers, ds.Spec.Template.Spec.Containers} {
		for ci := range cs {
			for i := range cs[ci].Env {
				e := &cs[ci].Env[i]
				if !slices.Contains(calicoPoolEnv, e.Name) {
					continue
				}
				s, ch, err := r.m.mapCIDRsInText(e.Value)
				if err != nil {
					return transform.Result{}, fmt.Errorf("containers[%s].env[%s]: %w", cs[ci].Name, e.Name, err)
				}
				if ch.len() > 0 {
					mapping[e.Value] = s
					changes = append(changes, transform.Change{Field: fmt.Sprintf("containers[%s].env[%s]", cs[ci].Name, e.Name), Old: e.Value, New: s})
					e.Value = s
				}
			}
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	if _, err := editLastApplied(&ds.ObjectMeta, func(doc map[string]any) bool { return mapEnvValues(doc, mapping) }); err != nil {
		return transform.Result{}, err
	}
	ds.Generation++ // as the apiserver does when the pod template changes
	r.counts["DaemonSet"]++
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// mapEnvValues maps the values of the pool variables in a DaemonSet
// document (kubectl's last-applied copy).
func mapEnvValues(doc map[string]any, mapping map[string]string) bool {
	pod, ok := nested(doc, "spec", "template", "spec")
	if !ok {
		return false
	}
	changed := false
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := pod[list].([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			env, _ := cm["env"].([]any)
			for _, e := range env {
				em, _ := e.(map[string]any)
				name, _ := em["name"].(string)
				val, _ := em["value"].(string)
				if n, ok := mapping[val]; ok && slices.Contains(calicoPoolEnv, name) {
					em["value"], changed = n, true
				}
			}
		}
	}
	return changed
}

// applyConfigMap maps the pod-range CIDRs in calico-config's values (a CNI
// network config may name its pools: "ipv4_pools": ["10.244.0.0/16"]).
func (r *Calico) applyConfigMap(obj *state.Object) (transform.Result, error) {
	changes, err := editConfigMapData(obj, func(v string) (string, []transform.Change, error) {
		s, ch, err := r.m.mapCIDRsInText(v)
		if err != nil || ch.len() == 0 {
			return v, nil, err
		}
		return s, []transform.Change{{Old: strings.Join(ch.old, ","), New: strings.Join(ch.new, ",")}}, nil
	})
	if err != nil {
		return transform.Result{}, err
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	r.counts["ConfigMap"]++
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// Notes says what moved and what the operator must know about it.
func (r *Calico) Notes() []string {
	if len(r.counts) == 0 {
		return nil
	}
	var moved []string
	for _, k := range []string{"IPPool", "Installation", "IPAMBlock", "BlockAffinity", "IPAMHandle", "Node", "DaemonSet", "ConfigMap"} {
		if n := r.counts[k]; n > 0 {
			moved = append(moved, fmt.Sprintf("%s: %d", k, n))
		}
	}
	return []string{
		fmt.Sprintf("Calico: moved to %s, every allocation at its offset: %s (IPAMBlocks and BlockAffinities renamed after their new CIDR)", cidr.Join(r.m.new), strings.Join(moved, ", ")),
		"Calico: calico-node reads CALICO_IPV4POOL_CIDR/CALICO_IPV6POOL_CIDR (or kubeadm's podSubnet) only to create a default pool when no pool of that family exists, and never changes an existing pool; current Calico CRDs refuse any change of an IPPool's cidr through the API (\"CIDR cannot be changed\"), so the moved IPPools are what Calico allocates from after the restart",
		"Calico: running pods keep their old addresses until they are recreated: restart calico-node first (it programs routes for the moved blocks and tunnel addresses), then recreate every pod on the pod network; calico-kube-controllers may release, after its leak grace period (15m by default), a moved allocation whose pod still reports its old address",
	}
}
