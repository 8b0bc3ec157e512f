package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Helpers only the tests use: shorthands over the package API.

// IsZero reports whether c changes nothing.
func (c Changes) IsZero() bool {
	return c.ServiceCIDR == "" && c.PodCIDR == "" && c.EtcdMember.isZero() && c.InitialCluster == "" &&
		len(c.EtcdServers) == 0 && c.DataDir == "" && c.AdvertiseAddress == ""
}

// KubeadmCACertPaths are the host directories kubeadm also mounts into
// kube-apiserver and kube-controller-manager when they exist, because
// /etc/ssl/certs may link into them (phases/controlplane/volumes.go).
func KubeadmCACertPaths() []string {
	return []string{"/etc/pki/ca-trust", "/etc/pki/tls/certs", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates"}
}

// HostCACertPaths returns those of KubeadmCACertPaths that exist under root
// ("/" or "" for this host), for GenerateConfig.CACertPaths: what kubeadm
// would mount on this machine.
func HostCACertPaths(root string) []string {
	var out []string
	for _, p := range KubeadmCACertPaths() {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Generated reports whether the manifest was built rather than read.
func (m *Manifest) Generated() bool { return m.Original == nil }

// ReadFile loads one manifest; its component comes from the file name
// (kube-apiserver.yaml, ...), and an unknown name is an error listing the
// valid ones.
func ReadFile(path string) (*Manifest, error) {
	base := filepath.Base(path)
	component := strings.TrimSuffix(base, ".yaml")
	if component == base || checkComponent(component) != nil {
		var files []string
		for _, c := range Components() {
			files = append(files, FileName(c))
		}
		return nil, fmt.Errorf("%s: %w: the file name must be one of %s", path, ErrUnknownComponent, strings.Join(files, ", "))
	}
	return readManifest(path, component)
}

// Write writes every manifest of set into dir whose file does not already
// hold its bytes: atomically (temporary file, fsync, rename), mode 0600,
// keeping the replaced file as <file>.bak (.bak.1, ... — a backup is never
// overwritten). See [WriteOptions] for force.
func Write(set *Set, dir string, force bool) (*WriteResult, error) {
	return WriteWith(set, WriteOptions{Dir: dir, Force: force})
}
