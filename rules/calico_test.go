package rules_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/corpus"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
)

// calicoName is Calico's CIDRToName, written again here from
// libcalico-go/lib/names/cidr.go so that the test does not trust the rule's.
func calicoName(p netip.Prefix) string {
	s := strings.Replace(p.String(), ".", "-", 3)
	s = strings.Replace(s, ":", "-", 7)
	return strings.Replace(s, "/", "-", 1)
}

// calicoCluster builds the Calico state of a dual-stack cluster as calico
// (CNI plugin, calico-node) would have written it through the apiserver:
// random /26 and /122 blocks per node, pods and tunnel addresses allocated
// in them, a handle per allocation.
type calicoCluster struct {
	c   *codec.Codec
	kvs []corpus.KV
	// addrs maps every handle to the addresses allocated to it.
	addrs map[string][]netip.Addr
	// tunnel maps node/annotation to the tunnel address it holds.
	tunnel map[string]netip.Addr
}

func (cc *calicoCluster) put(t *testing.T, key string, obj map[string]any) {
	t.Helper()
	b, err := cc.c.EncodeJSON(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	cc.kvs = append(cc.kvs, corpus.KV{Key: key, Value: b})
}

func crMeta(kind, name string) map[string]any {
	return map[string]any{"name": name, "uid": string(newTestUID(kind + "/" + name)), "generation": int64(3), "creationTimestamp": "2025-09-15T09:10:00Z"}
}

func newTestUID(s string) string {
	h := uint64(14695981039346656037)
	for _, c := range []byte(s) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return fmt.Sprintf("ca11c0de-%04x-4%03x-8%03x-%012x", h>>48, (h>>36)&0xfff, (h>>24)&0xfff, h&0xffffffffffff)
}

// addBlock writes one block of node with n pod allocations (and the
// tunnel address at ordinal 0 when tunnel is set), their handles, and the
// node's affinity.
func (cc *calicoCluster) addBlock(t *testing.T, rng *rand.Rand, node string, block netip.Prefix, n int, tunnel string) {
	size := 1 << (block.Addr().BitLen() - block.Bits())
	allocations := make([]any, size)
	var attrs []any
	var unallocated []any
	seq := map[string]any{}
	used := map[int]bool{}
	allocate := func(ord int, handle string, secondary map[string]any) {
		used[ord] = true
		allocations[ord] = int64(len(attrs))
		attrs = append(attrs, map[string]any{"handle_id": handle, "secondary": secondary})
		seq[strconv.Itoa(ord)] = int64(len(attrs))
		a, _ := cidr.AddrAt(block, bigInt(ord))
		cc.addrs[handle] = append(cc.addrs[handle], a)
		cc.put(t, "/registry/crd.projectcalico.org/ipamhandles/"+strings.ToLower(handle), map[string]any{
			"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMHandle", "metadata": crMeta("IPAMHandle", strings.ToLower(handle)),
			"spec": map[string]any{"block": map[string]any{block.String(): int64(1)}, "deleted": false, "handleID": handle}})
	}
	if tunnel != "" {
		allocate(0, tunnel+"-tunnel-addr-"+node, map[string]any{"node": node, "type": tunnel + "TunnelAddress"})
		a, _ := cidr.AddrAt(block, bigInt(0))
		cc.tunnel[node+"/"+tunnel] = a
	}
	for len(used) < n+btoi(tunnel != "") {
		ord := rng.IntN(size)
		if used[ord] {
			continue
		}
		pod := fmt.Sprintf("pod-%s-%d", node, ord)
		allocate(ord, "k8s-pod-network."+newTestUID(block.String() + pod)[24:], map[string]any{"namespace": "demo", "node": node, "pod": pod})
	}
	for i := range size {
		if !used[i] {
			unallocated = append(unallocated, int64(i))
		}
	}
	cc.put(t, "/registry/crd.projectcalico.org/ipamblocks/"+calicoName(block), map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMBlock", "metadata": crMeta("IPAMBlock", calicoName(block)),
		"spec": map[string]any{"affinity": "host:" + node, "allocations": allocations, "attributes": attrs, "cidr": block.String(),
			"deleted": false, "sequenceNumber": int64(len(attrs)), "sequenceNumberForAllocation": seq, "strictAffinity": false, "unallocated": unallocated}})
	aff := node + "-" + calicoName(block)
	cc.put(t, "/registry/crd.projectcalico.org/blockaffinities/"+aff, map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "BlockAffinity", "metadata": crMeta("BlockAffinity", aff),
		"spec": map[string]any{"cidr": block.String(), "deleted": "false", "node": node, "state": "confirmed", "type": "host"}})
}

