package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Paths inside a bundle.
const (
	KubeDir     = "kubernetes"
	EtcdDir     = "etcd"
	RunbookFile = "RUNBOOK.md"
	ReportFile  = "report.json"
	// HostDir, under a node's directory, mirrors the node's / for the
	// files that go outside /etc/kubernetes.
	HostDir = "host"
)

// KubernetesDir is the host directory a node's bundle directory mirrors.
const KubernetesDir = "/etc/kubernetes"

// NodeBundleDir is where the runbook copies a node's part of the bundle
// on that node.
const NodeBundleDir = "/root/snapshift-bundle"

// ManifestsBefore is the copy of a control-plane node's static-pod
// manifests the runbook has the operator make before the snapshot, just
// before taking kube-apiserver.yaml out of the watched directory:
// `rebuild` reads it (manifests.source), and `node rollback` puts
// kube-apiserver.yaml back from it (the backup, made later by apply,
// lacks it).
const ManifestsBefore = "/etc/kubernetes/manifests.before-snapshift"

// NodeDir is node's directory in the bundle (relative).
func NodeDir(node string) string { return KubeDir + "/" + node }

// MemberDir is etcd member's data dir in the bundle (relative).
func MemberDir(member string) string { return EtcdDir + "/" + member }

// File is one file of a node's part of the bundle and where it goes.
type File struct {
	Rel  string // relative to the bundle, slash-separated
	Host string // absolute host path
	Mode os.FileMode
}

// Files are node n's files outside its etcd member, by their checksums:
// kubernetes/<node>/ mirrors /etc/kubernetes, its host/ subtree mirrors /.
func (op *Operation) Files(n Node) []File {
	prefix := filepath.ToSlash(n.Dir) + "/"
	var out []File
	for rel := range op.Checksums {
		sub, ok := strings.CutPrefix(rel, prefix)
		if !ok {
			continue
		}
		host := filepath.Join(KubernetesDir, sub)
		if h, ok := strings.CutPrefix(sub, HostDir+"/"); ok {
			host = "/" + h
		}
		out = append(out, File{Rel: rel, Host: host, Mode: Mode(host)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel < out[j].Rel })
	return out
}

// Mode is kubeadm's mode for a file it writes: private keys, kubeconfigs,
// static-pod manifests and anything outside the cert dir (an encryption
// configuration) 0600; certificates and public keys 0644.
func Mode(host string) os.FileMode {
	switch filepath.Ext(host) {
	case ".crt", ".pub":
		return 0o644
	}
	return 0o600
}

// Verify checks every file of node n's part of the bundle in dir (its
// directory and its etcd member) against the checksums: none missing,
// none changed, none added.
func (op *Operation) Verify(dir string, n Node) error {
	tops := []string{filepath.ToSlash(n.Dir), MemberDir(n.EtcdMember)}
	want := map[string]string{}
	for rel, sum := range op.Checksums {
		for _, top := range tops {
			if strings.HasPrefix(rel, top+"/") {
				want[rel] = sum
			}
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("%s lists no file for node %s", ReportFile, n.Name)
	}
	var bad []string
	for _, top := range tops {
		err := filepath.WalkDir(filepath.Join(dir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			sum, ok := want[rel]
			if !ok {
				bad = append(bad, rel+" (not in "+ReportFile+")")
				return nil
			}
			delete(want, rel)
			got, err := FileSHA256(p)
			if err != nil {
				return err
			}
			if got != sum {
				bad = append(bad, rel+" (sha256 differs)")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for rel := range want {
		bad = append(bad, rel+" (missing)")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("the bundle does not match %s: %s", ReportFile, strings.Join(bad, "; "))
	}
	return nil
}

// FileSHA256 is a file's sha256 in hex, as sha256sum prints it (the
// checksums of report.json).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// etcd run by systemd from the host, not as kubeadm's static pod: the files
// kubespray's etcd_deployment_type: host writes on every etcd node (its
// roles/etcd templates etcd-host.service.j2 and etcd.env.j2). node apply
// recognises such a node by them and refuses it: it installs a static-pod
// etcd, which would run beside the host's.
const (
	// HostEtcdEnv is the unit's EnvironmentFile: ETCD_DATA_DIR, ETCD_NAME,
	// the URLs and the certificate paths.
	HostEtcdEnv = "/etc/etcd.env"
	// HostEtcdUnit is the unit's name.
	HostEtcdUnit = "etcd.service"
	// KubeadmEtcdPKI is where a kubeadm static-pod etcd's certificates
	// live, and kube-apiserver's --etcd-* files with them.
	KubeadmEtcdPKI = KubernetesDir + "/pki/etcd"
	// KubeadmAPIServerEtcdPKI is the other directory kubeadm points
	// kube-apiserver's --etcd-certfile/--etcd-keyfile at
	// (apiserver-etcd-client.crt in /etc/kubernetes/pki).
	KubeadmAPIServerEtcdPKI = KubernetesDir + "/pki"
)

// SystemdUnitDirs are the directories systemd loads a unit file from, the
// administrator's first (systemd.unit(5): the system unit search path).
var SystemdUnitDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"}

// BackupRoot is where node apply, and the runbook's worker steps, keep one
// backup directory per node and bundle.
const BackupRoot = "/var/lib/snapshift/backup"

// BackupDir is node's backup directory for the bundle whose report.json
// has sha256 reportSum (hex): the node's name and the sum's first 12 hex
// digits, so that each bundle applied on a node has its own and a rerun of
// the same bundle finds it. node apply backs a control-plane node up
// there; the runbook's worker step a worker.
func BackupDir(node, reportSum string) string {
	return BackupRoot + "/" + node + "-" + reportSum[:12]
}
