//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/etcdtest"
)

var (
	crdGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ciliumNodesGVR = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnodes"}
)

// TestCiliumClusterPool: a cluster on Cilium cluster-pool IPAM, made through
// a real kube-apiserver with Cilium's own CiliumNode CRD
// (testdata/crds/cilium), is migrated to a new pod network; a real
// kube-apiserver on the restored result serves the moved CiliumNodes and
// cilium-config, and accepts an update of a moved CiliumNode (its
// structural-schema validation judges what snapshift wrote).
func TestCiliumClusterPool(t *testing.T) {
	bin := binDir(t, versions()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)
	p := newPKI(t, dir)

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, p, oldServiceCIDR, logDir)
	populateCilium(ctx, t, api)
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()

	migrated := filepath.Join(dir, "migrated.db")
	out := run(t, "transform", snap, "--out", migrated, "--pod-network-cidr", newPodCIDR, "--quiet")
	t.Logf("[cilium] transform:\n%s", out)
	if !strings.Contains(out, "that no rule moves:\n  none\n") {
		t.Errorf("[cilium] FAIL the leftover scan finds old-range addresses after the move")
	}
	etcd2 := restoreMember(t, migrated, dir)
	api2 := startAPIServer(ctx, t, bin, etcd2, p, oldServiceCIDR, logDir)
	judgeCilium(ctx, t, api2)
}

// ciliumNodes are the CiliumNodes the source cluster holds, as
// cilium-operator and the agents write them: w1's pod CIDR is its Node's,
// w2's is another one the operator handed out.
var ciliumNodes = []struct {
	name, nodeCIDR, podCIDR, internal, router, health string
}{
	{"w1", "10.244.1.0/24", "10.244.1.0/24", "192.168.10.11", "10.244.1.181", "10.244.1.42"},
	{"w2", "10.244.2.0/24", "10.244.7.0/24", "192.168.10.12", "10.244.7.12", "10.244.7.200"},
}

func populateCilium(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	b := repoFile(t, "testdata", "crds", "cilium", "ciliumnodes.yaml")
	crd := &unstructured.Unstructured{}
	must(sigyaml.Unmarshal(b, &crd.Object))
	_, err := api.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	must(err)
	c := api.client.CoreV1()
	_, err = c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, metav1.CreateOptions{})
	must(err)
	_, err = c.ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubeadm-config"},
		Data: map[string]string{"ClusterConfiguration": "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: " + oldPodCIDR + "\n  serviceSubnet: " + oldServiceCIDR + "\n"}},
		metav1.CreateOptions{})
	must(err)
	_, err = c.ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium-config"},
		Data: map[string]string{"ipam": "cluster-pool", "cluster-pool-ipv4-cidr": oldPodCIDR, "cluster-pool-ipv4-mask-size": "24", "routing-mode": "tunnel"}},
		metav1.CreateOptions{})
	must(err)
	waitEstablished(ctx, t, api)
	for _, n := range ciliumNodes {
		node, err := c.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Spec: corev1.NodeSpec{PodCIDR: n.nodeCIDR, PodCIDRs: []string{n.nodeCIDR}}}, metav1.CreateOptions{})
		must(err)
		cn := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cilium.io/v2", "kind": "CiliumNode",
			"metadata": map[string]any{"name": n.name, "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Node", "name": n.name, "uid": string(node.UID)}}},
			"spec": map[string]any{
				"addresses": []any{map[string]any{"ip": n.internal, "type": "InternalIP"}, map[string]any{"ip": n.router, "type": "CiliumInternalIP"}},
				"health":    map[string]any{"ipv4": n.health},
				"ipam":      map[string]any{"podCIDRs": []any{n.podCIDR}},
			},
		}}
		created, err := api.dyn.Resource(ciliumNodesGVR).Create(ctx, cn, metav1.CreateOptions{})
		must(err)
		created.Object["status"] = map[string]any{"ipam": map[string]any{"pod-cidrs": map[string]any{n.podCIDR: map[string]any{"status": "in-use"}}}}
		_, err = api.dyn.Resource(ciliumNodesGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		must(err)
	}
}

func waitEstablished(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	for range 100 {
		if _, err := api.dyn.Resource(ciliumNodesGVR).List(ctx, metav1.ListOptions{}); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the CiliumNode CRD is not served after 10s")
}

// judgeCilium reads the migrated state back through the new apiserver.
func judgeCilium(ctx context.Context, t *testing.T, api *apiserver) {
	cm, err := api.client.CoreV1().ConfigMaps("kube-system").Get(ctx, "cilium-config", metav1.GetOptions{})
	if err != nil || cm.Data["cluster-pool-ipv4-cidr"] != newPodCIDR || cm.Data["cluster-pool-ipv4-mask-size"] != "24" {
		t.Errorf("[cilium] FAIL cilium-config: %v %v", err, cm.Data)
	} else {
		t.Logf("[cilium] PASS cilium-config cluster-pool-ipv4-cidr %s, mask size 24 kept", newPodCIDR)
	}
	want := map[string][4]string{ // podCIDR, CiliumInternalIP, health, InternalIP
		"w1": {"10.55.1.0/24", "10.55.1.181", "10.55.1.42", "192.168.10.11"},
		"w2": {"10.55.7.0/24", "10.55.7.12", "10.55.7.200", "192.168.10.12"},
	}
	list, err := api.dyn.Resource(ciliumNodesGVR).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != len(want) {
		t.Fatalf("[cilium] FAIL listing CiliumNodes: %v (%d)", err, len(list.Items))
	}
	for _, cn := range list.Items {
		w := want[cn.GetName()]
		cidrs, _, _ := unstructured.NestedStringSlice(cn.Object, "spec", "ipam", "podCIDRs")
		health, _, _ := unstructured.NestedString(cn.Object, "spec", "health", "ipv4")
		statusCIDRs, _, _ := unstructured.NestedMap(cn.Object, "status", "ipam", "pod-cidrs")
		addrs, _, _ := unstructured.NestedSlice(cn.Object, "spec", "addresses")
		var got []string
		for _, a := range addrs {
			m := a.(map[string]any)
			got = append(got, fmt.Sprint(m["type"], "=", m["ip"]))
		}
		_, inStatus := statusCIDRs[w[0]]
		if !slices.Equal(cidrs, []string{w[0]}) || health != w[2] || !inStatus ||
			!slices.Equal(got, []string{"InternalIP=" + w[3], "CiliumInternalIP=" + w[1]}) {
			t.Errorf("[cilium] FAIL CiliumNode %s: podCIDRs %v, health %s, status pod-cidrs %v, addresses %v; want %v", cn.GetName(), cidrs, health, statusCIDRs, got, w)
			continue
		}
		t.Logf("[cilium] PASS CiliumNode %s: podCIDRs %v, CiliumInternalIP %s, health %s, status pod-cidrs moved, InternalIP %s kept", cn.GetName(), cidrs, w[1], w[2], w[3])
		// The apiserver validates an update against Cilium's schema.
		cn.SetLabels(map[string]string{"e2e": "updated"})
		if _, err := api.dyn.Resource(ciliumNodesGVR).Update(ctx, &cn, metav1.UpdateOptions{FieldValidation: "Strict"}); err != nil {
			t.Errorf("[cilium] FAIL updating the migrated CiliumNode %s (strict field validation): %v", cn.GetName(), err)
		} else {
			t.Logf("[cilium] PASS the apiserver accepts an update of the migrated CiliumNode %s with strict field validation", cn.GetName())
		}
	}
}
