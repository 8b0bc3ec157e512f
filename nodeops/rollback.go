package nodeops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// rollbackDir is where rollback moves the bundle's manifests to stop the
// new static pods.
const rollbackDir = "/etc/kubernetes/manifests.snapshift-rollback"

// Rollback puts back every path apply's backup.json records, byte for byte,
// and restarts the old control plane.
func Rollback(ctx context.Context, cfg Config) error {
	b, err := openBundle(&cfg)
	if err != nil {
		return err
	}
	h := &host{cfg: &cfg}
	dir := backupDir(b.node.Name, b.reportSum)
	rec, err := h.loadRecord(dir)
	if err != nil {
		return err
	}
	if rec == nil || !rec.Done[stepBackup] {
		return refused{fmt.Errorf("no backup of this bundle on this node (%s): apply never got as far as backing up, nothing to roll back", filepath.Join(dir, RecordFile))}
	}
	if !rec.Done["rolled-back"] {
		if err := h.stopStaticPods(ctx, rollbackDir); err != nil {
			return fmt.Errorf("[stop] %w", err)
		}
		if err := h.restore(dir, rec); err != nil {
			return fmt.Errorf("[restore] %w", err)
		}
		rec.Done["rolled-back"] = true
		if err := h.saveRecord(dir, rec); err != nil {
			return err
		}
	}
	if err := h.systemctl(ctx, "start"); err != nil {
		return fmt.Errorf("[start] %w", err)
	}
	if !cfg.SkipHealth {
		if _, err := os.Stat(h.path(filepath.Join(ManifestsDir, "etcd.yaml"))); err == nil {
			if err := h.gates(ctx, 0); err != nil {
				return fmt.Errorf("[health] %w", err)
			}
		} else {
			h.logf("health", "the old node has no etcd manifest: no health gate")
		}
	}
	h.logf("rollback", "done: %s runs its old control plane again (the backup stays in %s)", b.node.Name, dir)
	return nil
}

// restore puts every recorded path back, the last backed up first: a
// copied tree replaces what is there, a moved one is renamed back, an
// absent one is removed. Each entry is done once (recorded).
func (h *host) restore(dir string, rec *Record) error {
	for i := len(rec.Entries) - 1; i >= 0; i-- {
		e := rec.Entries[i]
		key := "restored " + e.Path
		if rec.Done[key] {
			continue
		}
		target := h.path(e.Path)
		if err := os.RemoveAll(target); err != nil {
			return err
		}
		switch e.How {
		case Copied:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := copyTree(filepath.Join(h.path(dir), e.Backup), target); err != nil {
				return fmt.Errorf("restoring %s: %w", e.Path, err)
			}
		case Moved:
			if err := moveTree(filepath.Join(h.path(dir), e.Backup), target); err != nil {
				return fmt.Errorf("restoring %s: %w", e.Path, err)
			}
		case Absent:
		default:
			return fmt.Errorf("%s: unknown backup kind %q for %s", RecordFile, e.How, e.Path)
		}
		h.logf("restore", "%s %s", e.Path, map[string]string{Copied: "restored from its copy", Moved: "moved back", Absent: "removed (it did not exist before)"}[e.How])
		rec.Done[key] = true
		if err := h.saveRecord(dir, rec); err != nil {
			return err
		}
	}
	return nil
}
