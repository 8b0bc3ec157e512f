//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	sigyaml "sigs.k8s.io/yaml"

	calicocrds "github.com/snapshift/snapshift/internal/calicocrds"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/sample"
)

const (
	calicoOld4, calicoOld6 = "10.244.0.0/16", "fd00:10:244::/56"
	calicoNew4, calicoNew6 = "10.55.0.0/16", "fd00:10:55::/56"
)

func calicoGVR(plural string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "crd.projectcalico.org", Version: "v1", Resource: plural}
}

// calicoObjects is the Calico IPAM state the test creates: two nodes, a
// dual-stack pair of pools, per node an IPv4 and an IPv6 block with their
// affinities, the VXLAN tunnel addresses and two pods (one dual-stack),
// each allocation under its handle. want is the same state after the move.
func calicoObjects(cidr4, cidr6, p4, p6 string) []*unstructured.Unstructured {
	obj := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "crd.projectcalico.org/v1", "kind": kind,
			"metadata": map[string]any{"name": name}, "spec": spec}}
	}
	nameOf := func(c string) string {
		return strings.NewReplacer(".", "-", ":", "-", "/", "-").Replace(c)
	}
	slots := func(size int, taken map[int]int64) []any {
		out := make([]any, size)
		for i, a := range taken {
			out[i] = a
		}
		return out
	}
	free := func(size int, taken map[int]int64) []any {
		var out []any
		for i := range size {
			if _, ok := taken[i]; !ok {
				out = append(out, int64(i))
			}
		}
		return out
	}
	attr := func(h string, sec map[string]any) map[string]any {
		return map[string]any{"handle_id": h, "secondary": sec}
	}
	block := func(c, node string, size int, taken map[int]int64, attrs []any) *unstructured.Unstructured {
		return obj("IPAMBlock", nameOf(c), map[string]any{"affinity": "host:" + node, "allocations": slots(size, taken), "attributes": attrs,
			"cidr": c, "deleted": false, "sequenceNumber": int64(len(attrs)), "strictAffinity": false, "unallocated": free(size, taken)})
	}
	aff := func(c, node string) *unstructured.Unstructured {
		return obj("BlockAffinity", node+"-"+nameOf(c), map[string]any{"cidr": c, "deleted": "false", "node": node, "state": "confirmed", "type": "host"})
	}
	handle := func(h string, blocks map[string]any) *unstructured.Unstructured {
		return obj("IPAMHandle", h, map[string]any{"block": blocks, "deleted": false, "handleID": h})
	}
	pod := func(ns, name, node string) map[string]any {
		return map[string]any{"namespace": ns, "node": node, "pod": name}
	}
	b4a, b4b, b6a := cidr4+"171.0/26", cidr4+"235.192/26", cidr6+"7a1b:2c3d:4e5f:6a40/122"
	return []*unstructured.Unstructured{
		obj("IPPool", "default-ipv4-ippool", map[string]any{"allowedUses": []any{"Workload", "Tunnel"}, "assignmentMode": "Automatic", "blockSize": int64(26), "cidr": p4,
			"ipipMode": "Never", "natOutgoing": true, "nodeSelector": "all()", "vxlanMode": "CrossSubnet"}),
		obj("IPPool", "default-ipv6-ippool", map[string]any{"allowedUses": []any{"Workload", "Tunnel"}, "assignmentMode": "Automatic", "blockSize": int64(122), "cidr": p6,
			"ipipMode": "Never", "natOutgoing": false, "nodeSelector": "all()", "vxlanMode": "CrossSubnet"}),
		block(b4a, "worker-1", 64, map[int]int64{0: 0, 5: 1}, []any{
			attr("vxlan-tunnel-addr-worker-1", map[string]any{"node": "worker-1", "type": "vxlanTunnelAddress"}),
			attr("k8s-pod-network.4c2d7e9a1b33", pod("demo", "web-1", "worker-1"))}),
		block(b4b, "cp1", 64, map[int]int64{1: 0, 63: 1}, []any{
			attr("vxlan-tunnel-addr-cp1", map[string]any{"node": "cp1", "type": "vxlanTunnelAddress"}),
			attr("k8s-pod-network.1d5c6a0b8f2e", pod("kube-system", "coredns-1", "cp1"))}),
		block(b6a, "cp1", 64, map[int]int64{9: 0}, []any{attr("k8s-pod-network.1d5c6a0b8f2e", pod("kube-system", "coredns-1", "cp1"))}),
		aff(b4a, "worker-1"), aff(b4b, "cp1"), aff(b6a, "cp1"),
		handle("vxlan-tunnel-addr-worker-1", map[string]any{b4a: int64(1)}),
		handle("vxlan-tunnel-addr-cp1", map[string]any{b4b: int64(1)}),
		handle("k8s-pod-network.4c2d7e9a1b33", map[string]any{b4a: int64(1)}),
		handle("k8s-pod-network.1d5c6a0b8f2e", map[string]any{b4b: int64(1), b6a: int64(1)}),
	}
}

