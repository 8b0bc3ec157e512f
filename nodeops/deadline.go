package nodeops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The deadline that rolls back (`node apply --rollback-after`): apply arms
// a transient systemd timer, right after its backup, that runs `snapshift
// node rollback-if-unconfirmed` at the deadline. `snapshift node confirm`,
// run by the operator once the cluster is checked healthy, records the
// confirmation in backup.json and removes the timer; rollback (either
// one) removes it too. systemd runs the timer, not the operator's shell:
// it survives the SSH session that ran apply. It does not survive a
// reboot (transient units live in /run): after a reboot before the
// deadline, roll back by hand or confirm.
//
// Apply, rollback, confirm and rollback-if-unconfirmed on one node hold a
// lock (flock on /run/snapshift/<node>.lock) while they change the node or
// its record: a deadline that passes while apply still runs (a slow
// health gate) rolls back once apply has returned, never beside it.

// StepArmed is the step that armed the deadline's timer.
const StepArmed Step = "rollback-armed"

// rollbackUnit is the transient unit's name; the timer is unit + ".timer".
func rollbackUnit(node string) string { return "snapshift-rollback-" + node }

// lockDir holds the per-node locks (a host path; tmpfs on a real node).
const lockDir = "/run/snapshift"

// lock takes the node's lock, waiting for another snapshift node
// operation to finish; the returned function releases it.
func (h *host) lock(node string) (func(), error) {
	if err := os.MkdirAll(h.path(lockDir), 0o700); err != nil {
		return nil, err
	}
	p := filepath.Join(h.path(lockDir), node+".lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		h.logf("lock", "another snapshift node operation on %s holds %s: waiting for it to end", node, filepath.Join(lockDir, node+".lock"))
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	return func() { f.Close() }, nil
}

// armDeadline starts the timer and records it (apply's StepArmed).
func (a *applyRun) armDeadline(ctx context.Context) error {
	exe := a.cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding snapshift's own path for the timer: %w", err)
		}
	}
	dir, err := filepath.Abs(a.b.dir)
	if err != nil {
		return err
	}
	unit := rollbackUnit(a.b.node.Name)
	// A killed run may have armed it before recording it, and a failed
	// rollback's service stays loaded (no --collect: its failure stays in
	// systemctl status): clear both, or systemd-run refuses the name.
	a.run(ctx, "systemctl", "stop", unit+".timer")
	a.run(ctx, "systemctl", "reset-failed", unit+".timer", unit+".service")
	deadline := a.cfg.Now().Add(a.cfg.RollbackAfter).UTC().Truncate(time.Second)
	args := []string{
		"--unit=" + unit,
		"--description=snapshift: roll back node " + a.b.node.Name + " at " + deadline.Format(time.RFC3339) + " unless confirmed",
		"--on-active=" + strconv.FormatInt(int64(a.cfg.RollbackAfter.Round(time.Second)/time.Second), 10) + "s",
		"--timer-property=AccuracySec=1s",
		"--setenv=PATH=" + os.Getenv("PATH"), // the same crictl, systemctl and ip
		exe, "node", "rollback-if-unconfirmed", "--bundle", dir, "--node", a.b.node.Name, "--root", a.cfg.Root, "--timeout", a.cfg.Timeout.String(),
	}
	if _, err := a.run(ctx, "systemd-run", args...); err != nil {
		return fmt.Errorf("arming the rollback deadline: %w", err)
	}
	a.rec.RollbackDeadline = &deadline
	a.rec.RollbackUnit = unit + ".timer"
	a.logf("deadline", "%s rolls this node back at %s (in %s) unless `snapshift node confirm --bundle %s --node %s` runs before", a.rec.RollbackUnit, deadline.Format(time.RFC3339), a.cfg.RollbackAfter, dir, a.b.node.Name)
	return nil
}

// disarm stops the recorded timer, if any, and forgets it (the caller
// saves the record).
func (h *host) disarm(ctx context.Context, rec *Record, why string) {
	if rec.RollbackUnit == "" {
		return
	}
	if _, err := h.run(ctx, "systemctl", "stop", rec.RollbackUnit); err != nil {
		// Not loaded: it fired already, or the node rebooted.
		h.logf("deadline", "%s: %v (not loaded: nothing to remove)", rec.RollbackUnit, err)
	} else {
		h.logf("deadline", "%s removed (%s)", rec.RollbackUnit, why)
	}
	rec.RollbackUnit = ""
}

// StepConfirmed: node confirm recorded the migration checked healthy (and
// removed the deadline's timer). Reported in confirm's Result; backup.json
// records it as Confirmed.
const StepConfirmed Step = "confirmed"

