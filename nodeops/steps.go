package nodeops

import (
	"context"
	"strings"
)

// Step is one step of a node operation. Apply's, but StepPreflight, are
// recorded in backup.json; rollback's and confirm's are only reported
// (Result).
type Step string

// StepPreflight: apply's checks (never recorded: they run on
// every apply).
const StepPreflight Step = "preflight"

// Apply's steps, in order (applySteps).
const (
	StepBackup      Step = "backup"
	StepStopPods    Step = "static-pods-stopped"
	StepMoveEtcd    Step = "etcd-moved"
	StepInstallEtcd Step = "etcd-installed"
	StepInstall     Step = "installed"
	StepCNI         Step = "cni-cleaned"
	// StepPeers: no peer URL of the bundle answers as an old member.
	StepPeers  Step = "peers-checked"
	StepStart  Step = "kubelet-started"
	StepHealth Step = "healthy"
)

// applyStep is one step of apply: what it records, the phase its lines
// and errors carry, and whether it runs once (skipped when the record
// says it finished) or on every apply (it is safe to repeat).
type applyStep struct {
	id    Step
	phase string
	once  bool
	run   func(context.Context) error
}

// steps are apply's steps, in order; after each one backup.json records
// it (the first one writes backup.json).
func (a *applyRun) steps() []applyStep {
	s := []applyStep{
		{StepBackup, "backup", true, a.doBackup},
	}
	if a.cfg.RollbackAfter > 0 {
		s = append(s, applyStep{StepArmed, "deadline", true, a.armDeadline})
	}
	s = append(s, []applyStep{
		{StepStopPods, "stop", true, func(ctx context.Context) error {
			if err := a.stopStaticPods(ctx, stoppedDir); err != nil || !a.b.op.CAChanged {
				return err
			}
			return a.stopOldCAContainers(ctx)
		}},
		{StepMoveEtcd, "stop", true, func(context.Context) error { return a.backupMove(a.backup, a.rec, a.b.op.EtcdDataDir) }},
	}...)
	if a.cfg.StopOnly {
		return s
	}
	s = append(s, []applyStep{
		{StepInstallEtcd, "install", true, a.installEtcd},
		{StepInstall, "install", false, a.install},
		{StepCNI, "cni", false, func(ctx context.Context) error { return a.cleanCNI(ctx, a.b.op.CNI) }},
		{StepPeers, "peers", false, a.checkNoOldPeers},
		{StepStart, "start", false, func(ctx context.Context) error { return a.systemctl(ctx, "start") }},
	}...)
	if !a.cfg.SkipHealth {
		s = append(s, applyStep{StepHealth, "health", false, func(ctx context.Context) error { return a.gates(ctx, len(a.b.report.Nodes), a.b.newCluster()) }})
	}
	return s
}

// doneList names the steps r records, in order.
func doneList(r *Record) string {
	if r == nil || len(r.Steps) == 0 {
		return "none"
	}
	var out []string
	for _, s := range r.Steps {
		out = append(out, string(s))
	}
	return strings.Join(out, ", ")
}
