package nodeops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/snapshift/snapshift/internal/fsutil"
)

var lookPath = exec.LookPath

// doBackup copies what apply changes in place, once.
func (a *applyRun) doBackup(context.Context) error {
	if err := os.MkdirAll(a.path(a.backup), 0o700); err != nil {
		return err
	}
	a.rec = &Record{Node: a.b.node.Name, Bundle: a.b.dir, ReportSHA256: a.b.reportSum, Created: a.cfg.Now().UTC()}
	paths, err := a.backupPaths()
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := a.backupCopy(a.backup, a.rec, p); err != nil {
			return err
		}
	}
	return nil
}

// backupPaths are the host paths the backup step copies (preflight
// describes the same list): /etc/kubernetes, the kubelet's config.yaml
// and pki/, and for a file the bundle installs elsewhere (an encryption
// configuration) the highest directory on its way that does not exist,
// or the file.
func (a *applyRun) backupPaths() ([]string, error) {
	paths := []string{KubernetesDir, KubeletConfig, KubeletPKI}
	for _, f := range a.b.files() {
		if !strings.HasPrefix(f.Host, KubernetesDir+"/") { // an encryption configuration elsewhere
			p, err := a.firstMissing(f.Host)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	return paths, nil
}

// firstMissing is the highest directory on the way to host path p that
// does not exist (rollback removes it whole), or p itself.
func (a *applyRun) firstMissing(p string) (string, error) {
	var parts []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		parts = append([]string{d}, parts...)
	}
	for _, d := range parts {
		ok, err := exists(a.path(d))
		if err != nil || !ok {
			return d, err
		}
	}
	return p, nil
}

// install puts the node's files in place (every run: it writes the same
// bytes again), then moves the old-CA kubelet client certificates aside
// and sets clusterDNS.
func (a *applyRun) install(context.Context) error {
	files := a.b.files()
	for _, f := range files {
		if err := installFile(filepath.Join(a.b.dir, filepath.FromSlash(f.Rel)), a.path(f.Host), f.Mode); err != nil {
			return fmt.Errorf("installing %s: %w", f.Host, err)
		}
	}
	a.logf("install", "%d files of %s installed under %s (root-owned; keys, kubeconfigs and manifests 0600, certificates 0644)", len(files), a.b.node.Dir, KubernetesDir)
	if err := os.RemoveAll(a.path(stoppedDir)); err != nil {
		return err
	}
	if a.b.op.CAChanged {
		n, err := a.moveOldClientCerts(a.backup)
		if err != nil {
			return err
		}
		if n > 0 {
			a.logf("install", "the CA changed: moved %d kubelet client certificates (signed by the old CA) from %s to %s", n, KubeletPKI, filepath.Join(a.backup, "kubelet-client-old-ca"))
		}
	}
	if dns := a.b.op.ClusterDNS; dns != "" {
		changed, err := a.setClusterDNS(dns)
		if err != nil {
			return err
		}
		if changed {
			a.logf("install", "%s: clusterDNS %s", KubeletConfig, dns)
		}
	}
	return nil
}

// installEtcd copies the bundle's member into the data dir (0700) under a
// temporary name, then renames it into place.
func (a *applyRun) installEtcd(context.Context) error {
	dst := a.path(a.b.op.EtcdDataDir)
	if _, err := fsutil.CleanFor(dst); err != nil { // a killed run's temporary member
		return err
	}
	if ok, _ := exists(dst); ok {
		mount, err := isMountPoint(dst)
		if err != nil {
			return err
		}
		if mount {
			return a.installEtcdContents(dst)
		}
	}
	tmp := fsutil.TempName(dst, "")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// Copied as the running user (root on a node: root-owned); PublishDir
	// fsyncs every file before the rename.
	if err := fsutil.Copy(a.b.memberDir(), tmp, fsutil.CopyOptions{}); err != nil {
		return fmt.Errorf("installing etcd member %s: %w", a.b.node.EtcdMember, err)
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil { // an empty dir left by the kubelet's DirectoryOrCreate
		return err
	}
	if err := fsutil.PublishDir(tmp, dst); err != nil {
		return err
	}
	a.logf("install", "etcd member %s in %s (0700)", a.b.node.EtcdMember, a.b.op.EtcdDataDir)
	return nil
}

// installEtcdContents installs the member into dst, a mount point (it
// cannot be renamed): dst is emptied (its old contents are in the backup;
// what is there is a killed run's), the member is copied into a temporary
// directory inside dst, fsynced, and its entries renamed into dst (the
// same file system), so etcd never sees a half-copied member.
func (a *applyRun) installEtcdContents(dst string) error {
	if err := clearDir(dst); err != nil {
		return err
	}
	tmp := filepath.Join(dst, ".snapshift-member.tmp")
	if err := fsutil.Copy(a.b.memberDir(), tmp, fsutil.CopyOptions{}); err != nil {
		return fmt.Errorf("installing etcd member %s: %w", a.b.node.EtcdMember, err)
	}
	if err := fsutil.SyncTree(tmp); err != nil {
		return err
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	if err := os.Chmod(dst, 0o700); err != nil {
		return err
	}
	if err := fsutil.SyncDir(dst); err != nil {
		return err
	}
	a.logf("install", "etcd member %s in %s (a mount point: its contents replaced; 0700)", a.b.node.EtcdMember, a.b.op.EtcdDataDir)
	return nil
}