// Confirm records on the node that the migration was checked healthy
// (`snapshift node confirm`, after `cluster check` passed) and removes the
// rollback deadline's timer: the node stays on the bundle's control plane.
func Confirm(ctx context.Context, cfg Config) (*Result, error) {
	t := begin("confirm", &cfg)
	err := confirm(ctx, &cfg, t)
	return t.finish(err), err
}

func confirm(ctx context.Context, cfg *Config, t *timing) error {
	s, err := openBackedUp(cfg)
	if err == nil {
		t.res.Backup = s.dir
	}
	if err != nil || s.rec == nil {
		if err == nil {
			err = refused{fmt.Errorf("no apply of this bundle on this node (%s): nothing to confirm", filepath.Join(s.dir, RecordFile))}
		}
		return err
	}
	defer s.unlock()
	b, h, dir, rec := s.b, s.h, s.dir, s.rec
	switch {
	case rec.RolledBack:
		return refused{fmt.Errorf("this node was rolled back (%s): nothing to confirm; apply again to migrate it", filepath.Join(dir, RecordFile))}
	case rec.Applied == nil:
		return refused{fmt.Errorf("apply has not finished on this node (steps done: %s): run node apply to the end, or node rollback", doneList(rec))}
	}
	if rec.Confirmed != nil && rec.RollbackUnit == "" {
		t.skip(StepConfirmed, "confirm")
		h.logf("confirm", "%s was confirmed at %s already (backup in %s)", b.node.Name, rec.Confirmed.Format(time.RFC3339), dir)
		return nil
	}
	return t.do(StepConfirmed, "confirm", func() error {
		now := cfg.Now().UTC()
		if rec.Confirmed == nil {
			rec.Confirmed = &now
		}
		if d := rec.RollbackDeadline; d != nil && now.After(*d) {
			h.logf("confirm", "note: the deadline %s has passed, but no rollback ran: confirmed all the same", d.Format(time.RFC3339))
		}
		h.disarm(ctx, rec, "confirmed")
		if err := h.saveRecord(dir, rec); err != nil {
			return err
		}
		h.logf("confirm", "%s confirmed at %s: it keeps the bundle's control plane (backup in %s)", b.node.Name, rec.Confirmed.Format(time.RFC3339), dir)
		return nil
	})
}

// RollbackIfUnconfirmed is what the deadline's timer runs: a rollback
// unless the node's record holds a confirmation (or a rollback already).
// Its Result is rollback's, or OutcomeNothingToDo.
func RollbackIfUnconfirmed(ctx context.Context, cfg Config) (*Result, error) {
	t := begin("rollback-if-unconfirmed", &cfg)
	err := rollbackIfUnconfirmed(ctx, &cfg, t)
	return t.finish(err), err
}

func rollbackIfUnconfirmed(ctx context.Context, cfg *Config, t *timing) error {
	s, err := openBackedUp(cfg)
	if err != nil {
		return err
	}
	t.res.Backup = s.dir
	if s.rec == nil {
		t.res.Outcome = OutcomeNothingToDo
		s.h.logf("deadline", "no backup of this bundle on this node: nothing to roll back")
		return nil
	}
	defer s.unlock()
	b, h, dir, rec := s.b, s.h, s.dir, s.rec
	switch {
	case rec.Confirmed != nil:
		t.res.Outcome = OutcomeNothingToDo
		h.logf("deadline", "confirmed at %s: nothing to roll back", rec.Confirmed.Format(time.RFC3339))
		return nil
	case rec.RolledBack:
		t.res.Outcome = OutcomeNothingToDo
		h.logf("deadline", "rolled back already")
		return nil
	}
	h.logf("deadline", "the deadline passed and %s was not confirmed (steps done: %s): rolling back", b.node.Name, doneList(rec))
	return rollback(ctx, h, b, dir, rec, t)
}

// backedUp is a node operation on a bundle apply has backed up: the
// bundle, the host, the backup directory and its record, read again under
// the node's lock (what a run that held it recorded).
type backedUp struct {
	b      *nodeBundle
	h      *host
	dir    string
	rec    *Record
	unlock func()
}

// openBackedUp opens the bundle and the node's record and takes the node's
// lock. When apply never got as far as its backup, rec is nil and no lock
// is held (dir and h are set, for the caller's message).
func openBackedUp(cfg *Config) (*backedUp, error) {
	b, err := openBundle(cfg)
	if err != nil {
		return nil, err
	}
	s := &backedUp{b: b, h: &host{cfg: cfg}, dir: backupDir(b.node.Name, b.reportSum)}
	rec, err := s.h.loadRecord(s.dir)
	if err != nil || !rec.done(StepBackup) {
		return s, err
	}
	if s.unlock, err = s.h.lock(b.node.Name); err != nil {
		return nil, err
	}
	if s.rec, err = s.h.loadRecord(s.dir); err != nil {
		s.unlock()
		return nil, err
	}
	return s, nil
}
