package nodeops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/fsutil"
)

// rollbackDir is where rollback moves the bundle's manifests to stop the
// new static pods.
const rollbackDir = "/etc/kubernetes/manifests.snapshift-rollback"

// Rollback's own steps (it also runs StepStopPods, StepCNI, StepPeers,
// StepStart and StepHealth). Reported in its Result, not recorded: its
// progress is backup.json's Restored and RolledBack.
const (
	// StepDisarmed: apply --rollback-after's timer removed.
	StepDisarmed Step = "rollback-disarmed"
	// StepRestored: every recorded path put back.
	StepRestored Step = "restored"
	// StepAPIServerBack: kube-apiserver.yaml put back from the copy made
	// before the snapshot, when the restored manifests lack it.
	StepAPIServerBack Step = "apiserver-manifest-back"
)

// Rollback puts back every path apply's backup.json records, byte for byte,
// and restarts the old control plane. Its Result, returned with any
// error, says which steps ran and how long each phase took.
func Rollback(ctx context.Context, cfg Config) (*Result, error) {
	t := begin("rollback", &cfg)
	err := func() error {
		s, err := openBackedUp(&cfg)
		if err != nil {
			return err
		}
		t.res.Backup = s.dir
		if s.rec == nil {
			return refused{fmt.Errorf("no backup of this bundle on this node (%s): apply never got as far as backing up, nothing to roll back", filepath.Join(s.dir, RecordFile))}
		}
		defer s.unlock()
		return rollback(ctx, s.h, s.b, s.dir, s.rec, t)
	}()
	return t.finish(err), err
}

// rollback is Rollback with the node's lock held: the deadline's timer
// removed first, then every recorded path put back.
func rollback(ctx context.Context, h *host, b *nodeBundle, dir string, rec *Record, t *timing) error {
	cfg := h.cfg
	if rec.RollbackUnit != "" {
		if err := t.do(StepDisarmed, "deadline", func() error {
			h.disarm(ctx, rec, "rolling back")
			return h.saveRecord(dir, rec)
		}); err != nil {
			return err
		}
	}
	// A second stop would move the old manifests a killed run put back.
	if rec.RolledBack || rec.Restored > 0 {
		t.skip(StepStopPods, "stop")
	} else if err := t.do(StepStopPods, "stop", func() error { return h.stopStaticPods(ctx, rollbackDir) }); err != nil {
		return fmt.Errorf("[stop] %w", err)
	}
	if rec.RolledBack {
		t.skip(StepRestored, "restore")
	} else if err := t.do(StepRestored, "restore", func() error {
		if err := h.unrecorded(dir, rec, b); err != nil {
			return fmt.Errorf("[restore] %w", err)
		}
		if err := h.restore(dir, rec); err != nil {
			return fmt.Errorf("[restore] %w", err)
		}
		rec.RolledBack = true
		return h.saveRecord(dir, rec)
	}); err != nil {
		return err
	}
	// Also on a run again after it, as it is idempotent.
	if err := t.do(StepAPIServerBack, "restore", h.apiserverBack); err != nil {
		return fmt.Errorf("[restore] %w", err)
	}
	// The new cluster's CNI host state (cni0 with an address of the new pod
	// range, its subnet.env) would refuse the old range's pods: "cni0 already
	// has an IP address different from 10.244.0.1/24", as the lab saw.
	// Removed as apply removes the old one; the CNI's agent recreates it.
	if err := t.do(StepCNI, "cni", func() error { return h.cleanCNI(ctx, b.op.CNI) }); err != nil {
		return fmt.Errorf("[cni] %w", err)
	}
	if err := t.do(StepPeers, "peers", func() error { return h.waitNoRestoredPeers(ctx, b) }); err != nil {
		return fmt.Errorf("[peers] %w", err)
	}
	if err := t.do(StepStart, "start", func() error { return h.systemctl(ctx, "start") }); err != nil {
		return fmt.Errorf("[start] %w", err)
	}
	if !cfg.SkipHealth {
		if _, err := os.Stat(h.path(filepath.Join(ManifestsDir, "etcd.yaml"))); err == nil {
			if err := t.do(StepHealth, "health", func() error { return h.gates(ctx, 0, b.oldCluster()) }); err != nil {
				return fmt.Errorf("[health] %w", err)
			}
		} else {
			t.skip(StepHealth, "health")
			h.logf("health", "the old node has no etcd manifest: no health gate")
		}
	}
	h.logf("rollback", "done: %s runs its old control plane again (the backup stays in %s)", b.node.Name, dir)
	return nil
}