func bigInt(i int) *big.Int { return big.NewInt(int64(i)) }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// newCalicoCluster writes nodes with random distinct blocks of both
// families, the two default pools and kubeadm-config.
func newCalicoCluster(t *testing.T, old4, old6 netip.Prefix) *calicoCluster {
	cc := &calicoCluster{c: codec.New(), addrs: map[string][]netip.Addr{}, tunnel: map[string]netip.Addr{}}
	rng := rand.New(rand.NewPCG(13, 2))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system", UID: "ca11c0de-0000-4000-8000-000000000001"},
		Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: " + old4.String() + "," + old6.String() + "\n  serviceSubnet: 10.96.0.0/12\n"}}
	cc.kvs = append(cc.kvs, corpus.KV{Key: "/registry/configmaps/kube-system/kubeadm-config", Value: encodeProto(t, cc.c, cm, "ConfigMap")})
	for _, p := range []netip.Prefix{old4, old6} {
		name, bs := "default-ipv4-ippool", int64(26)
		if p.Addr().Is6() {
			name, bs = "default-ipv6-ippool", 122
		}
		cc.put(t, "/registry/crd.projectcalico.org/ippools/"+name, map[string]any{"apiVersion": "crd.projectcalico.org/v1", "kind": "IPPool", "metadata": crMeta("IPPool", name),
			"spec": map[string]any{"allowedUses": []any{"Workload", "Tunnel"}, "blockSize": bs, "cidr": p.String(), "ipipMode": "Never", "natOutgoing": true, "nodeSelector": "all()", "vxlanMode": "Always"}})
	}
	taken := map[netip.Prefix]bool{}
	pick := func(pool netip.Prefix, bits int) netip.Prefix {
		for {
			r := new(big.Int).SetUint64(rng.Uint64N(1 << min(bits-pool.Bits(), 62)))
			off := r.Lsh(r, uint(pool.Addr().BitLen()-bits))
			a, _ := cidr.AddrAt(pool, off)
			if b := netip.PrefixFrom(a, bits); !taken[b] {
				taken[b] = true
				return b
			}
		}
	}
	for i, node := range []string{"cp1", "worker-1", "worker-2"} {
		cc.addBlock(t, rng, node, pick(old4, 26), 5+i, "vxlan")
		cc.addBlock(t, rng, node, pick(old4, 26), 64, "") // a full block
		cc.addBlock(t, rng, node, pick(old6, 122), 3, "vxlan-v6")
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: types.UID(fmt.Sprintf("ca11c0de-0000-4000-8000-%012d", 100+i)),
			Annotations: map[string]string{
				"projectcalico.org/IPv4Address":         fmt.Sprintf("10.0.0.%d/24", 10+i),
				"projectcalico.org/IPv4VXLANTunnelAddr": cc.tunnel[node+"/vxlan"].String(),
				"projectcalico.org/IPv6VXLANTunnelAddr": cc.tunnel[node+"/vxlan-v6"].String(),
			}}}
		cc.kvs = append(cc.kvs, corpus.KV{Key: "/registry/minions/" + node, Value: encodeProto(t, cc.c, n, "Node")})
	}
	return cc
}

