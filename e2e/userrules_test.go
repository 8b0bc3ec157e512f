//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/wellknown"
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
  match: {resource: deploy, namespaces: [demo], names: [resolver]}
  mapAddresses: [/spec/template/spec/containers]
- name: registry-move
  match: {resource: workloads}
  replace:
  - {path: "@containers/*/image", regex: '^registry\.old\.example/', to: registry.new.example/}
  expect: {min: 2}
`

// TestUserRules: objects stored as kube-apiserver stores them (MetalLB's
// real CRD and a pool as JSON, a ConfigMap, a Deployment and a CronJob as
// protobuf) are migrated with a rules file; the real kube-apiserver,
// started once on the restored data, serves the mapped values and the
// registry-moved images; its discovery agrees with snapshift's table of
// resource names.
func TestUserRules(t *testing.T) {
	e := newTestEnv(t, 3*time.Minute)
	bin, ctx, dir, logDir := e.bin, e.ctx, e.dir, e.logDir

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
	judgeRegistryMove(ctx, t, api)
	judgeResourceNames(t, api)
}

// judgeRegistryMove: the one registry-move rule reached the Deployment's
// containers and initContainers and the CronJob's container, and left the
// image from another registry alone.
func judgeRegistryMove(ctx context.Context, t *testing.T, api *apiserver) {
	t.Helper()
	d, err := api.client.AppsV1().Deployments("demo").Get(ctx, "resolver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	if got := []string{spec.Containers[0].Image, spec.Containers[1].Image, spec.InitContainers[0].Image}; fmt.Sprint(got) !=
		"[registry.new.example/demo/resolver:1.2 registry.k8s.io/pause:3.10 registry.new.example/demo/init:1.2]" {
		t.Errorf("Deployment images through the API: %v", got)
	}
	cj, err := api.client.BatchV1().CronJobs("demo").Get(ctx, "backup", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image; got != "registry.new.example/demo/backup:3" {
		t.Errorf("CronJob image through the API: %s", got)
	}
}

// judgeResourceNames compares wellknown.BuiltinResources with the real
// apiserver's discovery: every resource it serves that can be created and
// listed and has short names is in the table with the same short names, and
// every short name resolves to it.
func judgeResourceNames(t *testing.T, api *apiserver) {
	t.Helper()
	_, lists, err := api.client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			name := r.Name
			if gv.Group != "" {
				name += "." + gv.Group
			}
			known, ok := wellknown.LookupResource(name)
			switch {
			case !ok && len(r.ShortNames) > 0:
				t.Errorf("%s (short names %v) is served but not in wellknown.BuiltinResources", name, r.ShortNames)
			case ok && (known.Name != name || fmt.Sprint(known.Short) != fmt.Sprint(r.ShortNames) || known.Kind != r.Kind):
				t.Errorf("%s: the table has %s %v %s, discovery %v %s", name, known.Name, known.Short, known.Kind, r.ShortNames, r.Kind)
			}
			for _, s := range r.ShortNames {
				if k, _ := wellknown.LookupResource(s); k.Stored() != known.Stored() {
					t.Errorf("short name %s of %s resolves to %s", s, name, k.Name)
				}
			}
		}
	}
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
				InitContainers: []corev1.Container{{Name: "init", Image: "registry.old.example/demo/init:1.2"}},
				Containers: []corev1.Container{{Name: "resolver", Image: "registry.old.example/demo/resolver:1.2", Env: []corev1.EnvVar{{Name: "DNS", Value: "10.0.100.53:53"}}},
					{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}}}}}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "demo", UID: "5e150000-0000-4000-8000-000000000005", CreationTimestamp: created, Generation: 1},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "backup", Image: "registry.old.example/demo/backup:3"}}}}}}}}
	out := map[string][]byte{
		"/registry/apiextensions.k8s.io/customresourcedefinitions/ipaddresspools.metallb.io": mustJSON(t, crd),
		"/registry/metallb.io/ipaddresspools/metallb-system/default-pool":                    mustJSON(t, pool),
	}
	var err1, err2, err3 error
	out["/registry/configmaps/demo/dns-forwarder"], err1 = c.EncodeProtobuf(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	out["/registry/deployments/demo/resolver"], err2 = c.EncodeProtobuf(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	out["/registry/cronjobs/demo/backup"], err3 = c.EncodeProtobuf(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
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
