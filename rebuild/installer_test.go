package rebuild_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/rebuild"
)

// kubesprayGroupVars is shaped as kubespray's sample
// inventory/sample/group_vars/k8s_cluster/k8s-cluster.yml: comments,
// quoted and unquoted values, skydns_server as its default expression.
const kubesprayGroupVars = `---
# Kubernetes configuration dirs and system namespace.
kube_config_dir: /etc/kubernetes
kube_network_plugin: calico

# Kubernetes internal network for services, unused block of space.
kube_service_addresses: 10.233.0.0/18

# internal network. When used, it will assign IP
# addresses from this range to individual pods.
kube_pods_subnet: "10.233.64.0/18"   # the pods' range
kube_network_node_prefix: 24

# DNS configuration.
dns_mode: coredns
enable_nodelocaldns: true
nodelocaldns_ip: 169.254.25.10
skydns_server: "{{ kube_service_addresses | ansible.utils.ipaddr('net') | ansible.utils.ipaddr(3) | ansible.utils.ipaddr('address') }}"
`

const kubesprayCalico = `---
# see roles/network_plugin/calico/defaults/main.yml
calico_pool_blocksize: 26
calico_pool_cidr: '10.233.64.0/18'
`

// TestInstallerFiles (issue 50): the operator's kubespray group_vars are
// copied into the bundle's installer/ with the moved ranges, line by line
// (comments, order, quotes kept; skydns_server's expression and
// nodelocaldns_ip left alone; Calico's pool in its own file), kubeadm is
// said to need nothing (kubeadm-config moved), report.json lists them and
// the runbook's installer step applies them; a file kubespray could not
// read is refused naming its line, and a file without the ranges gets
// them added with a comment.
func TestInstallerFiles(t *testing.T) {
	dir := t.TempDir()
	gv, calico := filepath.Join(dir, "k8s-cluster.yml"), filepath.Join(dir, "k8s-net-calico.yml")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(gv, kubesprayGroupVars)
	write(calico, kubesprayCalico)
	ms := members(t, 1)
	out := filepath.Join(dir, "bundle")
	cfg := baseConfig(t, out, ms)
	cfg.Installer.Kubespray.GroupVars = []string{gv, calico}
	rep, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, "installer/kubespray/k8s-cluster.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("kube_service_addresses: 10.233.0.0/18", "kube_service_addresses: 172.24.0.0/16",
		`kube_pods_subnet: "10.233.64.0/18"   # the pods' range`, `kube_pods_subnet: "10.55.0.0/16"   # the pods' range`).Replace(kubesprayGroupVars)
	if string(got) != want {
		t.Errorf("installer/kubespray/k8s-cluster.yml:\n%s\nwant:\n%s", got, want)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "installer/kubespray/k8s-net-calico.yml")); !strings.Contains(string(got), "calico_pool_cidr: '10.55.0.0/16'\n") || !strings.Contains(string(got), "calico_pool_blocksize: 26\n") {
		t.Errorf("installer/kubespray/k8s-net-calico.yml:\n%s", got)
	}
	if len(rep.Installer) != 3 || rep.Installer[0].Path != "installer/kubespray/k8s-cluster.yml" ||
		strings.Join(rep.Installer[0].Changes, "; ") != "kube_service_addresses: 10.233.0.0/18 -> 172.24.0.0/16; kube_pods_subnet: 10.233.64.0/18 -> 10.55.0.0/16" ||
		rep.Installer[0].ApplyTo != gv+", before kubespray runs again" ||
		strings.Join(rep.Installer[1].Changes, "; ") != "calico_pool_cidr: 10.233.64.0/18 -> 10.55.0.0/16" ||
		rep.Installer[2].Installer != "kubeadm" || !strings.Contains(rep.Installer[2].ApplyTo, "nothing to apply: kube-system/kubeadm-config") {
		t.Errorf("report.json's installer: %+v", rep.Installer)
	}
	rb, _ := os.ReadFile(filepath.Join(out, "RUNBOOK.md"))
	for _, s := range []string{"Before the installer runs again: its files, moved with the cluster",
		"cp " + filepath.Join(out, "installer/kubespray/k8s-cluster.yml") + " " + gv, "diff -u " + calico + " " + filepath.Join(out, "installer/kubespray/k8s-net-calico.yml")} {
		if !strings.Contains(string(rb), s) {
			t.Errorf("RUNBOOK.md does not say %q", s)
		}
	}

	// Not the shape kubespray writes: refused, with the line.
	write(gv, "kube_service_addresses: 10.233.0.0/18\n  bad: [indent\n")
	cfg = baseConfig(t, filepath.Join(dir, "bundle2"), ms)
	cfg.Installer.Kubespray.GroupVars = []string{gv}
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow, DryRun: true}); err == nil ||
		!strings.Contains(err.Error(), "installer.kubespray.groupVars: "+gv+" is not a YAML map kubespray could read (") || !strings.Contains(err.Error(), "line 2") ||
		strings.Contains(err.Error(), "converting YAML to JSON") {
		t.Errorf("a group_vars file with a YAML error: %v", err)
	}

	// Without the ranges: added, with a comment.
	write(gv, "# my own\nkube_network_plugin: cilium\n")
	cfg = baseConfig(t, filepath.Join(dir, "bundle3"), ms)
	cfg.Installer.Kubespray.GroupVars = []string{gv}
	if _, err := rebuild.Run(context.Background(), cfg, rebuild.Options{Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(filepath.Join(dir, "bundle3/installer/kubespray/k8s-cluster.yml"))
	if want := "# my own\nkube_network_plugin: cilium\n# added by snapshift rebuild: the range the cluster moved to (kube_service_addresses was not set here)\nkube_service_addresses: 172.24.0.0/16\n" +
		"# added by snapshift rebuild: the range the cluster moved to (kube_pods_subnet was not set here)\nkube_pods_subnet: 10.55.0.0/16\n"; string(got) != want {
		t.Errorf("a group_vars file without the ranges:\n%s\nwant:\n%s", got, want)
	}
}