func encodeProto(t *testing.T, c *codec.Codec, obj runtime.Object, kind string) []byte {
	t.Helper()
	b, err := c.EncodeProtobuf(obj, corev1.SchemeGroupVersion.WithKind(kind))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// restoreAndRead restores a snapshot with etcd's own code, starts a real
// etcd member on it and returns every live value, by key.
func restoreAndRead(t *testing.T, snap string) map[string][]byte {
	t.Helper()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(port)
	dataDir := filepath.Join(t.TempDir(), "m0.etcd")
	if err := snapshot.Restore(context.Background(), snapshot.RestoreConfig{SnapshotPath: snap, Name: "m0", DataDir: dataDir,
		PeerURLs: []string{peer}, InitialClusterToken: "snapshift-calico", RevisionBump: snapshot.DefaultRevisionBump, MarkCompacted: true}); err != nil {
		t.Fatal(err)
	}
	srv := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "m0", PeerURL: peer})
	resp, err := srv.Client().Get(t.Context(), "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// TestCalicoThroughEtcd writes a dual-stack Calico cluster's IPAM state as
// the apiserver stores it into a real etcd, migrates its snapshot, restores
// the result with etcd's own code and reads it back from a real etcd
// member: every address of every handle is at its old offset in the new
// range, every block, affinity and handle is named and keyed as Calico
// names them, and the pools, tunnel addresses and node addresses are where
// they must be.
func TestCalicoThroughEtcd(t *testing.T) {
	old4, old6 := netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:244::/56")
	new4, new6 := netip.MustParsePrefix("10.55.0.0/16"), netip.MustParsePrefix("fd00:10:55::/56")
	cc := newCalicoCluster(t, old4, old6)
	in := corpus.Write(t, cc.kvs)
	out := filepath.Join(t.TempDir(), "out.db")
	rep, _, _, err := runRules(t, in, out, rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: new4.String() + "," + new6.String()}})
	if err != nil {
		t.Fatal(err)
	}
	if c := ruleCounts(rep)["calico"]; c.Created != 18 || c.Deleted != 18 {
		t.Errorf("calico created %d and deleted %d objects, want 18 and 18 (9 blocks, 9 affinities renamed)", c.Created, c.Deleted)
	}
	live := restoreAndRead(t, out)
	got := readCalico(t, cc.c, live)

	mapAddr := func(a netip.Addr) netip.Addr {
		o, n := old4, new4
		if a.Is6() {
			o, n = old6, new6
		}
		off, err := cidr.Offset(o, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		b, _ := cidr.AddrAt(n, off)
		return b
	}
	if len(got.addrs) != len(cc.addrs) {
		t.Errorf("%d handles allocate addresses after the move, want %d", len(got.addrs), len(cc.addrs))
	}
	for h, olds := range cc.addrs {
		var want []netip.Addr
		for _, a := range olds {
			want = append(want, mapAddr(a))
		}
		slices.SortFunc(want, netip.Addr.Compare)
		if g := got.addrs[h]; !slices.Equal(g, want) {
			t.Errorf("handle %s: allocated %v after the move, want %v (old %v, offsets kept)", h, g, want, olds)
		}
	}
	for key, o := range got.pools {
		if want := map[string]string{"default-ipv4-ippool": new4.String(), "default-ipv6-ippool": new6.String()}[o]; want == "" || key != want {
			t.Errorf("IPPool %s has cidr %s after the move", o, key)
		}
	}
	checkCalicoNodes(t, got, cc, mapAddr)
	if len(got.nodes) != 3 {
		t.Errorf("%d nodes read back, want 3", len(got.nodes))
	}
}

// checkCalicoNodes checks the Nodes' tunnel addresses: moved by offset,
// the same as their tunnel handles allocate; the node's own address kept.
func checkCalicoNodes(t *testing.T, got *calicoRead, cc *calicoCluster, mapAddr func(netip.Addr) netip.Addr) {
	t.Helper()
	for node, ann := range got.nodes {
		for name, kind := range map[string]string{"projectcalico.org/IPv4VXLANTunnelAddr": "vxlan", "projectcalico.org/IPv6VXLANTunnelAddr": "vxlan-v6"} {
			if want := mapAddr(cc.tunnel[node+"/"+kind]).String(); ann[name] != want {
				t.Errorf("node %s: %s = %q, want %s", node, name, ann[name], want)
			}
			if a := got.addrs[kind+"-tunnel-addr-"+node]; len(a) != 1 || a[0].String() != ann[name] {
				t.Errorf("node %s: %s = %q, but the tunnel handle allocates %v", node, name, ann[name], a)
			}
		}
		if ann["projectcalico.org/IPv4Address"] == "" || strings.HasPrefix(ann["projectcalico.org/IPv4Address"], "10.55.") {
			t.Errorf("node %s: its own address annotation changed to %q", node, ann["projectcalico.org/IPv4Address"])
		}
	}
}

