package app

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	k3sfixtures "github.com/snapshift/snapshift/internal/k3sfixtures"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/snapshot"
)

// k3sCorpus writes the k3s (or RKE2) corpus to a real embedded etcd, saves it as etcdctl (and k3s's
// snapshotv3.Save) does, and compresses it as k3s's --etcd-snapshot-compress does, under k3s's
// names: <root>/server/db/snapshots/etcd-snapshot-server-1-<unix>.zip.
func k3sCorpus(t *testing.T, program string, extra ...sample.Entry) (zipPath, root string) {
	t.Helper()
	srv := etcdtest.StartT(t)
	if err := sample.WriteK3s(t.Context(), srv, program); err != nil {
		t.Fatal(err)
	}
	for _, e := range extra {
		if _, err := srv.Put(t.Context(), e.Key, e.Value); err != nil {
			t.Fatal(err)
		}
	}
	root = t.TempDir()
	snaps := filepath.Join(root, "server", "db", "snapshots")
	if err := os.MkdirAll(snaps, 0o700); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := srv.SaveSnapshot(t.Context(), plain); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	const name = "etcd-snapshot-server-1-1764000000"
	zipPath = filepath.Join(snaps, name+".zip")
	if err := os.WriteFile(zipPath, k3sZip(t, name, data), 0o600); err != nil {
		t.Fatal(err)
	}
	return zipPath, root
}

