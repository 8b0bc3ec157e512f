package manifests

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := copyDir(t, kubeadmIPv4)
	for _, f := range []string{"kube-vip.yaml", "etcd.yaml.bak", ".hidden.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set := mustRead(t, dir)
	if len(set.Manifests) != 4 || set.Dir != dir {
		t.Fatalf("read %d manifests from %s", len(set.Manifests), set.Dir)
	}
	for i, c := range Components() {
		m := set.Manifests[i]
		if m.Component != c || m.Path != filepath.Join(dir, FileName(c)) || m.Generated() || len(m.Warnings) > 0 {
			t.Errorf("%d: %s %s generated=%v warnings=%q", i, m.Component, m.Path, m.Generated(), m.Warnings)
		}
		want, _ := os.ReadFile(filepath.Join(kubeadmIPv4, FileName(c)))
		if string(m.Original) != string(want) {
			t.Errorf("%s: original bytes not kept", c)
		}
		if m.Pod.Name != c || m.Pod.Namespace != "kube-system" {
			t.Errorf("%s: pod %s/%s", c, m.Pod.Namespace, m.Pod.Name)
		}
	}
	// kubelet would load these too: the set says so.
	if !slices.Equal(set.Other, []string{"etcd.yaml.bak", "kube-vip.yaml"}) {
		t.Errorf("other files %q", set.Other)
	}
}

func TestReadErrors(t *testing.T) {
	empty := t.TempDir()
	if _, err := Read(empty); err == nil || !strings.Contains(err.Error(),
		"no kubeadm static Pod manifest in "+empty+" (looked for kube-apiserver.yaml, kube-controller-manager.yaml, kube-scheduler.yaml, etcd.yaml)") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := Read(filepath.Join(empty, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}

	// A partial set reads; asking for what is not there names the file.
	dir := copyDir(t, kubeadmIPv4)
	if err := os.Remove(filepath.Join(dir, "etcd.yaml")); err != nil {
		t.Fatal(err)
	}
	set := mustRead(t, dir)
	if set.Has(Etcd) || !set.Has(KubeAPIServer) {
		t.Errorf("Has: etcd %v apiserver %v", set.Has(Etcd), set.Has(KubeAPIServer))
	}
	if _, err := set.Get(Etcd); !errors.Is(err, ErrMissing) || err.Error() != "etcd.yaml: manifest not found in "+dir {
		t.Errorf("Get(etcd): %v", err)
	}
	if _, err := set.Get("kube-proxy"); !errors.Is(err, ErrUnknownComponent) ||
		err.Error() != `unknown control-plane component "kube-proxy" (valid: kube-apiserver, kube-controller-manager, kube-scheduler, etcd)` {
		t.Errorf("Get(kube-proxy): %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "kube-proxy.yaml")); !errors.Is(err, ErrUnknownComponent) ||
		!strings.Contains(err.Error(), "the file name must be one of kube-apiserver.yaml, kube-controller-manager.yaml, kube-scheduler.yaml, etcd.yaml") {
		t.Errorf("ReadFile(kube-proxy.yaml): %v", err)
	}
	if m, err := ReadFile(filepath.Join(dir, "kube-scheduler.yaml")); err != nil || m.Component != KubeScheduler {
		t.Errorf("ReadFile(kube-scheduler.yaml): %v", err)
	}

	bad := []struct{ name, text, want string }{
		{"deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n", `apiVersion "apps/v1", kind "Deployment" (want v1 Pod)`},
		{"two documents", "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\n", "more than one YAML document"},
		{"duplicate key", "apiVersion: v1\nkind: Pod\nkind: Pod\n", "not a valid"},
		{"not yaml", "apiVersion: [v1\n", "line 1: not valid YAML: "},
		{"wrong type", "apiVersion: v1\nkind: Pod\nspec:\n  containers: 3\n", "not a valid Pod manifest"},
		{"no container", "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: a\n  - name: b\n", `no container named "kube-scheduler" (containers: a, b)`},
	}
	for _, tc := range bad {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "kube-scheduler.yaml"), []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Read(d)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Join(d, "kube-scheduler.yaml")) {
			t.Errorf("%s: %v, want the path and %q", tc.name, err, tc.want)
		}
	}
}

// A field this k8s.io/api does not know is a warning; the in-place edit
// keeps it, and the manifest is never re-marshalled (which would drop it).
func TestUnknownFieldsKept(t *testing.T) {
	text := strings.Replace(readFixture(t, kubeadmIPv4, KubeScheduler),
		"  hostNetwork: true\n", "  hostNetwork: true\n  futureField: keep-me\n", 1)
	m, err := Parse(KubeScheduler, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "futureField") {
		t.Fatalf("warnings %q", m.Warnings)
	}
	c, _ := m.Container()
	c.Command[1] = "--authentication-kubeconfig=/etc/kubernetes/other.conf"
	r, err := m.Render()
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != RenderEdited || !strings.Contains(string(r.Data), "futureField: keep-me") {
		t.Errorf("method %s:\n%s", r.Method, r.Data)
	}
	// Something the text cannot take in place: refused, not marshalled.
	m.Pod.Spec.Containers[0].Command = []string{"kube-scheduler"}
	if _, err := m.Render(); err == nil || !strings.Contains(err.Error(), "would drop the fields") {
		t.Errorf("lossy marshal: %v", err)
	}
}

func readFixture(t *testing.T, dir, component string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, FileName(component)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
