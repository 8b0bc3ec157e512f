package app

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapshift/snapshift/internal/gen"
)

// interruptKeys makes a snapshot (about 570 MiB) that transform needs over three times
// signalAfter for and restore over twice, so that a signal sent after signalAfter lands in the
// middle of the work.
const (
	interruptKeys = 200_000
	signalAfter   = 300 * time.Millisecond
)

// TestInterrupt runs transform and restore as real processes (this test binary re-executed as
// snapshift, see TestMainChild), sends SIGINT or SIGTERM while they work, and checks: exit code
// 130, one line on stderr saying it was interrupted and nothing was written, no output, no
// temporary file or dir, no data dir, an earlier output (--force) byte-identical, the input
// unchanged.
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a large snapshot")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.db")
	start := time.Now()
	res, err := gen.Generate(t.Context(), gen.Config{Path: in, Keys: interruptKeys, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d keys, %d MiB, in %v", res.Keys, res.Size>>20, time.Since(start).Round(time.Millisecond))
	inSum := wholeFileSum(t, in)
	inStat := statOf(t, in)

	// The premise: uninterrupted, each command takes well over signalAfter.
	for _, args := range [][]string{
		{"transform", in, "--out", filepath.Join(t.TempDir(), "out.db"), "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "--quiet"},
		restoreInto(in, t.TempDir()),
	} {
		start := time.Now()
		r := runChild(t, 0, args...)
		took := time.Since(start)
		t.Logf("uninterrupted %s: exit %d in %v", args[0], r.code, took.Round(time.Millisecond))
		// transform must take over three times signalAfter; restore (mostly a file copy) twice.
		least := 3 * signalAfter
		if args[0] == "restore" {
			least = 2 * signalAfter
		}
		if r.code != ExitOK || took < least {
			t.Fatalf("uninterrupted %s: exit %d in %v, want success in over %v: %s", args[0], r.code, took, least, r.stderr)
		}
	}

	earlier := []byte("an earlier output: it must survive an interrupted --force\n")
	transformArgs := func(out string) []string {
		return []string{"transform", in, "--out", out, "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "--quiet"}
	}
	type when int
	const (
		afterDelay     when = iota // signalAfter after the start
		whenTempExists             // as soon as the temporary output (file or data dir) exists
	)
	cases := []struct {
		name    string
		sig     syscall.Signal
		when    when
		args    func(work string) []string
		earlier string // a file put in work before the run, which must stay as it is
	}{
		{"transform/SIGINT", syscall.SIGINT, afterDelay, func(w string) []string { return transformArgs(filepath.Join(w, "out.db")) }, ""},
		{"transform/SIGTERM", syscall.SIGTERM, afterDelay, func(w string) []string { return transformArgs(filepath.Join(w, "out.db")) }, ""},
		{"transform/SIGINT while writing", syscall.SIGINT, whenTempExists, func(w string) []string { return transformArgs(filepath.Join(w, "out.db")) }, ""},
		{"transform --force over an earlier output/SIGINT", syscall.SIGINT, afterDelay,
			func(w string) []string { return append(transformArgs(filepath.Join(w, "out.db")), "--force") }, "out.db"},
		{"transform --force over an earlier output/SIGTERM while writing", syscall.SIGTERM, whenTempExists,
			func(w string) []string { return append(transformArgs(filepath.Join(w, "out.db")), "--force") }, "out.db"},
		{"restore/SIGINT", syscall.SIGINT, afterDelay, func(w string) []string { return restoreInto(in, w) }, ""},
		{"restore/SIGTERM", syscall.SIGTERM, afterDelay, func(w string) []string { return restoreInto(in, w) }, ""},
		{"restore/SIGINT while writing", syscall.SIGINT, whenTempExists, func(w string) []string { return restoreInto(in, w) }, ""},
		{"fused restore/SIGTERM", syscall.SIGTERM, afterDelay, func(w string) []string { return fusedRestoreInto(in, w) }, ""},
		{"fused restore/SIGINT while writing", syscall.SIGINT, whenTempExists, func(w string) []string { return fusedRestoreInto(in, w) }, ""},
		{"fused restore, rewrite/SIGTERM while writing", syscall.SIGTERM, whenTempExists,
			func(w string) []string { return append(fusedRestoreInto(in, w), "--route", "rewrite") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			if tc.earlier != "" {
				if err := os.WriteFile(filepath.Join(work, tc.earlier), earlier, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := dirState(t, work)
			args := tc.args(work)
			// Signal only a process that is at work on the input: on a busy
			// machine the child may need longer than signalAfter to start,
			// and a signal before its handler is set kills it outright.
			ready := func(pid int) bool { return hasOpen(pid, in) }
			if tc.when == whenTempExists {
				ready = func(pid int) bool { return hasOpen(pid, in) && hasTemp(work) }
			}
			r, at, ran := interruptChild(t, args, tc.sig, ready)
			cmdline := "snapshift " + strings.Join(args, " ")
			t.Logf("%v after %v, exit %d after %v: %s", tc.sig, at.Round(time.Millisecond), r.code, ran.Round(time.Millisecond), strings.TrimSpace(r.stderr))

			if r.code != ExitInterrupted {
				t.Errorf("%s: exit %d, want %d (stderr %q)", cmdline, r.code, ExitInterrupted, r.stderr)
			}
			// Progress lines ("[index] ...") of phases that finished before
			// the signal arrived may precede the one message line.
			var lines []string
			for _, l := range r.stderrLines() {
				if !strings.HasPrefix(l, "[") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "interrupted") || !strings.Contains(lines[0], "no output was written") {
				t.Errorf("%s: stderr %q, want one line saying it was interrupted and no output was written", cmdline, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("%s: stdout %q, want nothing", cmdline, r.stdout)
			}
			if after := dirState(t, work); !mapsEqual(after, before) {
				t.Errorf("%s: the output directory changed (output, temporary file or data dir left, or the earlier output touched):\n before %v\n after  %v",
					cmdline, before, after)
			}
			if tc.earlier != "" {
				if got, err := os.ReadFile(filepath.Join(work, tc.earlier)); err != nil || !bytes.Equal(got, earlier) {
					t.Errorf("%s: the earlier output changed (%v)", cmdline, err)
				}
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
				t.Errorf("the input's directory holds %d entries, want only the input (%v)", len(entries), err)
			}
			if st := statOf(t, in); st != inStat {
				t.Errorf("the input changed: %+v, was %+v", st, inStat)
			}
		})
	}
	if got := wholeFileSum(t, in); got != inSum {
		t.Error("the input's bytes changed")
	}
}

// interruptChild starts `snapshift args...` as a child process, sends it sig once signalAfter has
// passed and ready says so, and waits for it (killing it if it does not end within a minute). It
// returns the result, when the signal was sent and when the child ended (since its start).
func interruptChild(t *testing.T, args []string, sig syscall.Signal, ready func(pid int) bool) (result, time.Duration, time.Duration) {
	t.Helper()
	cmdline := "snapshift " + strings.Join(args, " ")
	cmd := childCommand(t, 0, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			t.Fatalf("%s ended before the signal (after %v; %v): %s\nthe input is too small to interrupt", cmdline, time.Since(start), err, stderr.String())
		case <-tick.C:
			waiting = time.Since(start) < signalAfter || !ready(cmd.Process.Pid)
			if time.Since(start) > 30*time.Second {
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s: not ready to be interrupted after 30s", cmdline)
			}
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	at := time.Since(start)
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not end within a minute of %v", cmdline, sig)
	}
	ran := time.Since(start)
	code := 0
	if err != nil {
		ee, ok := err.(interface{ ExitCode() int })
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
		if code < 0 {
			t.Fatalf("%s was killed (%v) instead of exiting: %s", cmdline, err, stderr.String())
		}
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}, at, ran
}

// hasTemp reports whether dir holds a temporary output of snapshift's (a name with ".snapshift-").
// hasOpen reports whether process pid has path open (Linux /proc).
func hasOpen(pid int, path string) bool {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

func hasTemp(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".snapshift-") {
			return true
		}
	}
	return false
}

type fileStat struct {
	size  int64
	mtime time.Time
	mode  os.FileMode
}

func statOf(t *testing.T, path string) fileStat {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileStat{st.Size(), st.ModTime(), st.Mode()}
}

func wholeFileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
