package nodeops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

var lookPath = exec.LookPath

// doBackup copies what apply changes in place, once.
func (a *applyRun) doBackup(context.Context) error {
	if a.rec != nil && a.rec.Done[stepBackup] {
		return nil
	}
	if err := os.MkdirAll(a.path(a.backup), 0o700); err != nil {
		return err
	}
	a.rec = &Record{Node: a.b.node.Name, Bundle: a.b.dir, ReportSHA256: a.b.reportSum, Created: a.cfg.Now().UTC(), Done: map[string]bool{}}
	paths := []string{KubernetesDir, KubeletConfig, KubeletPKI}
	for _, f := range a.b.files() {
		if !strings.HasPrefix(f.Host, KubernetesDir+"/") { // an encryption configuration elsewhere
			p, err := a.firstMissing(f.Host)
			if err != nil {
				return err
			}
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		if err := a.backupCopy(a.backup, a.rec, p); err != nil {
			return err
		}
	}
	a.rec.Done[stepBackup] = true
	return a.saveRecord(a.backup, a.rec)
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

// stop stops the static pods and the kubelet, then moves the etcd data
// dir into the backup, once each.
func (a *applyRun) stop(ctx context.Context) error {
	if !a.rec.Done[stepStopped] {
		if err := a.stopStaticPods(ctx, stoppedDir); err != nil {
			return err
		}
		a.rec.Done[stepStopped] = true
		if err := a.saveRecord(a.backup, a.rec); err != nil {
			return err
		}
	}
	if a.rec.Done[stepEtcdMoved] {
		return nil
	}
	if err := a.backupMove(a.backup, a.rec, a.b.op.EtcdDataDir); err != nil {
		return err
	}
	a.rec.Done[stepEtcdMoved] = true
	return a.saveRecord(a.backup, a.rec)
}

// install puts the node's files in place (every run: it writes the same
// bytes again), the etcd member once, then moves the old-CA kubelet
// client certificates aside and sets clusterDNS.
func (a *applyRun) install(context.Context) error {
	if err := a.installEtcd(); err != nil {
		return err
	}
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
	a.rec.Done[stepInstalled] = true
	return a.saveRecord(a.backup, a.rec)
}

// installEtcd copies the bundle's member into the data dir (0700) under a
// temporary name, then renames it into place, once.
func (a *applyRun) installEtcd() error {
	if a.rec.Done[stepEtcd] {
		return nil
	}
	dst := a.path(a.b.op.EtcdDataDir)
	tmp := dst + ".snapshift-new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := copyTree(a.b.memberDir(), tmp); err != nil {
		return fmt.Errorf("installing etcd member %s: %w", a.b.node.EtcdMember, err)
	}
	err := filepath.Walk(tmp, func(p string, info os.FileInfo, err error) error {
		if err != nil || os.Geteuid() != 0 {
			return err
		}
		return os.Lchown(p, 0, 0)
	})
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil { // an empty dir left by the kubelet's DirectoryOrCreate
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	a.logf("install", "etcd member %s in %s (0700)", a.b.node.EtcdMember, a.b.op.EtcdDataDir)
	a.rec.Done[stepEtcd] = true
	return a.saveRecord(a.backup, a.rec)
}
