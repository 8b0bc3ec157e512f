// Package nodetest makes what the tests of `snapshift node apply|rollback`
// run on: a one-node bundle, a kubeadm-shaped node root, and recorders for
// the host tools (nodeops's own tests and the crash suite share them).
package nodetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapshift/snapshift/bundle"
)

// Write writes one file, making its directories.
func Write(t testing.TB, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

// Bundle writes a one-node bundle into dir: node n1 at 127.0.0.1, etcd
// member m1, a new CA, flannel, the new clusterDNS 172.24.0.10, and an
// encryption configuration outside /etc/kubernetes. Files in replace
// (bundle path to content) replace or add to those, with their checksums
// in report.json.
func Bundle(t testing.TB, dir string, replace ...map[string]string) {
	t.Helper()
	files := map[string]string{
		"kubernetes/n1/pki/ca.crt": "new ca\n", "kubernetes/n1/pki/ca.key": "new ca key\n",
		"kubernetes/n1/admin.conf": "new admin.conf\n", "kubernetes/n1/manifests/etcd.yaml": "new etcd manifest\n",
		"kubernetes/n1/host/etc/enc/config.yaml": "encryption config\n", "etcd/m1/member/snap/db": "new member db\n",
		"etcd/m1/member/wal/0000000000000000-0000000000000000.wal": "new wal\n",
	}
	for _, r := range replace {
		maps.Copy(files, r)
	}
	sums := map[string]string{}
	for rel, s := range files {
		Write(t, filepath.Join(dir, rel), s, 0o600)
		sum := sha256.Sum256([]byte(s))
		sums[rel] = hex.EncodeToString(sum[:])
	}
	rep := bundle.NewReport()
	rep.Nodes = []bundle.Node{{Name: "n1", EtcdMember: "m1", AdvertiseAddress: "127.0.0.1", Dir: "kubernetes/n1"}}
	rep.Operation = &bundle.Operation{EtcdDataDir: "/var/lib/etcd", CAChanged: true, CNI: []string{"flannel"}, ClusterDNS: "172.24.0.10", Checksums: sums}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	Write(t, filepath.Join(dir, bundle.ReportFile), string(b), 0o600)
}

// Node writes a kubeadm-shaped node under root: the old /etc/kubernetes
// (with a file the bundle does not replace), the old etcd member, the
// kubelet's config.yaml and a rotated client certificate behind its
// kubelet-client-current.pem symlink, flannel's subnet.env.
func Node(t testing.TB, root string) {
	t.Helper()
	for p, f := range map[string]struct {
		s    string
		mode os.FileMode
	}{
		"etc/kubernetes/pki/ca.crt":                         {"old ca\n", 0o644},
		"etc/kubernetes/pki/ca.key":                         {"old ca key\n", 0o600},
		"etc/kubernetes/admin.conf":                         {"old admin.conf\n", 0o600},
		"etc/kubernetes/manifests/etcd.yaml":                {"old etcd manifest\n", 0o600},
		"etc/kubernetes/manifests/kube-apiserver.yaml":      {"old apiserver manifest\n", 0o600},
		"etc/kubernetes/audit/policy.yaml":                  {"kept: the bundle does not replace it\n", 0o640},
		"var/lib/etcd/member/snap/db":                       {"old member db\n", 0o600},
		"var/lib/etcd/member/wal/0.wal":                     {"old wal\n", 0o600},
		"var/lib/kubelet/config.yaml":                       {"kind: KubeletConfiguration\nclusterDNS:\n- 192.168.0.10\nclusterDomain: cluster.local\n", 0o644},
		"var/lib/kubelet/pki/kubelet-client-2020-01-01.pem": {"old client cert\n", 0o600},
		"run/flannel/subnet.env":                            {"FLANNEL_SUBNET=10.244.1.1/24\n", 0o644},
	} {
		Write(t, filepath.Join(root, p), f.s, f.mode)
	}
	if err := os.Symlink("/var/lib/kubelet/pki/kubelet-client-2020-01-01.pem", filepath.Join(root, "var/lib/kubelet/pki/kubelet-client-current.pem")); err != nil {
		t.Fatal(err)
	}
}

// Recorders writes systemctl, crictl, ip and systemd-run into dir: each
// appends its command line to log (when not ""), crictl shows nothing
// running, and `ip link show` finds only cni0.
func Recorders(t testing.TB, dir, log string) {
	t.Helper()
	for _, tool := range []string{"systemctl", "crictl", "ip", "systemd-run"} {
		script := "#!/bin/sh\n"
		if log != "" {
			script += fmt.Sprintf("echo \"%s $*\" >> %s\n", tool, log)
		}
		if tool == "crictl" {
			// What crictl prints on every call of a node without /etc/crictl.yaml
			// (the lab's nodes, many kubeadm nodes): on stderr, never a container ID.
			script += "echo 'time=\"2026-01-01T00:00:00Z\" level=warning msg=\"Config \\\"/etc/crictl.yaml\\\" does not exist\"' >&2\n"
		}
		if tool == "ip" {
			script += "[ \"$1 $2 $3\" = \"link show cni0\" ] && exit 0\n[ \"$2\" = show ] && exit 1\n"
		}
		Write(t, filepath.Join(dir, tool), script+"exit 0\n", 0o755)
	}
}

// Tree is every path under root/dirs (relative to root) with its mode and
// its content or target.
func Tree(t testing.TB, root string, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range dirs {
		filepath.WalkDir(filepath.Join(root, d), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			v := info.Mode().String()
			if info.Mode()&fs.ModeSymlink != 0 {
				l, _ := os.Readlink(p)
				v += " -> " + l
			} else if info.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				v += " " + string(b)
			}
			rel, _ := filepath.Rel(root, p)
			out[rel] = v
			return nil
		})
	}
	return out
}