// unrecorded adds to rec what a killed apply did after its last record:
// the etcd data dir moved into the backup is recorded as moved (so that
// it is put back), and the temporaries of an install are removed.
func (h *host) unrecorded(dir string, rec *Record, b *nodeBundle) error {
	if rec.Restored == 0 && !rec.done(StepMoveEtcd) {
		there, err := exists(h.path(b.op.EtcdDataDir))
		if err != nil {
			return err
		}
		// A mount point stays: its contents were being moved when a
		// backup of them exists.
		started := !there
		if there {
			mount, err := isMountPoint(h.path(b.op.EtcdDataDir))
			if err != nil {
				return err
			}
			if mount {
				if started, err = exists(filepath.Join(h.path(dir), backupName(b.op.EtcdDataDir))); err != nil {
					return err
				}
			}
		}
		if started { // finished, then put back by restore
			if err := h.backupMove(dir, rec, b.op.EtcdDataDir); err != nil {
				return err
			}
			rec.finish(StepMoveEtcd)
		}
	}
	paths := []string{b.op.EtcdDataDir, KubeletConfig}
	for _, f := range b.files() {
		paths = append(paths, f.Host)
	}
	for _, p := range paths {
		if ok, _ := exists(h.path(filepath.Dir(p))); !ok {
			continue
		}
		if _, err := fsutil.CleanFor(h.path(p)); err != nil {
			return err
		}
	}
	return nil
}

// restore puts every recorded path back, the last backed up first: a
// copied tree replaces what is there, a moved one is renamed back, an
// absent one is removed. Each entry is done once: the record counts them.
func (h *host) restore(dir string, rec *Record) error {
	for rec.Restored < len(rec.Entries) {
		if err := h.restoreEntry(dir, rec.Entries[len(rec.Entries)-1-rec.Restored]); err != nil {
			return err
		}
		failpointStepDone()
		rec.Restored++
		if err := h.saveRecord(dir, rec); err != nil {
			return err
		}
	}
	return nil
}

// restoreEntry puts one recorded path back.
func (h *host) restoreEntry(dir string, e Entry) error {
	target, backup := h.path(e.Path), filepath.Join(h.path(dir), e.Backup)
	if e.How == Moved {
		// A run killed after the rename back left the backup gone and the
		// path in place: done.
		if ok, err := exists(backup); err != nil || !ok {
			if there, _ := exists(target); there {
				return err
			}
		}
	}
	// A copied directory that is a mount point now (the lab bind-mounts
	// /etc/kubernetes; so may a node that keeps it on its own volume)
	// cannot be removed (EBUSY): its contents are put back instead, as for
	// moved-contents.
	mountedDir := false
	if e.How == Copied {
		if st, err := os.Lstat(target); err == nil && st.IsDir() {
			if mountedDir, err = isMountPoint(target); err != nil {
				return fmt.Errorf("restoring %s: %w", e.Path, err)
			}
		}
	}
	if e.How == MovedContents || mountedDir {
		// The path is a mount point: emptied, then the backup's entries
		// copied back and its mode set to the backup directory's (the backup keeps them, so a killed run does it
		// again from the start).
		if err := restoreContents(target, backup); err != nil {
			return fmt.Errorf("restoring %s: %w", e.Path, err)
		}
		h.logf("restore", "%s (a mount point) has its old contents again, copied from %s", e.Path, filepath.Join(dir, e.Backup))
		return nil
	}
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	switch e.How {
	case Copied:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := copyExact(backup, target); err != nil {
			return fmt.Errorf("restoring %s: %w", e.Path, err)
		}
	case Moved:
		if err := moveTree(backup, target); err != nil {
			return fmt.Errorf("restoring %s: %w", e.Path, err)
		}
	case Absent:
	default:
		return fmt.Errorf("%s: unknown backup kind %q for %s", RecordFile, e.How, e.Path)
	}
	h.logf("restore", "%s %s", e.Path, map[string]string{Copied: "restored from its copy", Moved: "moved back", Absent: "removed (it did not exist before)"}[e.How])
	return nil
}

// restoreContents empties directory target (a mount point, kept) and
// copies backup's entries into it, then gives it backup's mode.
func restoreContents(target, backup string) error {
	if err := clearDir(target); err != nil {
		return err
	}
	ents, err := os.ReadDir(backup)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if err := copyExact(filepath.Join(backup, ent.Name()), filepath.Join(target, ent.Name())); err != nil {
			return err
		}
	}
	st, err := os.Stat(backup)
	if err != nil {
		return err
	}
	return os.Chmod(target, st.Mode().Perm())
}

// apiserverBack puts kube-apiserver.yaml back into the manifests directory
// from the copy the runbook has the operator make before the snapshot
// (bundle.ManifestsBefore), when the restored directory lacks it: the
// runbook took it out before the snapshot, so apply's backup, made later,
// has no kube-apiserver, and the old control plane would come back
// without one (the lab found rollback's health gate waiting for it).
func (h *host) apiserverBack() error {
	const name = "kube-apiserver.yaml"
	dst := h.path(filepath.Join(ManifestsDir, name))
	if ok, err := exists(dst); err != nil || ok {
		return err
	}
	src := h.path(filepath.Join(bundle.ManifestsBefore, name))
	if ok, err := exists(src); err != nil || !ok {
		return err
	}
	if err := copyExact(src, dst); err != nil {
		return fmt.Errorf("putting %s back: %w", name, err)
	}
	h.logf("restore", "%s put back from %s (taken out before the snapshot)", filepath.Join(ManifestsDir, name), bundle.ManifestsBefore)
	return nil
}
