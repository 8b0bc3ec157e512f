package app

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/rules"
)

// deadTemp is a temporary name for target as a run that has exited would
// have named it (issue 23: a SIGKILLed run's files).
func deadTemp(t *testing.T, target, suffix string) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	// This process's tag with the dead pid: same boot.
	tag := strings.SplitN(fsutil.ProcessTag(), "-", 3)
	return filepath.Join(filepath.Dir(target), fmt.Sprintf(".%s.snapshift-%d-%s-%s-deadbeef%s", filepath.Base(target), cmd.Process.Pid, tag[1], tag[2], suffix))
}

var seedFlagsQuiet = []string{"--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "--quiet"}

// A killed transform's temporary (the migrated cluster, Secrets included)
// is removed by the next run for the same output, which says so in one
// line; one for another output, and a running writer's, are left alone
// (the latter refused in one line).
func TestNextRunRemovesDeadLeftovers(t *testing.T) {
	in := copySample(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	dead := deadTemp(t, out, ".tmp")
	other := deadTemp(t, filepath.Join(dir, "other.db"), ".tmp")
	for _, p := range []string{dead, other} {
		if err := os.WriteFile(p, []byte("a copy of the cluster"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, append([]string{"transform", in, "--out", out}, seedFlagsQuiet...)...)
	if r.code != 0 {
		t.Fatalf("transform: %d %s", r.code, r.stderr)
	}
	if lines := r.stderrLines(); len(lines) != 1 || !strings.Contains(lines[0], "removed 1 leftover(s) of a killed run") || !strings.Contains(lines[0], dead) {
		t.Errorf("stderr %q, want one line naming the removed leftover", r.stderr)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Errorf("%s is still there", dead)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another output's leftover was removed: %v", err)
	}
	// A live writer's temporary for the output: refused, nothing removed.
	live, err := fsutil.CreateTemp(filepath.Join(dir, "out2.db"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	live.Close()
	r = run(t, append([]string{"transform", in, "--out", filepath.Join(dir, "out2.db")}, seedFlagsQuiet...)...)
	if r.code != ExitRefused || len(r.stderrLines()) != 1 || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("with a live writer's temporary: %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(live.Name()); err != nil {
		t.Errorf("a live writer's temporary was removed")
	}
	os.Remove(live.Name())
}

// restore --wal-dir killed between its two renames left the WAL dir at its
// final name without the data dir: the next run removes it (without the
// marker it held, the next run refused "wal dir exists").
func TestRestoreAfterHalfPublishedWAL(t *testing.T) {
	dir := t.TempDir()
	data, wal := filepath.Join(dir, "m1.etcd"), filepath.Join(dir, "m1.wal")
	os.MkdirAll(wal, 0o700)
	os.WriteFile(filepath.Join(wal, "0000000000000000-0000000000000000.wal"), []byte("old"), 0o600)
	marker := deadTemp(t, filepath.Join(wal, "pending"), "")
	os.WriteFile(marker, []byte(data+"\n"), 0o600)
	r := run(t, "restore", samplePath, "--name", "m1", "--data-dir", data, "--wal-dir", wal,
		"--initial-cluster", "m1=http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380")
	if r.code != 0 || !strings.Contains(r.stderr, "half published") {
		t.Fatalf("restore after a half-published WAL dir: %d %q", r.code, r.stderr)
	}
	entries, _ := os.ReadDir(wal)
	for _, e := range entries {
		if strings.Contains(e.Name(), "snapshift") || e.Name() == "0000000000000000-0000000000000000.wal" && func() bool {
			b, _ := os.ReadFile(filepath.Join(wal, e.Name()))
			return string(b) == "old"
		}() {
			t.Errorf("the WAL dir holds %s after the restore", e.Name())
		}
	}
	if ls, _ := fsutil.FindLeftoversUnder(dir); len(ls) != 0 {
		t.Errorf("leftovers after the restore: %+v", ls)
	}
}

func TestCleanCommand(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "var", "lib")
	os.MkdirAll(sub, 0o700)
	deadFile := deadTemp(t, filepath.Join(dir, "out.db"), ".tmp")
	deadDir := deadTemp(t, filepath.Join(sub, "etcd"), "")
	os.WriteFile(deadFile, []byte("secret"), 0o600)
	os.MkdirAll(filepath.Join(deadDir, "member", "snap"), 0o700)
	os.WriteFile(filepath.Join(deadDir, "member", "snap", "db"), []byte("db"), 0o600)
	r := run(t, "clean", dir, "--dry-run", "-o", "json")
	var got struct {
		DryRun    bool
		Leftovers []fsutil.Leftover
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("clean --dry-run -o json: %d %v %s %s", r.code, err, r.stdout, r.stderr)
	}
	if len(got.Leftovers) != 2 || !got.DryRun || got.Leftovers[0].Removed || got.Leftovers[1].Bytes != 2 {
		t.Errorf("dry run listed %+v", got.Leftovers)
	}
	if _, err := os.Stat(deadFile); err != nil {
		t.Errorf("a dry run removed %s", deadFile)
	}
	r = run(t, "clean", dir)
	if r.code != 0 || strings.Count(r.stdout, "removed") != 2 {
		t.Errorf("clean: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{deadFile, deadDir} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if r := run(t, "clean", dir); !strings.Contains(r.stdout, "no leftovers") {
		t.Errorf("second clean: %q", r.stdout)
	}
}

// TestPrintScale: plan's text shows the scale plan's warnings under the
// cluster's counts, one line each, and nothing when it has none.
func TestPrintScale(t *testing.T) {
	var b strings.Builder
	printScale(&b, &rules.Plan{Scale: &rules.ScalePlan{Nodes: 600, Pods: 9000, Services: 40, EndpointSlices: 50, DaemonSets: 3,
		Warnings: []string{"600 nodes: first", "kube-system/coredns's memory limit: second"}}})
	want := "\nScale: 600 nodes, 9000 pods, 40 Services, 50 EndpointSlices, 3 DaemonSets\n  warning: 600 nodes: first\n  warning: kube-system/coredns's memory limit: second\n"
	if b.String() != want {
		t.Errorf("printScale:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	printScale(&b, &rules.Plan{Scale: &rules.ScalePlan{Nodes: 3}})
	printScale(&b, nil)
	if b.Len() != 0 {
		t.Errorf("printScale without warnings printed %q", b.String())
	}
}
