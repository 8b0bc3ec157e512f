package nodeops

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// stoppedDir is where apply moves the old manifests (the kubelet reads
// only the manifests directory).
const stoppedDir = "/etc/kubernetes/manifests.snapshift-stopped"

// applyRun is one apply.
type applyRun struct {
	*host
	b      *nodeBundle
	backup string // host path of the backup directory
	rec    *Record
}

// Apply puts the node's part of the bundle in place (see the package doc).
func Apply(ctx context.Context, cfg Config) error {
	b, err := openBundle(&cfg)
	if err != nil {
		return err
	}
	a := &applyRun{host: &host{cfg: &cfg}, b: b, backup: backupDir(b.node.Name, b.reportSum)}
	if a.rec, err = a.loadRecord(a.backup); err != nil {
		return err
	}
	if a.rec != nil && a.rec.RolledBack {
		// Rolled back before: that backup is the old state, kept under
		// another name; this apply starts a new one.
		old := a.backup + ".rolled-back-" + cfg.Now().UTC().Format("20060102T150405")
		if err := os.Rename(a.path(a.backup), a.path(old)); err != nil {
			return err
		}
		a.logf("preflight", "a rollback of this bundle is recorded: its backup is now %s; starting a new backup", old)
		a.rec = nil
	}
	if err := a.preflight(ctx); err != nil {
		return refused{fmt.Errorf("[preflight] %w", err)}
	}
	if cfg.PreflightOnly {
		a.logf("preflight", "passed; nothing changed (--preflight-only)")
		return nil
	}
	for _, st := range a.steps() {
		if st.once && a.rec.done(st.id) {
			continue
		}
		if err := st.run(ctx); err != nil {
			return fmt.Errorf("[%s] %w; the backup and its record are in %s (snapshift node rollback puts them back)", st.phase, err, filepath.Join(cfg.Root, a.backup))
		}
		failpointStepDone()
		a.rec.finish(st.id)
		if err := a.saveRecord(a.backup, a.rec); err != nil {
			return fmt.Errorf("[%s] recording it in %s: %w", st.phase, filepath.Join(a.backup, RecordFile), err)
		}
	}
	a.logf("apply", "done: %s runs the bundle's control plane (backup in %s)", b.node.Name, a.backup)
	return nil
}

// preflight checks everything before the first change.
func (a *applyRun) preflight(ctx context.Context) error {
	if err := a.checkHost(); err != nil {
		return err
	}
	if err := a.b.verify(); err != nil {
		return err
	}
	a.logf("preflight", "every file of node %s and etcd member %s matches report.json", a.b.node.Name, a.b.node.EtcdMember)
	for _, tool := range []string{"systemctl", "crictl", "ip"} {
		if _, err := lookPath(tool); err != nil {
			return fmt.Errorf("%s not found in PATH: %w", tool, err)
		}
	}
	if a.rec != nil {
		a.logf("preflight", "resuming: %s records the steps done (%s)", filepath.Join(a.backup, RecordFile), doneList(a.rec))
		return nil
	}
	return a.checkSpace()
}

// checkHost refuses to run on another node: the node's advertise address
// must be an address of this host (it can be bound). A hostname that
// differs from the node name is only reported (kubelets may override it).
func (a *applyRun) checkHost() error {
	addr := a.b.node.AdvertiseAddress
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return fmt.Errorf("this host does not have node %s's address %s (%v): run this on %s", a.b.node.Name, addr, err, a.b.node.Name)
	}
	l.Close()
	if hn, err := os.Hostname(); err == nil && !strings.EqualFold(hn, a.b.node.Name) {
		a.logf("preflight", "note: hostname %q is not the node name %q (fine if the kubelet runs with --hostname-override)", hn, a.b.node.Name)
	}
	a.logf("preflight", "host has %s's address %s", a.b.node.Name, addr)
	return nil
}

// checkSpace: the copies, the new etcd member, and the old data dir when
// it cannot be renamed into the backup (another file system), must fit.
func (a *applyRun) checkSpace() error {
	var need int64
	for _, p := range []string{KubernetesDir, KubeletConfig, KubeletPKI} {
		n, err := treeSize(a.path(p))
		if err != nil {
			return err
		}
		need += n
	}
	member, err := treeSize(a.b.memberDir())
	if err != nil {
		return err
	}
	need += member
	free, err := freeBytes(a.path(BackupRoot))
	if err != nil {
		return err
	}
	if etcdFree, err := freeBytes(a.path(a.b.op.EtcdDataDir)); err == nil && etcdFree != free {
		n, _ := treeSize(a.path(a.b.op.EtcdDataDir)) // may be another file system: a copy, not a rename
		need += n
	}
	if uint64(need+need/10) > free {
		return fmt.Errorf("%d bytes free under %s, the backup and the new etcd member need %d (+10%%)", free, BackupRoot, need)
	}
	a.logf("preflight", "disk: %d bytes needed, %d free", need, free)
	return nil
}
