//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapshift/snapshift/nodeops"
)

// A real systemd for `node apply --rollback-after` (systemdNS): the host's
// /lib/systemd/systemd as PID 1 of its own PID, mount, cgroup, UTS and IPC
// namespaces (the network namespace is the test's: the rollback it runs
// reaches the fake kubelet's etcd and kube-apiserver on 127.0.22.x), set up
// as systemd's container interface asks (systemd.io/CONTAINER_INTERFACE:
// $container set, /proc and /sys premounted, /sys and /proc/sys read-only,
// a writable cgroup hierarchy of its own, /run a tmpfs of its own). The
// host's PID 1 need not be systemd, nor its cgroups v2: the container gets
// a cgroup2 hierarchy (the host's unified one, mounted at the root of a
// child cgroup through its own cgroup namespace).
//
// It is a systemd that cannot touch the machine running the test:
//   - it sees only the units of its own directory ($SYSTEMD_UNIT_PATH, no
//     generators): the journal, empty targets for the default dependencies
//     of a transient timer and service, and exit.target; none of the host's
//     units (a whole sysinit.target would run systemd-tmpfiles --remove on
//     the host's /tmp, systemd-sysctl on its kernel);
//   - its mounts are private, / is read-only but for the case's directory
//     (bind-mounted on itself, writable), /dev read-only but for a tmpfs
//     /dev/shm, /dev/console a file (systemd's console output);
//   - its processes are in its cgroup and its PID namespace: stop ends them
//     all (systemctl exit, then SIGKILL to its PID 1 if it has not exited
//     in 30 s, which the kernel passes to every process of the namespace)
//     and removes the cgroup, checked empty.

// systemdUnits are the units the container's systemd sees (and only them).
var systemdUnits = map[string]string{
	"snapshift-e2e.target": "[Unit]\nDescription=snapshift e2e: a systemd for node apply --rollback-after's timer\n" +
		"Wants=systemd-journald.socket systemd-journald.service\n",
	"systemd-journald.socket": "[Unit]\nDescription=Journal Socket\nDefaultDependencies=no\nBefore=sockets.target\n" +
		"[Socket]\nListenDatagram=/run/systemd/journal/socket\nListenStream=/run/systemd/journal/stdout\n" +
		"PassCredentials=yes\nPassSecurity=yes\nSocketMode=0666\nService=systemd-journald.service\n",
	"systemd-journald.service": "[Unit]\nDescription=Journal Service\nDefaultDependencies=no\nRequires=systemd-journald.socket\n" +
		"After=systemd-journald.socket\n[Service]\nExecStart=/lib/systemd/systemd-journald\nType=notify\n" +
		"Sockets=systemd-journald.socket\nStandardOutput=null\nRuntimeDirectory=systemd/journal\nRuntimeDirectoryPreserve=yes\nFileDescriptorStoreMax=4224\n",
	// exit.target as systemd ships it, for `systemctl exit`.
	"exit.target":          "[Unit]\nDescription=Exit the Container\nDefaultDependencies=no\nRequires=systemd-exit.service\nAfter=systemd-exit.service\nAllowIsolate=yes\n",
	"systemd-exit.service": "[Unit]\nDescription=Exit the Container\nDefaultDependencies=no\nRequires=shutdown.target final.target\nAfter=shutdown.target final.target\nSuccessAction=exit-force\n",
	"system.slice":         "[Unit]\nDescription=System Slice\nDefaultDependencies=no\n",
}

// emptyTargets are the targets of transient units' default dependencies
// (systemd.special(7)), empty here.
var emptyTargets = []string{"sysinit", "basic", "sockets", "timers", "paths", "slices", "shutdown", "final"}

// systemdInit is PID 1 of the new namespaces until it execs systemd: $1 is
// the writable directory, $2 the cgroup2 directory to enter, $3 the units.
const systemdInit = `set -eu
W=$1 CG=$2 UNITS=$3
echo $$ > "$CG/cgroup.procs"
mount --make-rprivate /
mount --bind "$W" "$W"
mount -o remount,bind,ro /
mount -t proc -o nosuid,nodev,noexec proc /proc
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
mount --bind /sys /sys
mount -o remount,bind,ro /sys
mount --bind /dev /dev
mount -o remount,bind,ro /dev
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
: > "$UNITS/../console"
mount --bind "$UNITS/../console" /dev/console
mkdir -p /run/systemd/journald.conf.d
printf '[Journal]\nStorage=volatile\nReadKMsg=no\n' > /run/systemd/journald.conf.d/snapshift-e2e.conf
exec unshare --cgroup env -i container=snapshift-e2e SYSTEMD_UNIT_PATH="$UNITS" SYSTEMD_GENERATOR_PATH="$UNITS/../none" \
  SYSTEMD_ENVIRONMENT_GENERATOR_PATH="$UNITS/../none" /lib/systemd/systemd --unit=snapshift-e2e.target --log-target=journal
`

