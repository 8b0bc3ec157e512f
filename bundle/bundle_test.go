package bundle_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/cni"
)

func writeReport(t *testing.T, v any) string {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.ReportFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenVersions(t *testing.T) {
	op := &bundle.Operation{EtcdDataDir: "/var/lib/etcd", Checksums: map[string]string{"kubernetes/n1/admin.conf": "x"}}
	r := bundle.NewReport()
	r.Nodes, r.Operation = []bundle.Node{{Name: "n1", Dir: "kubernetes/n1"}}, op
	o, err := bundle.Open(writeReport(t, r))
	if err != nil {
		t.Fatalf("Open of this version: %v", err)
	}
	if _, err := o.Node("n2"); err == nil || !strings.Contains(err.Error(), `has no node "n2" (it has n1)`) {
		t.Errorf("Node(n2): %v", err)
	}
	// A report.json written before the version was recorded has the same
	// shape, and any other field (the engine's report) is ignored.
	legacy := map[string]any{"output": "/b", "transform": map[string]any{"keys": 3}, "nodes": r.Nodes, "operation": op}
	o, err = bundle.Open(writeReport(t, legacy))
	if err != nil || o.Report.APIVersion != bundle.APIVersion || o.Report.Operation.EtcdDataDir != "/var/lib/etcd" {
		t.Errorf("Open of a report without a version: %v %+v", err, o)
	}
	r.APIVersion = "snapshift.io/v1beta9"
	if _, err := bundle.Open(writeReport(t, r)); err == nil || !strings.Contains(err.Error(), "report.json is snapshift.io/v1beta9 BundleReport; this snapshift reads snapshift.io/v1alpha1 BundleReport") {
		t.Errorf("Open of another version: %v", err)
	}
	r.APIVersion, r.Operation = bundle.APIVersion, nil
	if _, err := bundle.Open(writeReport(t, r)); err == nil || !strings.Contains(err.Error(), "no operation block") {
		t.Errorf("Open without an operation block: %v", err)
	}
}

func TestFilesLayout(t *testing.T) {
	op := &bundle.Operation{Checksums: map[string]string{"kubernetes/n1/pki/ca.crt": "", "kubernetes/n1/admin.conf": "",
		"kubernetes/n1/host/etc/enc/config.yaml": "", "kubernetes/n2/admin.conf": "", "etcd/m1/member/snap/db": ""}}
	var got []string
	for _, f := range op.Files(bundle.Node{Name: "n1", Dir: "kubernetes/n1"}) {
		got = append(got, f.Rel+" "+f.Host+" "+f.Mode.String())
	}
	want := "kubernetes/n1/admin.conf /etc/kubernetes/admin.conf -rw-------|kubernetes/n1/host/etc/enc/config.yaml /etc/enc/config.yaml -rw-------|kubernetes/n1/pki/ca.crt /etc/kubernetes/pki/ca.crt -rw-r--r--"
	if strings.Join(got, "|") != want {
		t.Errorf("Files:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
}

func TestCNICommands(t *testing.T) {
	st, ok := bundle.CNIHostStateOf("calico")
	if !ok {
		t.Fatal("calico has no host state")
	}
	got := strings.Join(st.Commands(), "\n")
	want := "crictl ps -q --name '^calico-node$' | xargs -r crictl --timeout 60s stop\nip link show vxlan.calico >/dev/null 2>&1 && ip link delete vxlan.calico\nip link show vxlan-v6.calico >/dev/null 2>&1 && ip link delete vxlan-v6.calico\n" +
		"ip link show tunl0 >/dev/null 2>&1 && ip addr flush dev tunl0\nip route flush proto bird"
	if got != want {
		t.Errorf("calico's commands:\n%s\nwant\n%s", got, want)
	}
	if cnis := strings.Join(bundle.KnownCNIs(), ","); cnis != "calico,canal,cilium,flannel,weave" {
		t.Errorf("KnownCNIs: %s", cnis)
	}
}

// TestCNIHostStateEveryCNI: every CNI of package cni's table has host
// state here, and its cleanup stops the agent first (a running agent
// recreates what is removed under it).
func TestCNIHostStateEveryCNI(t *testing.T) {
	for _, name := range cni.Names() {
		st, ok := bundle.CNIHostStateOf(name)
		if !ok {
			t.Errorf("%s: no host state: node apply would skip it", name)
			continue
		}
		acts := st.Actions()
		if len(acts) < 2 || acts[0].Kind != bundle.StopAgent {
			t.Errorf("%s: actions %+v", name, acts)
		}
	}
	if _, ok := bundle.CNIHostStateOf("kube-router"); ok {
		t.Error("host state for a CNI the table lacks")
	}
	if got, want := strings.Join(bundle.KnownCNIs(), ","), strings.Join(slices.Sorted(slices.Values(cni.Names())), ","); got != want {
		t.Errorf("KnownCNIs %s, the table's %s", got, want)
	}
}
