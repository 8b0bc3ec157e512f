//go:build e2e

package e2e

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/etcdtest"
	k3sfixtures "github.com/snapshift/snapshift/internal/k3sfixtures"
	"github.com/snapshift/snapshift/internal/sample"
)

const (
	k3sOldService = "10.43.0.0/16"
	k3sOldPod     = "10.42.0.0/16"
	k3sNewService = "172.24.0.0/16"
	k3sNewPod     = "10.55.0.0/16"
)

var (
	addonsGVR     = schema.GroupVersionResource{Group: "k3s.cattle.io", Version: "v1", Resource: "addons"}
	helmChartsGVR = schema.GroupVersionResource{Group: "helm.cattle.io", Version: "v1", Resource: "helmcharts"}
	helmConfigGVR = schema.GroupVersionResource{Group: "helm.cattle.io", Version: "v1", Resource: "helmchartconfigs"}
)

// TestK3s: a k3s and an RKE2 cluster state made through a real kube-apiserver (k3s's ranges, the
// node annotations pkg/nodeconfig writes, CoreDNS rendered from k3s's template and applied with
// wrangler's annotation, the Addon/HelmChart/HelmChartConfig custom resources, /bootstrap and
// <program>/apiaddresses written into etcd as k3s writes them), saved and zipped as k3s zips its
// snapshots, is migrated compressed-in compressed-out with the seed ranges, restored from the zip,
// and served by a real kube-apiserver and kube-controller-manager with the new ranges.
func TestK3s(t *testing.T) {
	for _, program := range []string{"k3s", "rke2"} {
		t.Run(program, func(t *testing.T) { testK3s(t, program) })
	}
}

