package nodeops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// staticPods are the manifests a kubeadm control-plane node's
// /etc/kubernetes/manifests holds: one of them proves the root is one.
var staticPods = []string{"etcd.yaml", "kube-apiserver.yaml"}

// preflightFailed is every check preflight failed: apply runs them all
// before it refuses, so that one run names everything to fix, on one line
// (the CLI's errors are one line), numbered when there are several.
type preflightFailed []string

func (f preflightFailed) Error() string {
	if len(f) == 1 {
		return "[preflight] " + f[0]
	}
	items := make([]string, len(f))
	for i, m := range f {
		items[i] = fmt.Sprintf("(%d) %s", i+1, m)
	}
	return fmt.Sprintf("[preflight] %d checks failed, nothing was changed: %s", len(f), strings.Join(items, "; "))
}

// preflight checks everything before the first change, every check even
// after one failed, then says what apply will back up, move and install
// and what rollback restores.
func (a *applyRun) preflight(ctx context.Context) error {
	var failed preflightFailed
	check := func(err error) bool {
		if err != nil {
			failed = append(failed, err.Error())
		}
		return err == nil
	}
	check(a.checkHost())
	if check(a.b.verify()) {
		a.logf("preflight", "every file of node %s and etcd member %s matches report.json", a.b.node.Name, a.b.node.EtcdMember)
	}
	if found, err := a.b.checkRunbook(); check(err) && found {
		a.logf("preflight", "runbook.json is the one snapshift rebuild wrote with this report.json")
	}
	// What apply does with each tool, and what provides it, for the line
	// that says it is missing (not exec's "executable file not found").
	toolUse := map[string]string{"systemctl": "stop and start the kubelet", "crictl": "stop the old static pods' containers", "ip": "remove the old CNI's links and routes"}
	toolPackage := map[string]string{"systemctl": "systemd", "crictl": "cri-tools (crictl)", "ip": "iproute2"}
	tools := []string{"systemctl", "crictl", "ip"}
	arm := a.cfg.RollbackAfter > 0 && !a.rec.done(StepArmed)
	if arm {
		tools = append(tools, "systemd-run") // --rollback-after's timer
	}
	found := true
	for _, tool := range tools {
		if _, err := lookPath(tool); err != nil && tool == "systemd-run" {
			found = check(fmt.Errorf("systemd-run not found in PATH, and --rollback-after's timer needs it: run apply on a host booted with systemd, or without --rollback-after")) && found
		} else if err != nil {
			found = check(fmt.Errorf("%s not found in PATH, and apply needs it to %s: install %s on this node, or put it on PATH", tool, toolUse[tool], toolPackage[tool])) && found
		}
	}
	if arm && found {
		check(a.checkManager(ctx))
	}
	if a.rec != nil {
		// A run stopped after the backup: the root has changed since, and
		// the record, not the root, says what is backed up.
		a.logf("preflight", "resuming: %s records the steps done (%s)", filepath.Join(a.backup, RecordFile), doneList(a.rec))
		check(a.checkInstallSpace())
		if len(failed) > 0 {
			return failed
		}
		a.describeRecord()
		return nil
	}
	wrong := a.checkRoot()
	for _, err := range wrong {
		check(err)
	}
	if len(wrong) == 0 {
		check(a.checkSpace())
	}
	if len(failed) > 0 {
		return failed
	}
	return a.describe()
}

// checkManager asks systemd, through the systemctl that systemd-run goes
// with, for its version: --rollback-after's timer needs a running systemd
// to hold it (a container or a host booted with another init has
// systemctl and systemd-run but no manager: systemd-run would fail only
// after the backup). It says which manager answered.
func (a *applyRun) checkManager(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "systemctl", "show", "--property=Version", "--value")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var lines []string
		for _, l := range strings.Split(stderr.String(), "\n") {
			if l = strings.TrimSuffix(strings.TrimSpace(l), "."); l != "" {
				lines = append(lines, l)
			}
		}
		why := strings.Join(lines, "; ")
		if why == "" {
			why = err.Error()
		}
		return fmt.Errorf("--rollback-after needs a running systemd to hold its timer, and systemctl reaches none (%s): run apply on a host booted with systemd, or without --rollback-after", why)
	}
	version := ""
	if v := strings.TrimSpace(string(out)); v != "" {
		version = " " + v
	}
	a.logf("preflight", "--rollback-after: systemd%s answers; it holds the timer", version)
	return nil
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

