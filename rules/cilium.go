package rules

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameCilium is the cilium rule.
const NameCilium = "cilium"

// Cilium moves Cilium's cluster-pool (and multi-pool, cilium_pools.go) IPAM state with the pod range
// (DESIGN.md decision 17): the pool in cilium-config and, per
// CiliumNode, the pod CIDRs the operator handed out and the pod-range
// addresses the agent took from them, each at its offset.
//
// What Cilium does with it (read in cilium/cilium): cilium-operator reads
// cluster-pool-ipv4-cidr once, at start (pkg/ipam/allocator/clusterpool),
// then re-reserves every CiliumNode's spec.ipam.podCIDRs in it
// (pkg/ipam/allocator/podcidr, reuseIPNets); a CIDR outside the pool is
// not re-reserved (the node gets an operator-status error and keeps it),
// and a changed pool alone never moves an existing node. At start the agent
// restores its router address (cilium_host) from the node, which fails for
// an old-range address, then from its CiliumNode's CiliumInternalIP, which
// this rule moved, so it keeps the mapped address; its endpoints' old
// addresses cannot be re-allocated in the new CIDRs ("Unable to restore
// endpoint, ignoring"), so those pods have no network until recreated.
type Cilium struct {
	opts  Options
	plan  *Plan
	mode  string
	pool  map[string]string            // cilium-config key -> new value
	pools map[string]map[string]string // CiliumPodIPPool key -> old CIDR -> new (multi-pool)
	nodes map[string]*ciliumNodeMove
	notes []string
}

// ciliumNodeMove is what changes in one CiliumNode.
type ciliumNodeMove struct {
	cidrs map[string]string // old pod CIDR -> new
	pairs []prefixPair      // the same, parsed, to map addresses inside them
}

type prefixPair struct{ old, new netip.Prefix }

// ciliumPoolKeys are the cilium-config keys that hold the pod range.
var ciliumPoolKeys = []string{"cluster-pool-ipv4-cidr", "cluster-pool-ipv6-cidr", "ipv4-native-routing-cidr", "ipv6-native-routing-cidr"}

var ciliumEntry = Entry{
	Name:    NameCilium,
	Summary: "move Cilium's cluster-pool and multi-pool IPAM state: the pool in cilium-config, CiliumPodIPPools, every CiliumNode's pod CIDRs and pod-range addresses, offsets kept",
	Touches: []string{"configmaps kube-system/cilium-config (cluster-pool-ipv4/ipv6-cidr, native-routing CIDRs equal to the pool, auto-create-cilium-pod-ip-pools)",
		"ciliumpodippools.cilium.io (spec.ipv4/ipv6.cidrs inside the old pod range)",
		"ciliumnodes.cilium.io (spec.ipam.podCIDRs, spec.ipam.pools.allocated, CiliumInternalIP in spec.addresses, spec.health, spec.ingress, spec.ipam.pool, status.ipam)"},
	After:   []string{NamePodCIDR}, // it reuses the Nodes' mapping
	Enabled: func(o *Options) bool { return o.PodNetworkCIDR != "" },
	New:     func(o Options, p *Plan) transform.Rule { return &Cilium{opts: o, plan: p} },
	Example: func() Options { return Options{PodCIDROptions: PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}} },
	Options: func(*Options) []Option { return nil },
}

func (r *Cilium) Name() string { return NameCilium }
func (r *Cilium) Prefixes() []string {
	return []string{wellknown.KeyCiliumConfig, wellknown.PrefixCiliumNodes, wellknown.PrefixCiliumPools}
}
func (r *Cilium) Lists() []string {
	return []string{wellknown.PrefixCiliumNodes, wellknown.PrefixCiliumPools}
}
func (r *Cilium) Notes() []string { return r.notes }