// calicoRead is the Calico state read back from etcd, checked for
// consistency on the way (names, keys, handles against blocks).
type calicoRead struct {
	addrs map[string][]netip.Addr      // handle -> allocated addresses, sorted
	pools map[string]string            // cidr -> pool name
	nodes map[string]map[string]string // node -> annotations
}

func readCalico(t *testing.T, c *codec.Codec, live map[string][]byte) *calicoRead {
	t.Helper()
	r := &calicoRead{addrs: map[string][]netip.Addr{}, pools: map[string]string{}, nodes: map[string]map[string]string{}}
	blocks := map[string]string{} // cidr -> affinity
	handleBlocks := map[string]map[string]int64{}
	for key, v := range live {
		o := decodeValue(t, c, key, v)
		if n, ok := o.Obj.(*corev1.Node); ok {
			r.nodes[n.Name] = n.Annotations
			continue
		}
		u, ok := o.Obj.(*unstructured.Unstructured)
		if !ok || !strings.HasPrefix(key, "/registry/crd.projectcalico.org/") {
			continue
		}
		cidrText, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
		switch o.GVK.Kind {
		case "IPPool":
			r.pools[cidrText] = u.GetName()
		case "IPAMBlock":
			p := netip.MustParsePrefix(cidrText)
			checkKeyName(t, key, u, "/registry/crd.projectcalico.org/ipamblocks/"+calicoName(p))
			aff, _, _ := unstructured.NestedString(u.Object, "spec", "affinity")
			blocks[cidrText] = strings.TrimPrefix(aff, "host:")
			for h, as := range blockAllocations(t, u, p) {
				r.addrs[h] = append(r.addrs[h], as...)
				if handleBlocks[h] == nil {
					handleBlocks[h] = map[string]int64{}
				}
				handleBlocks[h][cidrText] += int64(len(as))
			}
		case "BlockAffinity":
			node, _, _ := unstructured.NestedString(u.Object, "spec", "node")
			checkKeyName(t, key, u, "/registry/crd.projectcalico.org/blockaffinities/"+node+"-"+calicoName(netip.MustParsePrefix(cidrText)))
		}
	}
	checkAffinitiesAndHandles(t, c, live, blocks, handleBlocks)
	for h := range r.addrs {
		slices.SortFunc(r.addrs[h], netip.Addr.Compare)
	}
	return r
}

func checkKeyName(t *testing.T, key string, u *unstructured.Unstructured, want string) {
	t.Helper()
	if key != want || !strings.HasSuffix(key, "/"+u.GetName()) {
		t.Errorf("%s %s is stored at %s, want %s", u.GetKind(), u.GetName(), key, want)
	}
}

// blockAllocations returns the addresses a block allocates, by handle.
func blockAllocations(t *testing.T, u *unstructured.Unstructured, p netip.Prefix) map[string][]netip.Addr {
	t.Helper()
	allocs, _, _ := unstructured.NestedSlice(u.Object, "spec", "allocations")
	attrs, _, _ := unstructured.NestedSlice(u.Object, "spec", "attributes")
	unalloc, _, _ := unstructured.NestedSlice(u.Object, "spec", "unallocated")
	if want := 1 << (p.Addr().BitLen() - p.Bits()); len(allocs) != want {
		t.Errorf("block %s: %d allocation slots, want %d", p, len(allocs), want)
	}
	out := map[string][]netip.Addr{}
	free := 0
	for ord, x := range allocs {
		if x == nil {
			free++
			continue
		}
		h, _ := attrs[x.(int64)].(map[string]any)["handle_id"].(string)
		a, _ := cidr.AddrAt(p, bigInt(ord))
		out[h] = append(out[h], a)
	}
	if free != len(unalloc) {
		t.Errorf("block %s: %d free slots but %d unallocated", p, free, len(unalloc))
	}
	return out
}