func testK3s(t *testing.T, program string) {
	bin := binDir(t, versions()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)
	p := newPKI(t, dir)

	etcd := etcdtest.StartT(t)
	api := startAPIServer(ctx, t, bin, etcd, p, k3sOldService, logDir)
	populateK3s(ctx, t, api, program)
	for _, kv := range [][2]string{{sample.K3sBootstrapKey, string(sample.K3sBootstrapValue)},
		{program + "/apiaddresses", `["192.168.56.11:6443"]` + "\n"}} {
		if _, err := etcd.Put(ctx, kv[0], []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	plain := filepath.Join(dir, "plain")
	if err := etcd.SaveSnapshot(ctx, plain); err != nil {
		t.Fatal(err)
	}
	api.stop()
	etcd.Close()
	snaps := filepath.Join(dir, "server", "db", "snapshots")
	os.MkdirAll(snaps, 0o700)
	in := filepath.Join(snaps, "etcd-snapshot-server-1-1764000000.zip")
	zipAsK3s(t, plain, in)

	insp := run(t, "inspect", in, "--quiet")
	t.Logf("[%s] inspect:\n%s", program, insp)
	for _, want := range []string{"Distribution: " + program, "k3s default: no --service-cidr in " + program + ".io/node-args", k3sOldPod} {
		if !strings.Contains(insp, want) {
			t.Errorf("[%s] FAIL inspect does not say %q", program, want)
		}
	}
	seed := []string{"--service-cidr", k3sNewService, "--pod-network-cidr", k3sNewPod}
	out := filepath.Join(snaps, "etcd-snapshot-migrated-1764000001.zip")
	t.Logf("[%s] transform:\n%s", program, run(t, append([]string{"transform", in, "--out", out, "--quiet"}, seed...)...))
	run(t, append([]string{"verify", out, "--quiet"}, seed...)...)
	etcd2 := restoreMember(t, out, dir) // restore reads the zip too
	api2 := startAPIServer(ctx, t, bin, etcd2, p, k3sNewService, logDir)
	kcm := startKCM(t, bin, api2, p, k3sNewService, k3sNewPod, logDir)
	judgeK3s(ctx, t, api2, program)
	checkRaw(ctx, t, etcd2, program)
	time.Sleep(10 * time.Second)
	if exited, err := kcm.exited(); exited {
		t.Errorf("[%s] FAIL kube-controller-manager exited with the new ranges: %v\n%s", program, err, tail(kcm.logText(), 3000))
	}
	if strings.Contains(kcm.logText(), "not in the cluster CIDR") || strings.Contains(api2.logText(), "is not within any service CIDR") {
		t.Errorf("[%s] FAIL an object is outside the new ranges:\n%s", program, tail(kcm.logText()+api2.logText(), 3000))
	}
}

// zipAsK3s compresses a snapshot as k3s's compressSnapshot does: one Deflate entry named after the
// zip without ".zip", its header from the plain file's FileInfo.
func zipAsK3s(t *testing.T, plain, dst string) {
	t.Helper()
	f, err := os.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	h, err := zip.FileInfoHeader(st)
	if err != nil {
		t.Fatal(err)
	}
	h.Name, h.Method, h.Modified = strings.TrimSuffix(filepath.Base(dst), ".zip"), zip.Deflate, time.Unix(1764000000, 0)
	zf, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, f)
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = zf.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// crdFor is a CustomResourceDefinition for one of k3s's and helm-controller's kinds. Neither
// publishes its CRDs as YAML (k3s-io/helm-controller and k3s-io/api generate them in Go); these
// carry their group, version, kind, plural and scope, with a schema that keeps every field.
func crdFor(group, kind, plural string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
}

func populateK3s(ctx context.Context, t *testing.T, api *apiserver, program string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, c := range []*unstructured.Unstructured{crdFor("k3s.cattle.io", "Addon", "addons"), crdFor("helm.cattle.io", "HelmChart", "helmcharts"),
		crdFor("helm.cattle.io", "HelmChartConfig", "helmchartconfigs")} {
		_, err := api.dyn.Resource(crdGVR).Create(ctx, c, metav1.CreateOptions{})
		must(err)
	}
	c := api.client.CoreV1()
	for _, ns := range []string{"kube-system", "demo"} {
		_, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		must(err)
	}
	for _, n := range sample.K3sNodes(program) {
		args, _ := json.Marshal(n.Args)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Annotations: map[string]string{
			program + ".io/node-args": string(args), program + ".io/node-env": `{"` + strings.ToUpper(program) + `_TOKEN":"********"}`,
			"flannel.alpha.coreos.com/kube-subnet-manager": "true", "flannel.alpha.coreos.com/backend-type": "vxlan"}},
			Spec: corev1.NodeSpec{PodCIDR: n.PodCIDR, PodCIDRs: []string{n.PodCIDR}}}
		_, err := c.Nodes().Create(ctx, node, metav1.CreateOptions{})
		must(err)
	}
	var svc corev1.Service
	must(sigyaml.UnmarshalStrict([]byte(k3sfixtures.RenderCoreDNSService(sample.K3sClusterDNS)), &svc))
	var desired map[string]any
	must(sigyaml.Unmarshal([]byte(k3sfixtures.RenderCoreDNSService(sample.K3sClusterDNS)), &desired))
	applied, err := sample.WranglerApplied(desired)
	must(err)
	svc.Annotations["objectset.rio.cattle.io/applied"] = applied
	svc.Annotations["objectset.rio.cattle.io/owner-gvk"] = "k3s.cattle.io/v1, Kind=Addon"
	svc.Annotations["objectset.rio.cattle.io/owner-name"] = "coredns"
	_, err = c.Services("kube-system").Create(ctx, &svc, metav1.CreateOptions{})
	must(err)
	_, err = c.Services("demo").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.43.201.9", Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	must(err)
	waitServed(ctx, t, api, helmChartsGVR)
	waitServed(ctx, t, api, addonsGVR)
	_, err = api.dyn.Resource(addonsGVR).Namespace("kube-system").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k3s.cattle.io/v1", "kind": "Addon", "metadata": map[string]any{"name": "coredns", "namespace": "kube-system"},
		"spec": map[string]any{"source": "/var/lib/rancher/" + program + "/server/manifests/coredns.yaml", "checksum": "0f1e"}}}, metav1.CreateOptions{})
	must(err)
	if program == "rke2" {
		populateRKE2Charts(ctx, t, api, must)
	}
}

func populateRKE2Charts(ctx context.Context, t *testing.T, api *apiserver, must func(error)) {
	t.Helper()
	set := map[string]any{"global.clusterCIDR": k3sOldPod, "global.clusterCIDRv4": k3sOldPod, "global.clusterCIDRv6": "",
		"global.clusterDNS": sample.K3sClusterDNS, "global.serviceCIDR": k3sOldService, "global.clusterDomain": "cluster.local"}
	desired := map[string]any{"apiVersion": "helm.cattle.io/v1", "kind": "HelmChart",
		"metadata": map[string]any{"name": "rke2-coredns", "namespace": "kube-system", "annotations": map[string]any{"rke2.cattle.io/inject-cluster-config": "true"}},
		"spec":     map[string]any{"chart": "rke2-coredns", "bootstrap": true, "set": set}}
	applied, err := sample.WranglerApplied(desired)
	must(err)
	hc := &unstructured.Unstructured{Object: desired}
	hc.SetAnnotations(map[string]string{"rke2.cattle.io/inject-cluster-config": "true", "objectset.rio.cattle.io/applied": applied})
	_, err = api.dyn.Resource(helmChartsGVR).Namespace("kube-system").Create(ctx, hc, metav1.CreateOptions{})
	must(err)
	waitServed(ctx, t, api, helmConfigGVR)
	_, err = api.dyn.Resource(helmConfigGVR).Namespace("kube-system").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.cattle.io/v1", "kind": "HelmChartConfig", "metadata": map[string]any{"name": "rke2-canal", "namespace": "kube-system"},
		"spec": map[string]any{"valuesContent": "calico:\n  ipv4pool:\n    cidr: 10.42.0.0/16   # the pods\n"}}}, metav1.CreateOptions{})
	must(err)
}

