package nodeops

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// moveOldClientCerts moves the kubelet's rotated client certificates
// (kubelet-client-current.pem, a symlink, and the kubelet-client-<date>.pem
// files it points to) into the backup directory when the CA changed.
//
// They must go: the kubelet's certificate store loads
// <cert-dir>/kubelet-client-current.pem before the pair the kubeconfig
// names (k8s.io/client-go util/certificate/certificate_store.go, fileStore.Current,
// v0.36.3 lines 142-148), and the certificate manager keeps a current
// certificate that has not expired over the bootstrap pair it was given
// (certificate_manager.go, getCurrentCertificateOrBootstrap, lines 498-508;
// the kubelet passes kubelet.conf's embedded pair as that bootstrap pair:
// k8s.io/kubernetes cmd/kubelet/app/server.go buildKubeletClientConfig and
// pkg/kubelet/certificate/kubelet.go NewKubeletClientCertificateManager,
// "This code path is used by kubeadm on the masters"). Left in place, a
// certificate signed by the old CA wins and every request gets 401.
func (h *host) moveOldClientCerts(backup string) (int, error) {
	matches, err := filepath.Glob(h.path(filepath.Join(KubeletPKI, "kubelet-client-*.pem")))
	if err != nil || len(matches) == 0 {
		return 0, err
	}
	dst := filepath.Join(h.path(backup), "kubelet-client-old-ca")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return 0, err
	}
	for _, m := range matches {
		if err := os.Rename(m, filepath.Join(dst, filepath.Base(m))); err != nil {
			return 0, err
		}
	}
	if err := fsutil.SyncDir(dst); err != nil {
		return 0, err
	}
	return len(matches), fsutil.SyncDir(h.path(KubeletPKI))
}

var (
	clusterDNSBlock = regexp.MustCompile(`(?m)^clusterDNS:[ \t]*\n((?:[ \t]*-[^\n]*\n)+)`)
	clusterDNSFlow  = regexp.MustCompile(`(?m)^clusterDNS:[ \t]*\[[^\]\n]*\][ \t]*$`)
)

// setClusterDNS points the kubelet's config.yaml at the new cluster DNS
// address, as kubeadm writes it (a block list) or in flow style; every
// other byte is kept. It reports whether the file changed.
func (h *host) setClusterDNS(addr string) (bool, error) {
	p := h.path(KubeletConfig)
	if _, err := fsutil.CleanFor(p); err != nil { // a killed run's temporary file
		return false, err
	}
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s := string(b)
	out := s
	switch {
	case clusterDNSBlock.MatchString(s):
		out = clusterDNSBlock.ReplaceAllString(s, "clusterDNS:\n- "+addr+"\n")
	case clusterDNSFlow.MatchString(s):
		out = clusterDNSFlow.ReplaceAllString(s, "clusterDNS: ["+addr+"]")
	case !strings.Contains(s, "clusterDNS"):
		return false, nil
	}
	if out == s {
		return false, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	// Replaced whole (temporary file, fsync, rename): a crash never leaves
	// the kubelet half a configuration.
	return true, fsutil.WriteFile(p, []byte(out), st.Mode().Perm(), true)
}