// checkAffinitiesAndHandles checks that every affinity names a block of
// its node and every handle counts exactly the addresses blocks give it.
func checkAffinitiesAndHandles(t *testing.T, c *codec.Codec, live map[string][]byte, blocks map[string]string, handleBlocks map[string]map[string]int64) {
	t.Helper()
	affs, handles := 0, 0
	for key, v := range live {
		switch {
		case strings.HasPrefix(key, "/registry/crd.projectcalico.org/blockaffinities/"):
			u := decodeValue(t, c, key, v).Obj.(*unstructured.Unstructured)
			cidrText, _, _ := unstructured.NestedString(u.Object, "spec", "cidr")
			node, _, _ := unstructured.NestedString(u.Object, "spec", "node")
			if blocks[cidrText] != node {
				t.Errorf("BlockAffinity %s: block %s is affine to %q, not %s", u.GetName(), cidrText, blocks[cidrText], node)
			}
			affs++
		case strings.HasPrefix(key, "/registry/crd.projectcalico.org/ipamhandles/"):
			u := decodeValue(t, c, key, v).Obj.(*unstructured.Unstructured)
			id, _, _ := unstructured.NestedString(u.Object, "spec", "handleID")
			bl, _, _ := unstructured.NestedMap(u.Object, "spec", "block")
			got := map[string]int64{}
			for k, n := range bl {
				got[k] = n.(int64)
			}
			if fmt.Sprint(got) != fmt.Sprint(handleBlocks[id]) {
				t.Errorf("IPAMHandle %s counts %v, but the blocks allocate %v to it", id, got, handleBlocks[id])
			}
			handles++
		}
	}
	if affs != len(blocks) || handles != len(handleBlocks) {
		t.Errorf("%d affinities for %d blocks, %d handles for %d allocating handles", affs, len(blocks), handles, len(handleBlocks))
	}
}

// TestCalicoSample migrates the sample's pod range and reads its Calico
// state back from a restored etcd: the pool moved, each node's block and
// affinity is renamed after its new CIDR, and every pod's address is still
// allocated, at its offset, to the same handle.
func TestCalicoSample(t *testing.T) {
	t.Parallel()
	m := migrateSample(t, rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: newPodCIDR.String()}})
	live := map[string][]byte{}
	for k, kv := range m.etcd {
		if strings.HasPrefix(k, "/registry/") {
			live[k] = kv.Value
		}
	}
	got := readCalico(t, m.c, live)
	if got.pools[newPodCIDR.String()] != "default-ipv4-ippool" || len(got.pools) != 1 {
		t.Errorf("IPPools after the move: %v, want default-ipv4-ippool at %s", got.pools, newPodCIDR)
	}
	n := 0
	for c, allocs := range sample.CalicoBlocks() {
		old := netip.MustParsePrefix(c)
		off, _ := cidr.Offset(oldPodCIDR, old.Addr())
		nb, _ := cidr.AddrAt(newPodCIDR, off)
		newBlock := netip.PrefixFrom(nb, old.Bits())
		if _, ok := m.etcd["/registry/crd.projectcalico.org/ipamblocks/"+calicoName(newBlock)]; !ok {
			t.Errorf("block %s: no IPAMBlock %s after the move", c, calicoName(newBlock))
		}
		if _, ok := m.etcd["/registry/crd.projectcalico.org/ipamblocks/"+calicoName(old)]; ok {
			t.Errorf("block %s: the old IPAMBlock is still there", c)
		}
		for _, a := range allocs {
			off, _ := cidr.Offset(oldPodCIDR, netip.MustParseAddr(a.IP))
			want, _ := cidr.AddrAt(newPodCIDR, off)
			found := false
			for _, as := range got.addrs {
				found = found || slices.Contains(as, want)
			}
			if !found {
				t.Errorf("pod %s/%s: %s is not allocated at %s after the move", a.Namespace, a.Pod, a.IP, want)
			}
			n++
		}
	}
	if n == 0 || len(got.addrs) != n {
		t.Errorf("%d handles allocate addresses after the move, want one per sample pod (%d)", len(got.addrs), n)
	}
}
