package nodeops_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapshift/snapshift/nodeops"
)

// deadlineConfig is apply with --rollback-after 30m at a fixed clock.
func deadlineConfig(b, root string, out *bytes.Buffer) nodeops.Config {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	return nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true, RollbackAfter: 30 * time.Minute,
		Executable: "/usr/local/bin/snapshift", Out: out, Now: func() time.Time { return now }}
}

func readRecord(t *testing.T, root string) string {
	t.Helper()
	recs, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-*", nodeops.RecordFile))
	if len(recs) != 1 {
		t.Fatalf("backup records: %v", recs)
	}
	raw, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestDeadlineRollsBack: apply --rollback-after arms a transient systemd
// timer running rollback-if-unconfirmed (what systemd-run was given is
// checked), records it; at the deadline, unconfirmed, the node is put
// back byte for byte and the timer removed.
func TestDeadlineRollsBack(t *testing.T) {
	b, root := makeBundle(t), node(t)
	before := tree(t, root, "etc", "var")
	var out bytes.Buffer
	cfg := deadlineConfig(b, root, &out)
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "calls.log"))
	want := "systemd-run --unit=snapshift-rollback-n1 --description=snapshift: roll back node n1 at 2026-11-27T12:30:00Z unless confirmed --on-active=1800s --timer-property=AccuracySec=1s --setenv=PATH=" +
		os.Getenv("PATH") + " /usr/local/bin/snapshift node rollback-if-unconfirmed --bundle " + b + " --node n1 --root " + root + " --timeout 5m0s\n"
	if !strings.Contains(string(calls), want) {
		t.Errorf("systemd-run was not run as\n%s\ncalls:\n%s", want, calls)
	}
	// Armed right after the backup, before the first change to the node.
	if i, j := strings.Index(string(calls), "systemd-run"), strings.Index(string(calls), "systemctl stop kubelet"); i < 0 || j < i {
		t.Errorf("the timer is not armed before the kubelet stops:\n%s", calls)
	}
	rec := readRecord(t, root)
	for _, w := range []string{`"rollbackDeadline": "2026-11-27T12:30:00Z"`, `"rollbackUnit": "snapshift-rollback-n1.timer"`, `"rollback-armed"`} {
		if !strings.Contains(rec, w) {
			t.Errorf("backup.json lacks %s:\n%s", w, rec)
		}
	}
	if !strings.Contains(out.String(), "[deadline] snapshift-rollback-n1.timer rolls this node back at 2026-11-27T12:30:00Z (in 30m0s) unless `snapshift node confirm") {
		t.Errorf("apply does not say the deadline:\n%s", out.String())
	}

	// Run again (an operator repeating apply): the timer is not armed twice.
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	calls, _ = os.ReadFile(filepath.Join(root, "calls.log"))
	if n := strings.Count(string(calls), "systemd-run "); n != 1 {
		t.Errorf("a second apply ran systemd-run again (%d runs):\n%s", n, calls)
	}
	applied := len(calls)
	out.Reset()
	if _, err := nodeops.RollbackIfUnconfirmed(context.Background(), cfg); err != nil {
		t.Fatalf("RollbackIfUnconfirmed: %v", err)
	}
	after := tree(t, root, "etc", "var")
	for p, v := range before {
		if after[p] != v {
			t.Errorf("after the deadline %s is %q, was %q", p, after[p], v)
		}
	}
	calls, _ = os.ReadFile(filepath.Join(root, "calls.log"))
	if rb := string(calls[applied:]); !strings.HasPrefix(rb, "systemctl stop snapshift-rollback-n1.timer\ncrictl ") {
		t.Errorf("the deadline's rollback did not remove its timer first:\n%s", calls)
	}
	rec = readRecord(t, root)
	if !strings.Contains(rec, `"rolledBack": true`) || strings.Contains(rec, "rollbackUnit") {
		t.Errorf("backup.json after the deadline:\n%s", rec)
	}
	if !strings.Contains(out.String(), "[deadline] the deadline passed and n1 was not confirmed") {
		t.Errorf("rollback-if-unconfirmed does not say why:\n%s", out.String())
	}
	// Confirming a rolled-back node is refused.
	if _, err := nodeops.Confirm(context.Background(), cfg); !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), "this node was rolled back") {
		t.Errorf("Confirm after the deadline's rollback: %v", err)
	}
}