// Prepare reads the IPAM mode and plans every CiliumNode, refusing a pool
// that is not the pod range being moved and a multi-pool IPAM.
func (r *Cilium) Prepare(ctx context.Context, v *state.View) error {
	if slices.Contains(r.opts.LeaveCNIState, state.CNICilium) {
		return nil // the cni rule notes what to do by hand
	}
	o, ok, err := v.Get(wellknown.KeyCiliumConfig)
	if err != nil {
		return err
	}
	if !ok {
		if n := len(v.Keys(wellknown.PrefixCiliumNodes)); n > 0 {
			return option.Errorf("LeaveCNIState", "%w: the snapshot holds %d CiliumNodes but no kube-system/cilium-config to say Cilium's IPAM mode and pool (is Cilium configured elsewhere?): give {} cilium to move its state by hand",
				transform.ErrRefused, n)
		}
		return nil
	}
	cm, err := state.As[*corev1.ConfigMap](o, "a ConfigMap")
	if err != nil {
		return fmt.Errorf("%s: %w", o.Key, err)
	}
	if err := refuseKVStore(cm.Data); err != nil {
		return err
	}
	r.mode = cm.Data["ipam"]
	if r.mode == "" {
		r.mode = state.IPAMClusterPool
	}
	switch r.mode {
	case state.IPAMKubernetes:
		r.notes = append(r.notes, "Cilium runs with ipam: kubernetes: it takes pod CIDRs from node.spec.podCIDRs, which the pod-cidr rule moves (the CiliumNodes' copies and pod-range addresses move with them); restart the cilium DaemonSet, then at once recreate every pod that is not on the host network: the agents cannot restore endpoints whose old-range addresses lie outside the new CIDRs")
	case state.IPAMMultiPool, state.IPAMClusterPool:
	default:
		r.notes = append(r.notes, fmt.Sprintf("Cilium runs with ipam: %s: its pod addresses do not come from the cluster pod CIDR, so nothing of Cilium's moves", r.mode))
		return nil
	}
	if r.plan.Pod == nil {
		return nil
	}
	if err := r.planPool(cm.Data); err != nil {
		return err
	}
	if r.mode == state.IPAMMultiPool {
		if err := r.planPodIPPools(v, cm.Data); err != nil {
			return err
		}
	}
	return r.planNodes(v)
}

// refuseKVStore refuses Cilium's kvstore mode: with cilium-config's
// kvstore set (Cilium's agent option "kvstore"; unset, the agent forces
// identity-allocation-mode crd), the agents keep their nodes (with their
// CiliumInternalIPs and pod CIDRs), the ipcache of every pod address and,
// with identity-allocation-mode kvstore or doublewrite-*, the identities
// in that external key-value store, which is not in the snapshot: moved
// here, they would stay on the old ranges there.
func refuseKVStore(data map[string]string) error {
	kv := strings.TrimSpace(data["kvstore"])
	if kv == "" {
		return nil
	}
	what := "its nodes and the ipcache of pod addresses"
	if m := data["identity-allocation-mode"]; m != "" && m != "crd" {
		what = "its nodes, the ipcache of pod addresses and (identity-allocation-mode " + m + ") its identities"
	}
	return option.Errorf("LeaveCNIState", "%w: cilium-config sets kvstore: %s: Cilium keeps %s in that external key-value store, which the snapshot does not hold, so they would keep the old addresses; switch Cilium to CRD mode (kvstore unset, identity-allocation-mode: crd) and let its agents write their state again before the snapshot, or give {} cilium and move the kvstore's state yourself",
		transform.ErrRefused, kv, what)
}

// planPool maps the pool keys of cilium-config. Each pool CIDR must be the
// old pod CIDR of its family (or already the new one), and the per-node
// mask size must still fit the new range.
func (r *Cilium) planPool(data map[string]string) error {
	pp := r.plan.Pod
	r.pool = map[string]string{}
	for _, k := range ciliumPoolKeys {
		val, ok := data[k]
		if !ok || strings.TrimSpace(val) == "" {
			continue
		}
		fields := strings.FieldsFunc(val, func(c rune) bool { return c == ' ' || c == ',' })
		out := slices.Clone(fields)
		for i, f := range fields {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return fmt.Errorf("%w: cilium-config %s holds %q, which is not a CIDR", transform.ErrRefused, k, f)
			}
			o, n, fam := cidr.PairOf(pp.Old, pp.New, p.Addr())
			switch {
			case !fam || p.Masked() == n:
				continue
			case p.Masked() != o && strings.HasPrefix(k, "cluster-pool"):
				return option.Errorf("LeaveCNIState", "%w: cilium-config %s is %s, not the old pod CIDR %s: Cilium hands out pod addresses from its own pool, so give that pool as {OldPodNetworkCIDR}, or {} cilium to move it by hand",
					transform.ErrRefused, k, p, o)
			case p.Masked() != o:
				continue // a native-routing CIDR wider than the pod range: not a copy of it
			}
			out[i] = n.String()
			if err := checkCiliumMask(data, k, n); err != nil {
				return err
			}
		}
		if nv := strings.Join(out, " "); !slices.Equal(out, fields) {
			if !strings.Contains(val, " ") && strings.Contains(val, ",") {
				nv = strings.Join(out, ",")
			}
			r.pool[k] = nv
		}
	}
	return nil
}