// checkRoot refuses a root that is not a kubeadm control-plane node's: it
// must hold /etc/kubernetes with an etcd or kube-apiserver static pod in
// manifests/, and the etcd data dir report.json names with its member/
// (a wrong --root, or the wrong host, has neither: apply would then back
// up nothing and rollback could not restore a control plane). Both are
// checked, and each failure returned.
func (a *applyRun) checkRoot() []error {
	var errs []error
	where := ""
	if a.cfg.Root != "/" {
		where = " under --root " + a.cfg.Root
	}
	hint := "a wrong --root, or not control-plane node " + a.b.node.Name
	found := ""
	for _, m := range staticPods {
		if ok, err := exists(a.path(filepath.Join(ManifestsDir, m))); err != nil {
			errs = append(errs, err)
		} else if ok && found == "" {
			found = m
		}
	}
	// A recovery (report.json's operation.recovery): the control plane
	// was lost, so what is missing is noted, not refused; what is there is
	// backed up as on any node.
	recovery := a.b.op.Recovery
	var lost []string
	switch k, err := isDir(a.path(KubernetesDir)); {
	case err != nil:
		errs = append(errs, err)
	case !k && recovery:
		lost = append(lost, "no "+KubernetesDir)
	case !k:
		errs = append(errs, fmt.Errorf("no %s%s (%s)", KubernetesDir, where, hint))
	case found == "" && recovery:
		lost = append(lost, "no static pod in "+ManifestsDir)
	case found == "":
		errs = append(errs, fmt.Errorf("%s%s holds no %s: no control plane runs from it (%s)", ManifestsDir, where, strings.Join(staticPods, " or "), hint))
	}
	if err := a.checkHostEtcd(where); err != nil {
		errs = append(errs, err)
	}
	dataDir := a.b.op.EtcdDataDir
	member := false
	switch d, err := isDir(a.path(dataDir)); {
	case err != nil:
		errs = append(errs, err)
	case !d && recovery:
		lost = append(lost, "no etcd data dir "+dataDir)
	case !d:
		errs = append(errs, fmt.Errorf("no etcd data dir %s%s, where report.json says etcd keeps it (%s, or etcd's data dir is elsewhere on this node)", dataDir, where, hint))
	default:
		if m, err := isDir(a.path(filepath.Join(dataDir, "member"))); err != nil {
			errs = append(errs, err)
		} else if !m && recovery {
			lost = append(lost, "no etcd member in "+dataDir)
		} else if !m {
			errs = append(errs, fmt.Errorf("etcd data dir %s%s holds no member/: no etcd member to back up (%s)", dataDir, where, hint))
		} else {
			member = true
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(lost) > 0 {
		a.logf("preflight", "recovery: %s%s (the control plane was lost): nothing of it to stop; what is left is backed up", strings.Join(lost, ", "), where)
	}
	switch {
	case found != "" && member:
		a.logf("preflight", "%s has the static pod %s; %s holds an etcd member", ManifestsDir, found, dataDir)
	case member:
		a.logf("preflight", "%s holds an etcd member: it is moved into the backup", dataDir)
	}
	return nil
}

// isDir reports whether p is a directory (false when absent).
func isDir(p string) (bool, error) {
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil && st.IsDir(), err
}

// checkSpace: what apply writes must fit on each file system it writes
// to, in the order it writes (+10%): first the backup, the copies of
// /etc/kubernetes and the kubelet's files, and the old etcd data dir when
// it cannot be renamed into the backup (another mount: it is copied, then
// removed); then the new etcd member in the data dir, where the old one's
// bytes are free again once copied out. Checked per file system, so a
// small dedicated etcd disk is refused here and not by ENOSPC half way.
func (a *applyRun) checkSpace() error {
	var copies int64
	for _, p := range []string{KubernetesDir, KubeletConfig, KubeletPKI} {
		n, err := treeSize(a.path(p))
		if err != nil {
			return err
		}
		copies += n
	}
	member, err := treeSize(a.b.memberDir())
	if err != nil {
		return err
	}
	old, err := treeSize(a.path(a.b.op.EtcdDataDir))
	if err != nil {
		return err
	}
	backup, err := fileSystemOf(a.path(BackupRoot))
	if err != nil {
		return err
	}
	etcd, err := fileSystemOf(a.path(a.b.op.EtcdDataDir))
	if err != nil {
		return err
	}
	var space spaceNeeds
	copied := backup.mount != etcd.mount
	space.add(backup, BackupRoot, "the backup", copies)
	if copied { // copied into the backup, then removed from the data dir
		space.add(backup, BackupRoot, "the backup", old)
		space.add(etcd, a.b.op.EtcdDataDir, "", -old)
	}
	space.add(etcd, a.b.op.EtcdDataDir, "the new etcd member", member)
	return space.check(a)
}

// checkInstallSpace is checkSpace on a resumed apply (--stop-only ran, or
// a run stopped after the backup): the backup is made and the old data dir
// moved out, so only the new member is still to be written; it must fit in
// the data dir's file system.
func (a *applyRun) checkInstallSpace() error {
	if a.rec.done(StepInstallEtcd) || !a.rec.done(StepMoveEtcd) || a.cfg.StopOnly {
		return nil
	}
	member, err := treeSize(a.b.memberDir())
	if err != nil {
		return err
	}
	etcd, err := fileSystemOf(a.path(a.b.op.EtcdDataDir))
	if err != nil {
		return err
	}
	var space spaceNeeds
	space.add(etcd, a.b.op.EtcdDataDir, "the new etcd member", member)
	return space.check(a)
}

// spaceNeeds adds up, per file system, what apply writes to it (and frees)
// in the order it does: a file system must hold the most it holds at any
// point.
type spaceNeeds struct {
	order []uint64
	fs    map[uint64]*spaceNeed
}

type spaceNeed struct {
	fileSystem
	paths, what []string
	now, peak   int64
}

func (s *spaceNeeds) add(f fileSystem, path, what string, n int64) {
	if s.fs == nil {
		s.fs = map[uint64]*spaceNeed{}
	}
	d := s.fs[f.dev]
	if d == nil {
		d = &spaceNeed{fileSystem: f}
		s.fs[f.dev] = d
		s.order = append(s.order, f.dev)
	}
	if !slices.Contains(d.paths, path) {
		d.paths = append(d.paths, path)
	}
	if what != "" && !slices.Contains(d.what, what) {
		d.what = append(d.what, what)
	}
	d.now += n
	d.peak = max(d.peak, d.now)
}

func (s *spaceNeeds) check(a *applyRun) error {
	var short []string
	for _, dev := range s.order {
		d := s.fs[dev]
		need := d.peak + d.peak/10
		on := strings.Join(d.paths, " and ")
		if uint64(need) > d.free {
			verb := "needs"
			if len(d.what) > 1 {
				verb = "need"
			}
			if d.mount != on {
				on += " (mounted at " + d.mount + ")"
			}
			short = append(short, fmt.Sprintf("%s free on the file system of %s, %s %s %s (+10%%)",
				fsutil.FormatSize(int64(d.free)), on, strings.Join(d.what, " and "), verb, fsutil.FormatSize(d.peak)))
			continue
		}
		a.logf("preflight", "disk: %s needed, %s free on the file system of %s", fsutil.FormatSize(d.peak), fsutil.FormatSize(int64(d.free)), on)
	}
	if len(short) > 0 {
		return fmt.Errorf("%s: make room there (or give it a larger disk) and run apply again", strings.Join(short, "; "))
	}
	return nil
}

// describe says what apply will back up, move and install, and what
// rollback restores, from the same list the backup step uses.
func (a *applyRun) describe() error {
	paths, err := a.backupPaths()
	if err != nil {
		return err
	}
	var restores []string
	a.logf("preflight", "will back up into %s:", a.backup)
	for _, p := range paths {
		ok, err := exists(a.path(p))
		if err != nil {
			return err
		}
		if !ok {
			a.logf("preflight", "  %s: absent now (the bundle creates it)", p)
			restores = append(restores, p+" removed")
			continue
		}
		size, err := a.sizeOf(p)
		if err != nil {
			return err
		}
		a.logf("preflight", "  copy %s (%s) to %s", p, size, filepath.Join(a.backup, backupName(p)))
		restores = append(restores, p+" from its copy")
	}
	there, err := exists(a.path(a.b.op.EtcdDataDir))
	if err != nil {
		return err
	}
	size := ""
	if there {
		if size, err = a.sizeOf(a.b.op.EtcdDataDir); err != nil {
			return err
		}
	}
	if !there { // a recovery's node that lost it: rollback removes the new one
		a.logf("preflight", "  etcd data dir %s: absent now (the bundle creates it)", a.b.op.EtcdDataDir)
		restores = append(restores, a.b.op.EtcdDataDir+" removed")
	} else if mount, err := isMountPoint(a.path(a.b.op.EtcdDataDir)); err != nil {
		return err
	} else if mount {
		a.logf("preflight", "  move the contents of etcd data dir %s (a mount point: %s) to %s", a.b.op.EtcdDataDir, size, filepath.Join(a.backup, backupName(a.b.op.EtcdDataDir)))
		restores = append(restores, a.b.op.EtcdDataDir+"'s contents copied back")
	} else {
		a.logf("preflight", "  move etcd data dir %s (%s) to %s", a.b.op.EtcdDataDir, size, filepath.Join(a.backup, backupName(a.b.op.EtcdDataDir)))
		restores = append(restores, a.b.op.EtcdDataDir+" moved back")
	}
	member, err := treeSize(a.b.memberDir())
	if err != nil {
		return err
	}
	a.logf("preflight", "will install %d files of %s under %s, etcd member %s (%s) as %s", len(a.b.files()), a.b.node.Dir, KubernetesDir, a.b.node.EtcdMember, fsutil.FormatSize(member), a.b.op.EtcdDataDir)
	if a.b.op.CAChanged {
		old, _ := filepath.Glob(filepath.Join(a.path(KubeletPKI), "kubelet-client-*"))
		a.logf("preflight", "the CA changes: will move %d kubelet-client-*.pem from %s into the backup", len(old), KubeletPKI)
	}
	a.logf("preflight", "rollback (snapshift node rollback) restores %s, byte for byte, then starts the old control plane", strings.Join(reversed(restores), ", "))
	if d := a.cfg.RollbackAfter; d > 0 {
		a.logf("preflight", "--rollback-after %s: after the backup, the systemd timer %s.timer rolls this node back %s later unless `snapshift node confirm` runs before", d, rollbackUnit(a.b.node.Name), d)
	}
	return nil
}

// describeRecord says, when apply resumes, what the record backed up and
// what rollback restores.
func (a *applyRun) describeRecord() {
	var restores []string
	for i := len(a.rec.Entries) - 1; i >= 0; i-- {
		e := a.rec.Entries[i]
		switch e.How {
		case Copied:
			restores = append(restores, fmt.Sprintf("%s from its copy (%s)", e.Path, fsutil.FormatSize(e.Bytes)))
		case Moved:
			restores = append(restores, fmt.Sprintf("%s moved back (%s)", e.Path, fsutil.FormatSize(e.Bytes)))
		case MovedContents:
			restores = append(restores, fmt.Sprintf("%s's contents copied back (%s)", e.Path, fsutil.FormatSize(e.Bytes)))
		case Absent:
			restores = append(restores, e.Path+" removed")
		}
	}
	a.logf("preflight", "rollback (snapshift node rollback) restores %s, byte for byte, then starts the old control plane", strings.Join(restores, ", "))
	if d := a.rec.RollbackDeadline; d != nil && a.rec.RollbackUnit != "" {
		a.logf("preflight", "%s rolls this node back at %s unless `snapshift node confirm` runs before", a.rec.RollbackUnit, d.Format(time.RFC3339))
	}
}

// sizeOf is host path p's size and file count in words.
func (a *applyRun) sizeOf(p string) (string, error) {
	n, err := treeSize(a.path(p))
	if err != nil {
		return "", err
	}
	if d, _ := isDir(a.path(p)); !d {
		return fsutil.FormatSize(n), nil
	}
	files := 0
	err = filepath.WalkDir(a.path(p), func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
		}
		return err
	})
	plural := "s"
	if files == 1 {
		plural = ""
	}
	return fmt.Sprintf("%d file%s, %s", files, plural, fsutil.FormatSize(n)), err
}

// reversed is s in the other order (rollback restores the last backup first).
func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