var calicoPlural = map[string]string{"IPPool": "ippools", "IPAMBlock": "ipamblocks", "BlockAffinity": "blockaffinities", "IPAMHandle": "ipamhandles"}

// TestCalico creates Calico's real CRDs and a dual-stack Calico IPAM state
// through a real kube-apiserver, migrates the etcd snapshot's pod range
// with the snapshift CLI, restores it, and reads every Calico object back
// through a real kube-apiserver on the result: the names, CIDRs and
// allocations are those of the same state built at the new range, the
// apiserver's validation (structural schema, CEL rules) accepts an update
// of every one, and still refuses to change a pool's CIDR.
func TestCalico(t *testing.T) {
	ver := "v1.36.3"
	if v := os.Getenv("SNAPSHIFT_E2E_K8S"); v != "" {
		ver = strings.Fields(v)[0]
	}
	bin := binDir(t, ver)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)
	p := newPKI(t, dir)

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, p, oldServiceCIDR, logDir)
	installCalicoCRDs(ctx, t, api.dyn)
	populateCalico(ctx, t, api)
	checkSampleCRDs(ctx, t, etcd)
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	migrated := filepath.Join(dir, "migrated.db")
	pods := calicoNew4 + "," + calicoNew6
	out := run(t, "transform", snap, "--out", migrated, "--pod-network-cidr", pods)
	t.Logf("transform:\n%s", tail(out, 3000))
	if _, left, _ := strings.Cut(out, "Leftovers:"); strings.Contains(left, "projectcalico.org") {
		t.Errorf("the leftover scan still finds old-range addresses in Calico objects:\n%s", left)
	}
	run(t, "verify", migrated, "--pod-network-cidr", pods, "--quiet")
	etcd2 := restoreMember(t, migrated, dir)
	api2 := startAPIServer(ctx, t, bin, etcd2, p, oldServiceCIDR, logDir)
	judgeCalico(ctx, t, api2)
}

// installCalicoCRDs creates Calico's four IPAM CRDs, as published, and
// waits until they are established.
func installCalicoCRDs(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	_, manifests, err := calicocrds.Files()
	if err != nil {
		t.Fatal(err)
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := sigyaml.Unmarshal(m, &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating CRD %s: %v", u.GetName(), err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, plural := range calicoPlural {
		for {
			_, err := dyn.Resource(calicoGVR(plural)).List(ctx, metav1.ListOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not served after 1m: %v", plural, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
}

// populateCalico creates kubeadm-config (the recorded pod range), the
// Nodes with their Calico annotations, calico-node's DaemonSet and the
// Calico objects, all through the API.
func populateCalico(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	c := api.client
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config"},
		Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  dnsDomain: cluster.local\n  podSubnet: " +
			calicoOld4 + "," + calicoOld6 + "\n  serviceSubnet: " + oldServiceCIDR + "\n"}}, metav1.CreateOptions{}))
	for node, tun := range map[string]string{"cp1": "10.244.235.193", "worker-1": "10.244.171.0"} {
		must(c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{
			"projectcalico.org/IPv4Address": "10.0.0.10/24", "projectcalico.org/IPv4VXLANTunnelAddr": tun}}}, metav1.CreateOptions{}))
	}
	labels := map[string]string{"k8s-app": "calico-node"}
	must(c.AppsV1().DaemonSets("kube-system").Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "calico-node"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "calico-node", Image: "docker.io/calico/node:v3.32.1",
				Env: []corev1.EnvVar{{Name: "CALICO_IPV4POOL_CIDR", Value: calicoOld4}, {Name: "CALICO_IPV6POOL_CIDR", Value: calicoOld6}}}}}}}}, metav1.CreateOptions{}))
	for _, o := range calicoObjects("10.244.", "fd00:10:244:0:", calicoOld4, calicoOld6) {
		if _, err := api.dyn.Resource(calicoGVR(calicoPlural[o.GetKind()])).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// judgeCalico reads the migrated state back through the apiserver.
func judgeCalico(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	want := map[string]*unstructured.Unstructured{}
	for _, o := range calicoObjects("10.55.", "fd00:10:55:0:", calicoNew4, calicoNew6) {
		want[o.GetKind()+"/"+o.GetName()] = o
	}
	got := 0
	for kind, plural := range calicoPlural {
		list, err := api.dyn.Resource(calicoGVR(plural)).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing %s: %v", plural, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			got++
			w, ok := want[kind+"/"+o.GetName()]
			if !ok {
				t.Errorf("%s %s is served after the move, but no such object is expected", kind, o.GetName())
				continue
			}
			if fmt.Sprint(o.Object["spec"]) != fmt.Sprint(w.Object["spec"]) {
				t.Errorf("%s %s: spec after the move\n got %v\nwant %v", kind, o.GetName(), o.Object["spec"], w.Object["spec"])
			}
			// The apiserver's validation (schema, CEL) accepts the object.
			o.SetLabels(map[string]string{"snapshift.io/e2e": "validated"})
			if _, err := api.dyn.Resource(calicoGVR(plural)).Update(ctx, o, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s %s: an update after the move is refused: %v", kind, o.GetName(), err)
			}
		}
	}
	if got != len(want) {
		t.Errorf("%d Calico objects served after the move, want %d", got, len(want))
	}
	t.Logf("read back %d Calico objects through kube-apiserver, each at its new name and CIDR", got)
	judgeCalicoRest(ctx, t, api)
}