// checkCiliumMask refuses a new pool smaller than one node's CIDR.
func checkCiliumMask(data map[string]string, key string, n netip.Prefix) error {
	mk := strings.Replace(strings.Replace(key, "-cidr", "-mask-size", 1), "native-routing", "", 1)
	s, ok := data[mk]
	if !ok || !strings.HasPrefix(key, "cluster-pool") {
		return nil
	}
	m, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%w: cilium-config %s is %q, not a number", transform.ErrRefused, mk, s)
	}
	if m < n.Bits() {
		return fmt.Errorf("%w: cilium-config %s is %d, larger than the whole new pod CIDR %s: Cilium could give no node a CIDR", transform.ErrRefused, mk, m, n)
	}
	return nil
}

// planNodes maps every CiliumNode's pod CIDRs: as the pod-cidr rule maps
// its Node where they are the same, at the same offset otherwise.
func (r *Cilium) planNodes(v *state.View) error {
	objs, err := v.List(wellknown.PrefixCiliumNodes)
	if err != nil {
		return err
	}
	byNode := map[string]NodeMove{}
	for _, m := range r.plan.Pod.Nodes {
		byNode[m.Node] = m
	}
	r.nodes = map[string]*ciliumNodeMove{}
	var placed []placedCIDR
	var problems []string
	for _, o := range objs {
		u, err := state.As[*unstructured.Unstructured](o, "a custom resource")
		if err != nil {
			return fmt.Errorf("%s: %w", o.Key, err)
		}
		cidrs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "ipam", "podCIDRs")
		cidrs = append(cidrs, r.poolAllocations(u)...)
		mv := &ciliumNodeMove{cidrs: map[string]string{}}
		for _, c := range cidrs {
			p, err := r.mapCiliumCIDR(byNode[u.GetName()], c)
			if err != nil {
				problems = append(problems, fmt.Sprintf("CiliumNode %s: %v", u.GetName(), err))
				continue
			}
			placed = append(placed, placedCIDR{"CiliumNode " + u.GetName(), p})
			if old := netip.MustParsePrefix(c).Masked(); old != p {
				mv.cidrs[c] = p.String()
				mv.pairs = append(mv.pairs, prefixPair{old, p})
			}
		}
		r.nodes[o.Key] = mv
	}
	problems = append(problems, checkPlacement(r.plan.Pod.Old, r.plan.Pod.New, placed)...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%w: cilium-operator would not re-reserve these CiliumNode pod CIDRs: %s", transform.ErrRefused, strings.Join(problems, "; "))
	}
	return nil
}

// mapCiliumCIDR reuses the Node's mapping when the CiliumNode holds the
// same CIDR as its Node, else maps it by offset in the pod range.
func (r *Cilium) mapCiliumCIDR(node NodeMove, c string) (netip.Prefix, error) {
	for i, old := range node.Old {
		if old == c && i < len(node.New) {
			return netip.ParsePrefix(node.New[i])
		}
	}
	if _, err := netip.ParsePrefix(c); err != nil {
		return netip.Prefix{}, fmt.Errorf("podCIDR %q is not a CIDR", c)
	}
	return mapNodeCIDR(r.plan.Pod.Old, r.plan.Pod.New, c)
}

// mapAddr maps a pod-range address: inside one of the node's old pod
// CIDRs, to the same offset in its new one; else by its offset in the pod
// range. ok is false for an address outside the old pod range.
func (r *Cilium) mapAddr(mv *ciliumNodeMove, s string) (string, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return s, false
	}
	for _, p := range mv.pairs {
		if p.old.Contains(a) {
			return addrAtOffset(p.old, p.new, a)
		}
	}
	o, n, ok := cidr.PairOf(r.plan.Pod.Old, r.plan.Pod.New, a)
	if !ok || !o.Contains(a) || o == n {
		return s, false
	}
	return addrAtOffset(o, n, a)
}