func waitServed(ctx context.Context, t *testing.T, api *apiserver, gvr schema.GroupVersionResource) {
	t.Helper()
	for range 100 {
		if _, err := api.dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s is not served after 10s", gvr)
}

// judgeK3s reads the migrated cluster back through the new kube-apiserver.
func judgeK3s(ctx context.Context, t *testing.T, api *apiserver, program string) {
	t.Helper()
	c := api.client.CoreV1()
	dns, err := c.Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rendered corev1.Service
	if err := sigyaml.UnmarshalStrict([]byte(k3sfixtures.RenderCoreDNSService("172.24.0.10")), &rendered); err != nil {
		t.Fatal(err)
	}
	if dns.Spec.ClusterIP != rendered.Spec.ClusterIP || strings.Join(dns.Spec.ClusterIPs, ",") != strings.Join(rendered.Spec.ClusterIPs, ",") {
		t.Errorf("[%s] FAIL kube-dns is at %v; k3s's template with the new --cluster-dns default renders %v", program, dns.Spec.ClusterIPs, rendered.Spec.ClusterIPs)
	}
	if got := appliedSpec(t, dns.Annotations["objectset.rio.cattle.io/applied"])["clusterIP"]; got != "172.24.0.10" {
		t.Errorf("[%s] FAIL wrangler's applied copy of kube-dns says clusterIP %v", program, got)
	}
	if k, err := c.Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil || k.Spec.ClusterIP != "172.24.0.1" {
		t.Errorf("[%s] FAIL default/kubernetes: %v %v", program, k.Spec.ClusterIP, err)
	}
	created, err := c.Services("demo").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "demo"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil || !strings.HasPrefix(created.Spec.ClusterIP, "172.24.") {
		t.Errorf("[%s] FAIL a new Service is not given a new-range address: %v", program, err)
	}
	nodes, err := c.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if !strings.HasPrefix(n.Spec.PodCIDR, "10.55.") {
			t.Errorf("[%s] FAIL node %s podCIDR %s", program, n.Name, n.Spec.PodCIDR)
		}
	}
	if program != "rke2" {
		return
	}
	hc, err := api.dyn.Resource(helmChartsGVR).Namespace("kube-system").Get(ctx, "rke2-coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set, _, _ := unstructured.NestedMap(hc.Object, "spec", "set")
	if set["global.clusterDNS"] != "172.24.0.10" || set["global.serviceCIDR"] != k3sNewService || set["global.clusterCIDR"] != k3sNewPod {
		t.Errorf("[%s] FAIL rke2-coredns spec.set not moved: %v", program, set)
	}
	if s := appliedSpec(t, hc.GetAnnotations()["objectset.rio.cattle.io/applied"])["set"].(map[string]any); s["global.clusterDNS"] != "172.24.0.10" {
		t.Errorf("[%s] FAIL the applied copy of rke2-coredns spec.set not moved: %v", program, s)
	}
	hcc, err := api.dyn.Resource(helmConfigGVR).Namespace("kube-system").Get(ctx, "rke2-canal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if vc, _, _ := unstructured.NestedString(hcc.Object, "spec", "valuesContent"); vc != "calico:\n  ipv4pool:\n    cidr: 10.55.0.0/16   # the pods\n" {
		t.Errorf("[%s] FAIL HelmChartConfig valuesContent: %q", program, vc)
	}
}

// appliedSpec decodes wrangler's applied annotation as wrangler's appliedFromAnnotation does and
// returns its spec.
func appliedSpec(t *testing.T, s string) map[string]any {
	t.Helper()
	raw, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m["spec"].(map[string]any)
}

// checkRaw reads the keys outside /registry from the restored member: carried byte for byte.
func checkRaw(ctx context.Context, t *testing.T, etcd *etcdtest.Server, program string) {
	t.Helper()
	resp, err := etcd.Client().Get(ctx, sample.K3sBootstrapKey)
	if err != nil || len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, sample.K3sBootstrapValue) {
		t.Errorf("[%s] FAIL /bootstrap not carried byte for byte: %v", program, err)
	}
	resp, err = etcd.Client().Get(ctx, program+"/apiaddresses")
	if err != nil || len(resp.Kvs) != 1 {
		t.Errorf("[%s] FAIL %s/apiaddresses missing: %v", program, program, err)
	}
}