// unzipped returns the live keys of a compressed snapshot.
func unzipped(t *testing.T, path string) map[string]snapshot.KV {
	t.Helper()
	u, err := snapshot.Unzip(path, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	live, _ := liveState(t, u.Path)
	return live
}

// wranglerApplied decodes objectset.rio.cattle.io/applied as wrangler's appliedFromAnnotation does
// (rancher/wrangler pkg/apply/desiredset_compare.go): plain JSON if it starts with "{", else
// base64.RawStdEncoding, then gzip. Written here from the source, independently of the rule's codec.
func wranglerApplied(t *testing.T, s string) map[string]any {
	t.Helper()
	b := []byte(s)
	if !strings.HasPrefix(s, "{") {
		raw, err := base64.RawStdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("applied annotation: %v", err)
		}
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("applied annotation: %v", err)
		}
		if b, err = io.ReadAll(r); err != nil {
			t.Fatalf("applied annotation: %v", err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("applied annotation: %v", err)
	}
	return m
}

func decodeKV[T any](t *testing.T, live map[string]snapshot.KV, key string) T {
	t.Helper()
	kv, ok := live[key]
	if !ok {
		t.Fatalf("%s: not in the output", key)
	}
	o, err := codec.New().Decode(kv.Value)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	v, ok := o.Obj.(T)
	if !ok {
		t.Fatalf("%s: %T", key, o.Obj)
	}
	return v
}

var seedFlags = []string{"--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16"}

// TestK3sSeedMigration is the seed migration of a compressed k3s snapshot: inspect names k3s and the
// ranges' sources, plan carries the k3s runbook, transform writes a compressed snapshot that verify
// accepts, /bootstrap and k3s/apiaddresses are carried byte for byte, CoreDNS's Service is where
// k3s's template renders it with the new --cluster-dns default, and wrangler's applied copy agrees.
func TestK3sSeedMigration(t *testing.T) {
	in, root := k3sCorpus(t, "k3s")
	r := run(t, "inspect", in, "--quiet")
	for _, want := range []string{"Distribution: k3s", "found by: Node server-1 annotation k3s.io/node-args", "key /bootstrap/2a5f07c1d93b (bootstrap data)",
		"10.43.0.0/16", "k3s default: no --service-cidr in k3s.io/node-args of servers server-1, server-2",
		"10.42.0.0/16", "k3s default: no --cluster-cidr in k3s.io/node-args of servers server-1, server-2",
		"servers: server-1, server-2", "agents: agent-1"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("inspect: exit %d, want %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	t.Logf("inspect:\n%s", r.stdout)
	r = run(t, append([]string{"plan", in, "--quiet"}, seedFlags...)...)
	for _, want := range []string{"k3s runbook 2: in /etc/rancher/k3s/config.yaml of EVERY server (server-1, server-2) set service-cidr: 172.24.0.0/16, cluster-cidr: 10.55.0.0/16",
		"--cluster-reset --cluster-reset-restore-path=", "dynamic-cert-regenerate", "re-renders CoreDNS at cluster DNS 172.24.0.10"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("plan: exit %d, want %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	out := filepath.Join(filepath.Dir(in), "etcd-snapshot-migrated-1764000001.zip")
	r = run(t, append([]string{"transform", in, "--out", out, "--quiet"}, seedFlags...)...)
	if r.code != 0 {
		t.Fatalf("transform: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if z, err := zip.OpenReader(out); err != nil || len(z.File) != 1 || z.File[0].Name != "etcd-snapshot-migrated-1764000001" {
		t.Fatalf("output is not a k3s zip with one entry named after it: %v", err)
	}
	if r = run(t, append([]string{"verify", out, "--quiet"}, seedFlags...)...); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	before, after := unzipped(t, in), unzipped(t, out)
	for _, k := range []string{sample.K3sBootstrapKey, "k3s/apiaddresses"} {
		if !bytes.Equal(before[k].Value, after[k].Value) || after[k].ModRevision != before[k].ModRevision {
			t.Errorf("%s: not carried byte for byte at its revision", k)
		}
	}
	dns := decodeKV[*corev1.Service](t, after, "/registry/services/specs/kube-system/kube-dns")
	var rendered corev1.Service
	if err := sigyaml.UnmarshalStrict([]byte(k3sfixtures.RenderCoreDNSService("172.24.0.10")), &rendered); err != nil {
		t.Fatal(err)
	}
	if dns.Spec.ClusterIP != rendered.Spec.ClusterIP || strings.Join(dns.Spec.ClusterIPs, ",") != strings.Join(rendered.Spec.ClusterIPs, ",") {
		t.Errorf("kube-dns at %s %v; k3s's template renders %s %v with the new --cluster-dns default", dns.Spec.ClusterIP, dns.Spec.ClusterIPs, rendered.Spec.ClusterIP, rendered.Spec.ClusterIPs)
	}
	applied := wranglerApplied(t, dns.Annotations["objectset.rio.cattle.io/applied"])
	spec := applied["spec"].(map[string]any)
	if spec["clusterIP"] != "172.24.0.10" || spec["clusterIPs"].([]any)[0] != "172.24.0.10" {
		t.Errorf("wrangler's applied copy holds clusterIP %v %v, want 172.24.0.10: k3s's next apply would patch the Service back", spec["clusterIP"], spec["clusterIPs"])
	}
	// What wrangler writes when k3s re-applies the template with the new --cluster-dns default is,
	// byte for byte, the annotation the rule wrote: the re-apply's patch is empty.
	desired, err := sample.K3sCoreDNSDesired("172.24.0.10")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := sample.WranglerApplied(desired); dns.Annotations["objectset.rio.cattle.io/applied"] != want {
		t.Errorf("the rewritten applied annotation is not what wrangler writes for the re-rendered Service:\n got %s\nwant %s", dns.Annotations["objectset.rio.cattle.io/applied"], want)
	}
	node := decodeKV[*corev1.Node](t, after, "/registry/minions/agent-1")
	if node.Spec.PodCIDR != "10.55.2.0/24" {
		t.Errorf("agent-1 podCIDR %s, want 10.55.2.0/24", node.Spec.PodCIDR)
	}
	if _, err := os.Stat(filepath.Join(root, "server", "db", ".metadata")); err == nil {
		t.Errorf("a .metadata sidecar appeared though the input had none")
	}
}

// TestK3sKeptDNSRefused: a plan that keeps CoreDNS's Service at its old address is refused, since
// k3s re-renders it at the tenth address of the new range at start.
func TestK3sKeptDNSRefused(t *testing.T) {
	in, _ := k3sCorpus(t, "k3s")
	r := run(t, append([]string{"plan", in, "--quiet", "--keep-service-ip", "kube-system/kube-dns"}, seedFlags...)...)
	if r.code != ExitRefused || !strings.Contains(r.stderr, "re-renders CoreDNS's Service at 172.24.0.10") {
		t.Fatalf("plan keeping kube-dns: exit %d, want %d and the CoreDNS refusal:\n%s", r.code, ExitRefused, r.stderr)
	}
}

// TestRKE2SeedMigration: RKE2's injected chart values, the HelmChartConfig's pool and the applied
// copies move; inspect names RKE2.
func TestRKE2SeedMigration(t *testing.T) {
	in, _ := k3sCorpus(t, "rke2")
	r := run(t, "inspect", in, "--quiet")
	for _, want := range []string{"Distribution: rke2", "annotation rke2.io/node-args", "HelmChart kube-system/rke2-coredns annotated rke2.cattle.io/inject-cluster-config",
		"HelmChart kube-system/rke2-canal spec.set global.serviceCIDR"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("inspect: exit %d, want %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	out := filepath.Join(t.TempDir(), "migrated.zip")
	if r = run(t, append([]string{"transform", in, "--out", out, "--quiet"}, seedFlags...)...); r.code != 0 {
		t.Fatalf("transform: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = run(t, append([]string{"verify", out, "--quiet"}, seedFlags...)...); r.code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := unzipped(t, out)
	hc := decodeKV[*unstructured.Unstructured](t, after, "/registry/helm.cattle.io/helmcharts/kube-system/rke2-coredns")
	set, _, _ := unstructured.NestedMap(hc.Object, "spec", "set")
	want := map[string]string{"global.clusterCIDR": "10.55.0.0/16", "global.clusterCIDRv4": "10.55.0.0/16", "global.clusterCIDRv6": "",
		"global.serviceCIDR": "172.24.0.0/16", "global.clusterDNS": "172.24.0.10", "global.rke2DataDir": "/var/lib/rancher/rke2"}
	for k, v := range want {
		if set[k] != v {
			t.Errorf("spec.set[%s] = %v, want %q", k, set[k], v)
		}
	}
	appliedSet := wranglerApplied(t, hc.GetAnnotations()["objectset.rio.cattle.io/applied"])["spec"].(map[string]any)["set"].(map[string]any)
	if appliedSet["global.clusterDNS"] != "172.24.0.10" || appliedSet["global.serviceCIDR"] != "172.24.0.0/16" {
		t.Errorf("the applied copy of spec.set was not moved: %v", appliedSet)
	}
	hcc := decodeKV[*unstructured.Unstructured](t, after, "/registry/helm.cattle.io/helmchartconfigs/kube-system/rke2-canal")
	vc, _, _ := unstructured.NestedString(hcc.Object, "spec", "valuesContent")
	if wantVC := "# the operator's overrides\nflannel:\n  iface: \"eth1\"   # the private NIC\ncalico:\n  ipv4pool:\n    cidr: 10.55.0.0/16\n  vethuMTU: 1450\n"; vc != wantVC {
		t.Errorf("valuesContent:\n%s\nwant (every other byte kept):\n%s", vc, wantVC)
	}
}

// TestK3sWithAnRKE2Chart: the Nodes' node-args annotations decide the distribution. A k3s cluster
// that holds one HelmChart annotated rke2.cattle.io/inject-cluster-config (copied from an RKE2
// cluster) is k3s, with the chart listed as evidence, and migrates: its node-args are mapped
// (issue 35: it was reported as RKE2, the node-args rule mapped nothing and transform's own
// check refused the output, exit 5).
func TestK3sWithAnRKE2Chart(t *testing.T) {
	chart := `{"apiVersion":"helm.cattle.io/v1","kind":"HelmChart","metadata":{"name":"copied-chart","namespace":"kube-system",` +
		`"uid":"7d1c0b7e-0000-4000-8000-000000000001","annotations":{"rke2.cattle.io/inject-cluster-config":"true"}},` +
		`"spec":{"chart":"copied","set":{"global.clusterCIDR":"10.42.0.0/16","global.serviceCIDR":"10.43.0.0/16","global.clusterDNS":"10.43.0.10"}}}`
	in, _ := k3sCorpus(t, "k3s", sample.Entry{Key: "/registry/helm.cattle.io/helmcharts/kube-system/copied-chart", Value: []byte(chart + "\n")})
	r := run(t, "inspect", in, "--quiet")
	for _, want := range []string{"Distribution: k3s", "found by: Node server-1 annotation k3s.io/node-args",
		"HelmChart kube-system/copied-chart annotated rke2.cattle.io/inject-cluster-config"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("inspect: exit %d, want %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	out := filepath.Join(t.TempDir(), "migrated.zip")
	if r = run(t, append([]string{"transform", in, "--out", out, "--quiet"}, seedFlags...)...); r.code != 0 {
		t.Fatalf("transform: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	node := decodeKV[*corev1.Node](t, unzipped(t, out), "/registry/minions/server-1")
	if args := node.Annotations["k3s.io/node-args"]; !strings.Contains(args, "172.24.0.0/16") || !strings.Contains(args, "10.55.0.0/16") {
		t.Errorf("server-1's k3s.io/node-args after the migration: %s", args)
	}
}