// addrAtOffset returns the address at a's offset in old, in new.
func addrAtOffset(old, new netip.Prefix, a netip.Addr) (string, bool) {
	off, err := cidr.Offset(old, a)
	if err != nil || off.Cmp(cidr.Size(new)) >= 0 {
		return a.String(), false
	}
	n, err := cidr.AddrAt(new, off)
	if err != nil {
		return a.String(), false
	}
	return n.String(), true
}

// Apply edits cilium-config or one CiliumNode.
func (r *Cilium) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	var changes []transform.Change
	switch {
	case obj.Key == wellknown.KeyCiliumConfig && len(r.pool) > 0:
		cm, err := state.As[*corev1.ConfigMap](obj, "a ConfigMap")
		if err != nil {
			return transform.Result{}, err
		}
		for _, k := range slices.Sorted(maps.Keys(r.pool)) {
			changes = append(changes, transform.Change{Field: "data[" + k + "]", Old: cm.Data[k], New: r.pool[k]})
			cm.Data[k] = r.pool[k]
		}
		r.notes = append(r.notes, ciliumRestartNote)
	case strings.HasPrefix(obj.Key, wellknown.PrefixCiliumPools):
		if len(r.pools[obj.Key]) == 0 {
			return transform.Result{}, nil
		}
		u, err := state.As[*unstructured.Unstructured](obj, "a custom resource")
		if err != nil {
			return transform.Result{}, err
		}
		changes = editPodIPPool(u, r.pools[obj.Key])
		if len(r.pool) == 0 && len(r.notes) == 0 {
			r.notes = append(r.notes, ciliumRestartNote)
		}
	case strings.HasPrefix(obj.Key, wellknown.PrefixCiliumNodes):
		mv := r.nodes[obj.Key]
		if mv == nil {
			return transform.Result{}, nil
		}
		u, err := state.As[*unstructured.Unstructured](obj, "a custom resource")
		if err != nil {
			return transform.Result{}, err
		}
		changes = r.editCiliumNode(u, mv)
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// ciliumRestartNote is what the operator does after a moved pool.
const ciliumRestartNote = "Cilium's pool moved; cilium-operator reads its pools only at start: restart cilium-operator first (it re-reserves every CiliumNode's moved pod CIDRs), then the cilium DaemonSet (each agent takes its router address from its CiliumNode's moved CiliumInternalIP), then at once recreate every pod that is not on the host network: the agents cannot restore endpoints whose old-range addresses lie outside the new CIDRs, so those pods have no network until recreated (their CiliumEndpoints are recreated with them)"

// editCiliumNode maps the pod CIDRs and every pod-range address of one
// CiliumNode; the node's own addresses (InternalIP, ExternalIP) stay.
func (r *Cilium) editCiliumNode(u *unstructured.Unstructured, mv *ciliumNodeMove) []transform.Change {
	var changes []transform.Change
	note := func(field, old, new string) {
		changes = append(changes, transform.Change{Field: field, Old: old, New: new})
	}
	spec, _ := u.Object["spec"].(map[string]any)
	if ipam, ok := spec["ipam"].(map[string]any); ok {
		if list, ok := ipam["podCIDRs"].([]any); ok {
			var olds, news []string
			for i, e := range list {
				if s, ok := e.(string); ok && mv.cidrs[s] != "" {
					olds, news = append(olds, s), append(news, mv.cidrs[s])
					list[i] = mv.cidrs[s]
				}
			}
			if len(olds) > 0 {
				note("spec.ipam.podCIDRs", strings.Join(olds, ","), strings.Join(news, ","))
			}
		}
		r.mapKeys(ipam, "pool", "spec.ipam.pool", mv, note)
		if pools, ok := ipam["pools"].(map[string]any); ok {
			allocated, _ := pools["allocated"].([]any)
			for i, e := range allocated {
				a, _ := e.(map[string]any)
				list, _ := a["cidrs"].([]any)
				for j, c := range list {
					if s, ok := c.(string); ok && mv.cidrs[s] != "" {
						note(fmt.Sprintf("spec.ipam.pools.allocated[%d] (pool %v)", i, a["pool"]), s, mv.cidrs[s])
						list[j] = mv.cidrs[s]
					}
				}
			}
		}
	}
	r.mapSpecAddrs(spec, mv, note)
	if n := r.editManagedFields(u, mv); n > 0 {
		note("metadata.managedFields", "", fmt.Sprintf("%d moved map keys renamed", n))
	}
	if st, ok := nested(u.Object, "status", "ipam"); ok {
		r.mapKeys(st, "used", "status.ipam.used", mv, note)
		if pc, ok := st["pod-cidrs"].(map[string]any); ok {
			st["pod-cidrs"] = renameKeys(pc, func(k string) (string, bool) {
				n := mv.cidrs[k]
				if n != "" {
					note("status.ipam.pod-cidrs", k, n)
				}
				return n, n != ""
			})
		}
	}
	return changes
}

// mapKeys renames the address keys of m[field] (spec.ipam.pool,
// status.ipam.used: address -> owner) that move.
func (r *Cilium) mapKeys(m map[string]any, field, display string, mv *ciliumNodeMove, note func(field, old, new string)) {
	pool, ok := m[field].(map[string]any)
	if !ok {
		return
	}
	var olds, news []string
	m[field] = renameKeys(pool, func(k string) (string, bool) {
		n, ok := r.mapAddr(mv, k)
		if ok {
			olds, news = append(olds, k), append(news, n)
		}
		return n, ok
	})
	if len(olds) > 0 {
		note(display, fmt.Sprintf("%d addresses from %s", len(olds), olds[0]), fmt.Sprintf("from %s", news[0]))
	}
}

// renameKeys returns m with the keys fn maps renamed, built afresh so that
// a new key that equals another old one cannot overwrite it.
func renameKeys(m map[string]any, fn func(string) (string, bool)) map[string]any {
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if n, ok := fn(k); ok {
			out[n] = m[k]
		} else {
			out[k] = m[k]
		}
	}
	return out
}