// systemdNS is a running container systemd.
type systemdNS struct {
	t      *testing.T
	cmd    *exec.Cmd
	done   chan error
	cgroup string // its cgroup (host path)
	dir    string // units, console
	enter  []string
}

// startSystemd starts a systemd whose only writable host directory is rw
// and waits until it is running; t's cleanup stops it.
func startSystemd(t *testing.T, rw string) *systemdNS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("[systemd] the deadline's proof runs a systemd in namespaces and a cgroup of its own: run it as root")
	}
	for _, tool := range []string{"/lib/systemd/systemd", "/lib/systemd/systemd-journald", "systemctl", "systemd-run", "journalctl", "nsenter", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("[systemd] the deadline's proof needs %s (Debian: apt-get install systemd util-linux): %v", tool, err)
		}
	}
	s := &systemdNS{t: t, dir: filepath.Join(rw, "systemd"), done: make(chan error, 1)}
	units := filepath.Join(s.dir, "units")
	for _, d := range []string{units, filepath.Join(s.dir, "none")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range systemdUnits {
		write(t, filepath.Join(units, name), []byte(text), 0o644)
	}
	for _, name := range emptyTargets {
		write(t, filepath.Join(units, name+".target"), []byte("[Unit]\nDescription="+name+".target (empty: snapshift e2e)\nDefaultDependencies=no\n"), 0o644)
	}
	v2, err := cgroup2Mount()
	if err != nil {
		t.Fatalf("[systemd] %v", err)
	}
	s.cgroup = filepath.Join(v2, fmt.Sprintf("snapshift-e2e-systemd-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(s.cgroup, 0o755); err != nil {
		t.Fatalf("[systemd] creating its cgroup: %v", err)
	}
	s.cmd = exec.Command("/bin/sh", "-c", systemdInit, "init", rw, s.cgroup, units)
	var out bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
		Setsid:     true,
		Pdeathsig:  syscall.SIGKILL, // the test dies: its systemd (and with it the namespace) too
	}
	if err := s.cmd.Start(); err != nil {
		os.Remove(s.cgroup)
		t.Fatalf("[systemd] %v", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(s.stop)
	s.enter = []string{"nsenter", "--target", fmt.Sprint(s.cmd.Process.Pid), "--mount", "--pid", "--cgroup", "--uts", "--ipc", "--"}
	deadline := time.Now().Add(time.Minute)
	for {
		state, _ := s.output("systemctl", "is-system-running")
		if state == "running" {
			break
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("[systemd] exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("[systemd] not running after a minute (state %q):\n%s", state, s.journal(""))
		}
		time.Sleep(200 * time.Millisecond)
	}
	version, _ := s.output("systemctl", "show", "--property=Version", "--value")
	t.Logf("[systemd] systemd %s runs as PID 1 of its own namespaces (host PID %d, cgroup %s, only %s writable)", version, s.cmd.Process.Pid, s.cgroup, rw)
	return s
}

// output runs a command inside the namespaces and returns its trimmed
// standard output.
func (s *systemdNS) output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append(append(append([]string{}, s.enter...), name), args...)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, all[0], all[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return strings.TrimSpace(string(out)), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// journal is the journal of unit (of everything when ""), as journalctl
// prints it.
func (s *systemdNS) journal(unit string) string {
	args := []string{"--no-pager", "-o", "short-precise"}
	if unit != "" {
		args = append(args, "-u", unit)
	}
	out, err := s.output("journalctl", args...)
	if err != nil {
		return fmt.Sprintf("%s\n(%v)", out, err)
	}
	return out
}

// stop ends the systemd and every process of its namespace, then removes
// its cgroup.
func (s *systemdNS) stop() {
	t := s.t
	pid := s.cmd.Process.Pid
	start := time.Now()
	how := "systemctl exit"
	if _, err := s.output("systemctl", "exit"); err != nil {
		how = fmt.Sprintf("systemctl exit failed (%v)", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		how += ", then SIGKILL after 30s"
		syscall.Kill(pid, syscall.SIGKILL) // PID 1 of the namespace: the kernel kills every process in it
		<-s.done
	}
	// The namespace is gone with its PID 1; its cgroup must be empty.
	var left []string
	filepath.WalkDir(s.cgroup, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			b, _ := os.ReadFile(p)
			if procs := strings.Fields(string(b)); len(procs) > 0 {
				left = append(left, fmt.Sprintf("%s: %s", filepath.Dir(p), strings.Join(procs, " ")))
			}
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("[systemd] processes left in its cgroup after its PID 1 exited: %s", strings.Join(left, "; "))
	}
	var dirs []string
	filepath.WalkDir(s.cgroup, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- { // children first
		if err := os.Remove(dirs[i]); err != nil {
			t.Errorf("[systemd] removing its cgroup: %v", err)
		}
	}
	t.Logf("[systemd] stopped (%s) in %s: PID %d and its namespace gone, cgroup %s removed", how, time.Since(start).Round(time.Millisecond), pid, s.cgroup)
}

// cgroup2Mount is where a cgroup2 hierarchy is mounted (/sys/fs/cgroup on a
// unified host, /sys/fs/cgroup/unified on a hybrid one).
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if f := strings.Fields(pre); ok && len(f) >= 5 && strings.HasPrefix(post, "cgroup2 ") && f[3] == "/" {
			return f[4], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup2 hierarchy is mounted (systemd needs one for its own cgroup; mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified)")
}

// TestNodeDeadlineSystemd proves `node apply --rollback-after` under a real
// systemd (startSystemd): on a one-node control plane made as
// TestNodeApplyRollback makes it (real etcd and kube-apiserver run by the
// fake kubelet from the node's manifests; the recorders stand in for the
// kubelet's unit, crictl and ip, but systemd-run and systemctl's calls on
// the rollback units go to the real ones), apply runs inside the
// systemd's namespaces and arms its transient timer (systemctl
// list-timers shows it while apply runs);
//   - left alone, the timer fires at the deadline: systemd runs
//     `snapshift node rollback-if-unconfirmed` with the environment and
//     working directory it gives a service, the service exits 0
//     (journalctl), backup.json records the rollback and no timer, and the
//     node is back byte for byte, its old cluster serving again;
//   - confirmed before the deadline, the timer is gone from systemd
//     (list-timers --all), nothing runs at the deadline (no journal entry
//     of the service), and the node keeps the bundle's control plane.
func TestNodeDeadlineSystemd(t *testing.T) {
	ver := versions()[0]
	bins := map[string]string{"etcd": etcdBinary(t), "kube-apiserver": filepath.Join(binDir(t, ver), "kube-apiserver")}
	snapshift := buildSnapshift(t)
	src := nodeOpsSource(t, binDir(t, ver))
	for _, tc := range []struct {
		name    string
		after   time.Duration
		confirm bool
	}{{"deadline-rolls-back", 20 * time.Second, false}, {"confirmed-before-deadline", time.Minute, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &nodeOpsCase{t: t, nodes: 1, newCA: true, deadline: true, bins: bins, snapshift: snapshift, ver: ver}
			c.deadlineUnderSystemd(src, tc.after, tc.confirm)
		})
	}
}

func (c *nodeOpsCase) deadlineUnderSystemd(source string, after time.Duration, confirm bool) {
	t := c.t
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bundle, oldRev := c.prepare(ctx, source)
	n := c.ns[0]
	sd := startSystemd(t, c.dir)
	c.enter = sd.enter
	realSystemdTools(t, n)
	unit := "snapshift-rollback-" + n.name
	failf := func(format string, args ...any) {
		t.Helper()
		c.dumpLogs()
		t.Logf("---- the systemd's journal ----\n%s", sd.journal(""))
		t.Fatalf(format, args...)
	}

	if !confirm {
		c.refusedWithoutSystemd(n, bundle)
		// A killed apply may have armed the timer without recording it:
		// apply clears it (systemctl stop, reset-failed) and arms its own.
		if out, err := sd.output("systemd-run", "--unit="+unit, "--on-active=1h", "true"); err != nil {
			failf("[deadline] FAIL arming a stale timer: %v\n%s", err, out)
		}
	}

	// Apply, watching systemd's timers while it runs.
	type result struct {
		out string
		err error
	}
	applied := make(chan result, 1)
	start := time.Now()
	go func() {
		out, err := c.node(ctx, n, fmt.Sprintf("apply --rollback-after %s", after), bundle)
		applied <- result{out, err}
	}()
	var timers string
	var r *result
	for timers == "" {
		// apply's own timer, not a stale one of the same name.
		if desc, _ := sd.output("systemctl", "show", "--property=Description", "--value", unit+".timer"); strings.HasPrefix(desc, "snapshift: roll back node "+n.name+" at ") {
			timers, _ = sd.output("systemctl", "list-timers", "--all", "--no-pager")
			if !strings.Contains(timers, unit+".timer") {
				failf("[deadline] FAIL systemctl list-timers does not show %s.timer:\n%s", unit, timers)
			}
			execStart, _ := sd.output("systemctl", "show", "--property=ExecStart", "--value", unit+".service")
			timers += "\n" + unit + ".service: " + execStart
			break
		}
		if r != nil || time.Since(start) > 3*time.Minute {
			failf("[deadline] FAIL systemd never loaded apply's %s.timer (apply: %v)\n%v", unit, r, r)
		}
		select {
		case res := <-applied:
			r = &res // one more look at the timers, then fail
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("[deadline] PASS %s after apply started, systemd holds apply's timer (systemctl list-timers, show):\n%s", time.Since(start).Round(time.Millisecond), timers)
	if r == nil {
		res := <-applied
		r = &res
	}
	if r.err != nil {
		failf("[deadline] FAIL snapshift node apply --rollback-after %s: %v\n%s", after, r.err, r.out)
	}
	applyTook := time.Since(start)
	t.Logf("snapshift node apply --rollback-after %s (inside the systemd's namespaces, %s):\n%s", after, applyTook.Round(time.Second), r.out)
	rec := c.record(n)
	if rec.RollbackDeadline == nil || rec.RollbackUnit != unit+".timer" {
		failf("[deadline] FAIL backup.json after apply: deadline %v, unit %q", rec.RollbackDeadline, rec.RollbackUnit)
	}
	deadline := *rec.RollbackDeadline

	if !confirm {
		// Left alone: the timer fires, systemd runs the rollback.
		end := deadline.Add(4 * time.Minute)
		var journal string
		for {
			journal = sd.journal(unit + ".service")
			if strings.Contains(journal, unit+".service: Deactivated successfully") || strings.Contains(journal, unit+".service: Failed with result") {
				break
			}
			if time.Now().After(end) {
				failf("[deadline] FAIL %s.service did not end by %s:\n%s", unit, end.Format(time.RFC3339), journal)
			}
			time.Sleep(time.Second)
		}
		t.Logf("journalctl -u %s.service:\n%s", unit, journal)
		if !strings.Contains(journal, unit+".service: Deactivated successfully") {
			failf("[deadline] FAIL the rollback the timer ran failed")
		}
		rec = c.record(n)
		if !rec.RolledBack || rec.RollbackUnit != "" {
			failf("[deadline] FAIL backup.json after the deadline: rolledBack %v, rollbackUnit %q", rec.RolledBack, rec.RollbackUnit)
		}
		if out, _ := sd.output("systemctl", "list-timers", "--all", "--no-pager"); strings.Contains(out, unit) {
			failf("[deadline] FAIL the timer is still loaded after its rollback:\n%s", out)
		}
		t.Logf("[deadline] PASS at the deadline (%s, apply took %s) systemd ran %s.service: rollback-if-unconfirmed exited 0, backup.json records the rollback, the timer is gone", deadline.Format(time.RFC3339), applyTook.Round(time.Second), unit)
		c.checkRolledBack(ctx, oldRev)
		return
	}

	// Confirmed before the deadline: the timer goes, nothing runs.
	if time.Now().After(deadline.Add(-2 * time.Second)) {
		failf("[deadline] FAIL apply took %s: no time left to confirm before the deadline %s", applyTook.Round(time.Second), deadline.Format(time.RFC3339))
	}
	margin := time.Until(deadline)
	out, err := c.node(ctx, n, "confirm", bundle)
	if err != nil {
		failf("[deadline] FAIL snapshift node confirm: %v\n%s", err, out)
	}
	t.Logf("snapshift node confirm (%s before the deadline):\n%s", margin.Round(time.Second), out)
	if out, _ := sd.output("systemctl", "list-timers", "--all", "--no-pager"); strings.Contains(out, unit) {
		failf("[deadline] FAIL confirm left the timer loaded:\n%s", out)
	}
	state := treeState(t, n.root, "etc/kubernetes", "var/lib/kubelet")
	time.Sleep(time.Until(deadline.Add(10 * time.Second)))
	if j := sd.journal(unit + ".service"); !strings.Contains(j, "-- No entries --") {
		failf("[deadline] FAIL %s.service ran after confirm:\n%s", unit, j)
	}
	rec = c.record(n)
	if rec.Confirmed == nil || rec.RolledBack || rec.RollbackUnit != "" {
		failf("[deadline] FAIL backup.json after confirm and the deadline: confirmed %v, rolledBack %v, rollbackUnit %q", rec.Confirmed, rec.RolledBack, rec.RollbackUnit)
	}
	if !mapsEqual(state, treeState(t, n.root, "etc/kubernetes", "var/lib/kubelet")) {
		failf("[deadline] FAIL the node changed after confirm")
	}
	c.waitReady(ctx, "new")
	c.checkInstalled(n)
	t.Logf("[deadline] PASS confirmed %s before the deadline: the timer is gone from systemd, nothing ran at %s, the node keeps the bundle's control plane", margin.Round(time.Second), deadline.Format(time.RFC3339))
}

// record reads node n's backup.json.
func (c *nodeOpsCase) record(n *opsNode) nodeops.Record {
	t := c.t
	recs, _ := filepath.Glob(filepath.Join(n.root, "var", "lib", "snapshift", "backup", "*", nodeops.RecordFile))
	if len(recs) != 1 {
		t.Fatalf("[deadline] FAIL backup records: %v", recs)
	}
	b, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec nodeops.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", recs[0], err)
	}
	return rec
}

// realSystemdTools points node n's recorders at the real systemd-run, and
// the real systemctl for the rollback deadline's units and the version
// preflight asks for (the kubelet's unit stays a recorder's: the fake
// kubelet watches it); every call is still logged.
func realSystemdTools(t *testing.T, n *opsNode) {
	t.Helper()
	bin := filepath.Join(n.root, "recorder", "bin")
	systemctl, err := exec.LookPath("systemctl")
	if err != nil {
		t.Fatal(err)
	}
	systemdRun, err := exec.LookPath("systemd-run")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(bin, "systemctl"), filepath.Join(bin, "systemctl.recorder")); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(n.root, "recorder", "calls.log")
	write(t, filepath.Join(bin, "systemctl"), []byte(fmt.Sprintf(`#!/bin/sh
case "$1 $2" in
"stop snapshift-rollback-"*|"reset-failed snapshift-rollback-"*|"show --property=Version")
  echo "systemctl $* | real" >> '%s'
  exec '%s' "$@" ;;
esac
exec '%s' "$@"
`, log, systemctl, filepath.Join(bin, "systemctl.recorder"))), 0o755)
	write(t, filepath.Join(bin, "systemd-run"), []byte(fmt.Sprintf("#!/bin/sh\necho \"systemd-run $*\" >> '%s'\nexec '%s' \"$@\"\n", log, systemdRun)), 0o755)
}

// refusedWithoutSystemd runs apply --rollback-after where systemctl reaches
// no systemd (a mount namespace with an empty /run: what a host booted
// with another init shows): preflight must refuse it, exit 4, with one
// sentence, before the backup or any other change.
func (c *nodeOpsCase) refusedWithoutSystemd(n *opsNode, bundle string) {
	t := c.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := treeState(t, n.root, "etc/kubernetes", "var/lib")
	log := filepath.Join(n.root, "recorder", "calls.log")
	logged, _ := os.ReadFile(log) // absent before the first call
	enter := c.enter
	c.enter = []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", `mount -t tmpfs tmpfs /run && exec "$@"`, "sh"}
	out, err := c.node(ctx, n, "apply --rollback-after 20s", bundle)
	c.enter = enter
	var exit *exec.ExitError
	want := "--rollback-after needs a running systemd to hold its timer, and systemctl reaches none (System has not been booted with systemd as init system (PID 1). Can't operate; Failed to connect to bus: Host is down): run apply on a host booted with systemd, or without --rollback-after"
	if !errors.As(err, &exit) || exit.ExitCode() != 4 || !strings.Contains(out, want) {
		t.Fatalf("[deadline] FAIL apply --rollback-after without a systemd: %v\n%s", err, out)
	}
	if !mapsEqual(before, treeState(t, n.root, "etc/kubernetes", "var/lib")) {
		t.Fatalf("[deadline] FAIL apply --rollback-after without a systemd changed the node")
	}
	now, _ := os.ReadFile(log)
	for _, l := range strings.Split(strings.TrimSpace(string(now[len(logged):])), "\n") {
		if !strings.HasPrefix(l, "systemctl show --property=Version") {
			t.Fatalf("[deadline] FAIL apply --rollback-after without a systemd ran %q", l)
		}
	}
	t.Logf("[deadline] PASS without a systemd (an empty /run), apply --rollback-after is refused by preflight, exit 4, the node unchanged:\n%s", strings.TrimSpace(out))
}
