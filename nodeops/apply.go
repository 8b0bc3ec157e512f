package nodeops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// Its Result, returned with any error, says which steps ran and how long
// each phase took.
func Apply(ctx context.Context, cfg Config) (*Result, error) {
	t := begin("apply", &cfg)
	err := apply(ctx, &cfg, t)
	return t.finish(err), err
}

func apply(ctx context.Context, cfg *Config, t *timing) error {
	b, err := openBundle(cfg)
	if err != nil {
		return err
	}
	a := &applyRun{host: &host{cfg: cfg}, b: b, backup: backupDir(b.node.Name, b.reportSum)}
	t.res.Backup = a.backup
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
	if err := t.do(StepPreflight, "preflight", func() error { return a.preflight(ctx) }); err != nil {
		return refused{err}
	}
	if cfg.PreflightOnly {
		t.res.Outcome = OutcomePreflightPassed
		a.logf("preflight", "passed; nothing changed (--preflight-only)")
		return nil
	}
	unlock, err := a.lock(b.node.Name)
	if err != nil {
		return err
	}
	defer unlock()
	if again, err := a.loadRecord(a.backup); err != nil {
		return err
	} else if (again == nil) != (a.rec == nil) || (again != nil && (again.RolledBack || len(again.Steps) != len(a.rec.Steps))) {
		return fmt.Errorf("another snapshift node operation changed %s while this one waited for it: run apply again", filepath.Join(a.backup, RecordFile))
	}
	for _, st := range a.steps() {
		if st.once && a.rec.done(st.id) {
			t.skip(st.id, st.phase)
			continue
		}
		err := t.do(st.id, st.phase, func() error {
			if err := st.run(ctx); err != nil {
				return fmt.Errorf("[%s] %w; the backup and its record are in %s (snapshift node rollback puts them back)", st.phase, err, filepath.Join(cfg.Root, a.backup))
			}
			failpointStepDone()
			a.rec.finish(st.id)
			if err := a.saveRecord(a.backup, a.rec); err != nil {
				return fmt.Errorf("[%s] recording it in %s: %w", st.phase, filepath.Join(a.backup, RecordFile), err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if cfg.StopOnly {
		t.res.Outcome = OutcomeStopped
		a.logf("apply", "stopped: %s's old control plane is down and backed up in %s; once every control-plane node is stopped, run node apply again without --stop-only", b.node.Name, a.backup)
		return nil
	}
	if a.rec.Applied == nil {
		now := cfg.Now().UTC()
		a.rec.Applied = &now
		if err := a.saveRecord(a.backup, a.rec); err != nil {
			return err
		}
	}
	a.logf("apply", "done: %s runs the bundle's control plane (backup in %s)", b.node.Name, a.backup)
	return nil
}