// TestConfirmKeepsTheMigration: confirm records the node healthy and
// removes the timer; the deadline then changes nothing.
func TestConfirmKeepsTheMigration(t *testing.T) {
	b, root := makeBundle(t), node(t)
	var out bytes.Buffer
	cfg := deadlineConfig(b, root, &out)
	if _, err := nodeops.Confirm(context.Background(), cfg); !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), "nothing to confirm") {
		t.Errorf("Confirm before apply: %v", err)
	}
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := nodeops.Confirm(context.Background(), cfg); err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	rec := readRecord(t, root)
	if !strings.Contains(rec, `"confirmed": "2026-11-27T12:00:00Z"`) || strings.Contains(rec, "rollbackUnit") {
		t.Errorf("backup.json after confirm:\n%s", rec)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "calls.log"))
	if !strings.HasSuffix(string(calls), "systemctl stop snapshift-rollback-n1.timer\n") {
		t.Errorf("confirm did not remove the timer:\n%s", calls)
	}
	applied := tree(t, root, "etc", "var")
	out.Reset()
	if _, err := nodeops.RollbackIfUnconfirmed(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, root, "etc", "var"); len(got) != len(applied) || !strings.Contains(out.String(), "confirmed at 2026-11-27T12:00:00Z: nothing to roll back") {
		t.Errorf("the deadline after confirm changed the node or said:\n%s", out.String())
	}
	checkApplied(t, root)
}

// TestDeadlineWaitsForApply: a deadline that passes while another node
// operation holds the node's lock (apply waiting on a health gate) rolls
// back once the lock is free, not beside it.
func TestDeadlineWaitsForApply(t *testing.T) {
	b, root := makeBundle(t), node(t)
	before := tree(t, root, "etc", "var")
	var out bytes.Buffer
	cfg := deadlineConfig(b, root, &out)
	if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(root, "run/snapshift/n1.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	cfg.Out = &bytes.Buffer{}
	go func() { _, err := nodeops.RollbackIfUnconfirmed(context.Background(), cfg); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("rollback-if-unconfirmed ran while the lock was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	checkApplied(t, root)
	f.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after := tree(t, root, "etc", "var"); after["var/lib/etcd/member/snap/db"] != before["var/lib/etcd/member/snap/db"] {
		t.Errorf("not rolled back after the lock was released")
	}
}

// TestDeadlineRefusedWithoutSystemd: --rollback-after on a host where no
// systemd can hold the timer (systemd-run missing, or systemctl reaching
// no manager: a container, another init) is refused by preflight, with
// one sentence, before the backup or any other change.
func TestDeadlineRefusedWithoutSystemd(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		host       func(t *testing.T, bin string)
	}{
		{"no systemd-run", "[preflight] systemd-run not found in PATH, and --rollback-after's timer needs it: run apply on a host booted with systemd, or without --rollback-after", func(t *testing.T, bin string) {
			os.Remove(filepath.Join(bin, "systemd-run"))
			t.Setenv("PATH", bin) // the host's own systemd-run out of reach
		}},
		{"no manager", "[preflight] --rollback-after needs a running systemd to hold its timer, and systemctl reaches none (System has not been booted with systemd as init system (PID 1). Can't operate; Failed to connect to bus: Host is down): run apply on a host booted with systemd, or without --rollback-after", func(t *testing.T, bin string) {
			// What systemctl says on a host whose PID 1 is not systemd.
			write(t, filepath.Join(bin, "systemctl"), "#!/bin/sh\necho \"systemctl $*\" >> "+filepath.Join(filepath.Dir(bin), "calls.log")+"\n"+
				"echo \"System has not been booted with systemd as init system (PID 1). Can't operate.\" >&2\necho 'Failed to connect to bus: Host is down' >&2\nexit 1\n", 0o755)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, root := makeBundle(t), node(t)
			tc.host(t, filepath.Join(root, "recorder"))
			before := tree(t, root, "etc", "var", "run")
			var out bytes.Buffer
			_, err := nodeops.Apply(context.Background(), deadlineConfig(b, root, &out))
			if !errors.Is(err, nodeops.ErrRefused) || err.Error() != tc.want {
				t.Fatalf("Apply --rollback-after:\n got %v\nwant %s", err, tc.want)
			}
			if after := tree(t, root, "etc", "var", "run"); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused apply changed the node")
			}
			calls, _ := os.ReadFile(filepath.Join(root, "calls.log"))
			if strings.Contains(string(calls), "systemd-run") || strings.Contains(string(calls), "systemctl stop") {
				t.Errorf("a refused apply ran:\n%s", calls)
			}
		})
	}
}