// judgeCalicoRest checks the pool CIDR is still immutable through the API,
// the Nodes' tunnel addresses and calico-node's environment.
func judgeCalicoRest(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	pools := api.dyn.Resource(calicoGVR("ippools"))
	pool, err := pools.Get(ctx, "default-ipv4-ippool", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(pool.Object, "10.66.0.0/16", "spec", "cidr")
	_, err = pools.Update(ctx, pool, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "CIDR cannot be changed") {
		t.Errorf("changing a pool's CIDR through the API: %v, want Calico's CRD to refuse it", err)
	} else {
		t.Logf("the API still refuses a pool CIDR change: %v", err)
	}
	for node, tun := range map[string]string{"cp1": "10.55.235.193", "worker-1": "10.55.171.0"} {
		n, err := api.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a := n.Annotations; a["projectcalico.org/IPv4VXLANTunnelAddr"] != tun || a["projectcalico.org/IPv4Address"] != "10.0.0.10/24" {
			t.Errorf("node %s annotations %v, want the tunnel address at %s and the node's own address kept", node, a, tun)
		}
	}
	ds, err := api.client.AppsV1().DaemonSets("kube-system").Get(ctx, "calico-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if want := []string{"CALICO_IPV4POOL_CIDR=" + calicoNew4, "CALICO_IPV6POOL_CIDR=" + calicoNew6}; !slices.Equal(env, want) {
		t.Errorf("calico-node env %v, want %v", env, want)
	}
}

// checkSampleCRDs compares the CRDs kube-apiserver stored for Calico's
// manifests with what internal/sample stores for the same manifests: the
// spec and the status' names and versions must be the same bytes (the
// sample's storage form of a CRD is only as real as this comparison).
func checkSampleCRDs(ctx context.Context, t *testing.T, etcd *etcdtest.Server) {
	t.Helper()
	entries, err := sample.Objects()
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		APIVersion string          `json:"apiVersion"`
		Spec       json.RawMessage `json:"spec"`
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Key, ".crd.projectcalico.org") {
			continue
		}
		resp, err := etcd.Client().Get(ctx, e.Key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: not stored by kube-apiserver (%v)", e.Key, err)
		}
		var real, ours stored
		if err := json.Unmarshal(resp.Kvs[0].Value, &real); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(e.Value, &ours); err != nil {
			t.Fatal(err)
		}
		if real.APIVersion != ours.APIVersion || !bytes.Equal(real.Spec, ours.Spec) {
			t.Errorf("%s: the sample stores\n%s %s\nkube-apiserver stores\n%s %s", e.Key, ours.APIVersion, ours.Spec, real.APIVersion, real.Spec)
		}
		n++
	}
	if n != 4 {
		t.Errorf("compared %d Calico CRDs with the sample's, want 4", n)
	}
}
