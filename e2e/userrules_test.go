//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
)

// The rules file of TestUserRules: MetalLB's pool (a custom resource), a
// Corefile in a ConfigMap and a Deployment's env move from 10.0.100.0/24
// to 172.30.10.0/24.
const e2eRules = `apiVersion: snapshift.io/v1alpha1
kind: RuleSet
addressMap:
- {from: 10.0.100.0/24, to: 172.30.10.0/24}
rules:
- name: metallb-pool
  match: {resource: ipaddresspools.metallb.io, namespaces: [metallb-system]}
  mapAddresses: [/spec/addresses]
  patch: [{op: add, path: /spec/avoidBuggyIPs, value: true}]
- name: forwarder
  match: {resource: configmaps, namespaces: [demo], names: [dns-forwarder]}
  mapAddresses: [/data/Corefile]
- name: resolver-env
  match: {resource: deployments, namespaces: [demo], names: [resolver]}
  mapAddresses: [/spec/template/spec/containers]
`

// TestUserRules: objects stored as kube-apiserver stores them (MetalLB's
// real CRD and a pool as JSON, a ConfigMap and a Deployment as protobuf)
// are migrated with a rules file; the real kube-apiserver, started once on
// the restored data, serves the mapped values.
func TestUserRules(t *testing.T) {
	ver := versions()[0]
	bin := binDir(t, ver)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)

	etcd := etcdtest.StartT(t)
	for key, value := range userRulesObjects(t) {
		if _, err := etcd.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(dir, "source.db")
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	etcd.Close()

	rulesPath := filepath.Join(dir, "rules.yaml")
	write(t, rulesPath, []byte(e2eRules), 0o644)
	migrated := filepath.Join(dir, "migrated.db")
	run(t, "transform", snap, "--out", migrated, "--rules", rulesPath, "--quiet")
	run(t, "verify", migrated, "--rules", rulesPath, "--quiet")
	etcd2 := restoreMember(t, migrated, dir)

	api := startAPIServer(ctx, t, bin, etcd2, newPKI(t, dir), "10.96.0.0/12", logDir)
	judgeUserRules(ctx, t, api)
}

func judgeUserRules(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}
	var spec map[string]any
	deadline := time.Now().Add(time.Minute) // the CRD is established by the apiserver's controllers
	for {
		pool, err := api.dyn.Resource(gvr).Namespace("metallb-system").Get(ctx, "default-pool", metav1.GetOptions{})
		if err == nil {
			spec, _ = pool.Object["spec"].(map[string]any)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("IPAddressPool not served: %v", err)
		}
		time.Sleep(time.Second)
	}
	if got := fmt.Sprint(spec["addresses"]); got != "[172.30.10.10-172.30.10.60 172.30.10.128/26]" || spec["avoidBuggyIPs"] != true {
		t.Errorf("IPAddressPool spec through the API: %v", spec)
	}
	cm, err := api.client.CoreV1().ConfigMaps("demo").Get(ctx, "dns-forwarder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cm.Data["Corefile"]; !strings.Contains(c, "forward . 172.30.10.53 1.1.1.1") || strings.Contains(c, "10.0.100.") {
		t.Errorf("Corefile through the API:\n%s", c)
	}
	d, err := api.client.AppsV1().Deployments("demo").Get(ctx, "resolver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Value != "172.30.10.53:53" {
		t.Errorf("Deployment env through the API: %v", env)
	}
}

// userRulesObjects are the source keys, encoded as kube-apiserver stores
// them.
func userRulesObjects(t *testing.T) map[string][]byte {
	t.Helper()
	created := metav1.NewTime(time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC))
	crdYAML := repoFile(t, "testdata", "crds", "metallb", "metallb.io_ipaddresspools.yaml")
	var crd map[string]any
	if err := yaml.Unmarshal(crdYAML, &crd); err != nil {
		t.Fatal(err)
	}
	md := crd["metadata"].(map[string]any)
	md["uid"], md["creationTimestamp"], md["generation"] = "5e150000-0000-4000-8000-000000000001", created.UTC().Format(time.RFC3339), 1
	pool := map[string]any{
		"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
		"metadata": map[string]any{"name": "default-pool", "namespace": "metallb-system", "uid": "5e150000-0000-4000-8000-000000000002",
			"generation": 1, "creationTimestamp": created.UTC().Format(time.RFC3339)},
		"spec": map[string]any{"addresses": []any{"10.0.100.10-10.0.100.60", "10.0.100.128/26"}, "autoAssign": true},
	}
	c := codec.New()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dns-forwarder", Namespace: "demo", UID: "5e150000-0000-4000-8000-000000000003", CreationTimestamp: created},
		Data: map[string]string{"Corefile": ".:53 {\n    forward . 10.0.100.53 1.1.1.1\n    cache 30\n}\n"}}
	labels := map[string]string{"app": "resolver"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "resolver", Namespace: "demo", UID: "5e150000-0000-4000-8000-000000000004", CreationTimestamp: created, Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "resolver", Image: "registry.k8s.io/pause:3.10", Env: []corev1.EnvVar{{Name: "DNS", Value: "10.0.100.53:53"}}}}}}}}
	out := map[string][]byte{
		"/registry/apiextensions.k8s.io/customresourcedefinitions/ipaddresspools.metallb.io": mustJSON(t, crd),
		"/registry/metallb.io/ipaddresspools/metallb-system/default-pool":                    mustJSON(t, pool),
	}
	var err1, err2 error
	out["/registry/configmaps/demo/dns-forwarder"], err1 = c.EncodeProtobuf(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	out["/registry/deployments/demo/resolver"], err2 = c.EncodeProtobuf(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return out
}

// mustJSON encodes a value as the apiserver writes an unstructured object:
// encoding/json with a trailing newline.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