// editManagedFields renames the field-set keys ("f:10.244.1.0/24" under
// f:pod-cidrs, "f:<address>" under f:pool and f:used) that name a moved
// CIDR or address, so that server-side apply's record matches the object.
func (r *Cilium) editManagedFields(u *unstructured.Unstructured, mv *ciliumNodeMove) int {
	n := 0
	var walk func(m map[string]any) map[string]any
	walk = func(m map[string]any) map[string]any {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				m[k] = walk(sub)
			}
		}
		return renameKeys(m, func(k string) (string, bool) {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				return k, false
			}
			if c := mv.cidrs[name]; c != "" {
				n++
				return "f:" + c, true
			}
			if a, ok := r.mapAddr(mv, name); ok {
				n++
				return "f:" + a, true
			}
			return k, false
		})
	}
	mfs, ok := nested(u.Object, "metadata")
	if !ok {
		return 0
	}
	list, _ := mfs["managedFields"].([]any)
	for _, e := range list {
		if mf, ok := e.(map[string]any); ok {
			if fs, ok := mf["fieldsV1"].(map[string]any); ok {
				mf["fieldsV1"] = walk(fs)
			}
		}
	}
	return n
}

// mapSpecAddrs maps the pod-range addresses of a CiliumNode's spec: the
// CiliumInternalIP (router) address, the health and ingress addresses.
func (r *Cilium) mapSpecAddrs(spec map[string]any, mv *ciliumNodeMove, note func(field, old, new string)) {
	if addrs, ok := spec["addresses"].([]any); ok {
		for i, e := range addrs {
			m, ok := e.(map[string]any)
			if !ok || m["type"] != "CiliumInternalIP" {
				continue
			}
			if s, ok := m["ip"].(string); ok {
				if n, ok := r.mapAddr(mv, s); ok {
					m["ip"] = n
					note(fmt.Sprintf("spec.addresses[%d] (CiliumInternalIP)", i), s, n)
				}
			}
		}
	}
	for _, sec := range []string{"health", "ingress"} {
		m, ok := spec[sec].(map[string]any)
		if !ok {
			continue
		}
		for _, fam := range []string{"ipv4", "ipv6"} {
			if s, ok := m[fam].(string); ok {
				if n, ok := r.mapAddr(mv, s); ok {
					m[fam] = n
					note("spec."+sec+"."+fam, s, n)
				}
			}
		}
	}
}
