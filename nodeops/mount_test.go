package nodeops_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/snapshift/snapshift/internal/nodetest"
	"github.com/snapshift/snapshift/nodeops"
)

// inMountNamespace re-runs test name in a new private mount namespace
// (unshare --mount, root only) and says whether this process is that run.
func inMountNamespace(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv("SNAPSHIFT_TEST_MOUNTNS") == name {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("a mount point needs root (make test runs as root in CI)")
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SNAPSHIFT_TEST_MOUNTNS="+name)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%s in a mount namespace: %v\n%s", name, err, out)
	}
	return false
}

// mountTmpfs makes root/rel a tmpfs mount point with the same entries and
// mode as before (a dedicated etcd disk).
func mountTmpfs(t *testing.T, root, rel string) string { return mountAt(t, root, rel, false) }

// mountAt makes root/rel a mount point with the same entries and mode as
// before: a tmpfs, or with bind a bind mount of a directory of the same
// file system (the same device as its parent: only mountinfo shows it).
func mountAt(t *testing.T, root, rel string, bind bool) string {
	t.Helper()
	return mountWith(t, root, rel, bind, "mode=0700")
}

// mountWith is mountAt with the tmpfs's mount options (size=64k: a full
// disk).
func mountWith(t *testing.T, root, rel string, bind bool, opts string) string {
	t.Helper()
	dir := filepath.Join(root, rel)
	aside := filepath.Join(t.TempDir(), "aside")
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if bind {
		src := filepath.Join(root, "disk")
		if err := os.Mkdir(src, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount(src, dir, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount on %s: %v", dir, err)
		}
	} else if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) { // EINVAL: the test unmounted it
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if out, err := exec.Command("cp", "-a", aside+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dir
}

// device is p's st_dev.
func device(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// mounted says whether /proc/self/mountinfo lists p as a mount point.
func mounted(t *testing.T, p string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// TestApplyRollbackOnAMountPoint: the etcd data dir is a mount point (a
// dedicated disk; renaming it fails with EBUSY): apply moves its contents
// into the backup and the new member's into it, records the entry as
// moved-contents, and rollback puts the old contents back; the mount
// point stays a mount point throughout. Both a tmpfs (another device)
// and a bind mount of the same file system (as hack/lab mounts it).
func TestApplyRollbackOnAMountPoint(t *testing.T) {
	if !inMountNamespace(t, "TestApplyRollbackOnAMountPoint") {
		return
	}
	for _, bind := range []bool{false, true} {
		t.Run(map[bool]string{false: "tmpfs", true: "bind-mount"}[bind], func(t *testing.T) { applyRollbackOnAMountPoint(t, bind) })
	}
}

func applyRollbackOnAMountPoint(t *testing.T, bind bool) {
	b, root := makeBundle(t), node(t)
	etcd := mountAt(t, root, "var/lib/etcd", bind)
	// /etc/kubernetes a mount point too (the lab's nodes have it so): its
	// copy is put back into it, not over it.
	kube := mountTmpfs(t, root, "etc/kubernetes")
	dev := device(t, etcd)
	if (dev == device(t, filepath.Dir(etcd))) != bind {
		t.Fatalf("%s: the device test says mount point %v, want %v", etcd, dev != device(t, filepath.Dir(etcd)), !bind)
	}
	before := tree(t, root, "etc", "var")
	cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
	for round := 1; round <= 2; round++ {
		if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: Apply on a mount point: %v", round, err)
		}
		checkApplied(t, root)
		if device(t, etcd) != dev || !mounted(t, etcd) {
			t.Fatalf("round %d: %s is no longer the mount point", round, etcd)
		}
		recs, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-????????????", nodeops.RecordFile))
		if len(recs) != 1 {
			t.Fatalf("round %d: records %v", round, recs)
		}
		raw, _ := os.ReadFile(recs[0])
		if !strings.Contains(string(raw), `"how": "moved-contents"`) {
			t.Errorf("round %d: the record does not say the data dir's contents were moved:\n%s", round, raw)
		}
		if got := tree(t, filepath.Dir(recs[0]), "var_lib_etcd")["var_lib_etcd/member/snap/db"]; got != "-rw------- old member db\n" {
			t.Errorf("round %d: the backup of the old member: %q", round, got)
		}
		if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: a second Apply: %v", round, err)
		}
		if _, err := nodeops.Rollback(context.Background(), cfg); err != nil {
			t.Fatalf("round %d: Rollback: %v", round, err)
		}
		if device(t, etcd) != dev || !mounted(t, etcd) || !mounted(t, kube) {
			t.Fatalf("round %d: after rollback %s or %s is no longer the mount point", round, etcd, kube)
		}
		checkRolledBack(t, root, before, fmt.Sprintf("round %d: ", round))
	}
}

// TestMountPointMoveResumed: apply stopped half way through moving the
// mount point's contents (here a FIFO it cannot copy, after member/ was
// moved; a kill there leaves the same state). Once the FIFO is gone, the
// next apply finishes the move and applies, and a rollback instead puts
// the old member back whole; the node is then as before either way.
func TestMountPointMoveResumed(t *testing.T) {
	if !inMountNamespace(t, "TestMountPointMoveResumed") {
		return
	}
	for _, next := range []string{"apply", "rollback"} {
		t.Run("then-"+next, func(t *testing.T) {
			b, root := makeBundle(t), node(t)
			etcd := mountTmpfs(t, root, "var/lib/etcd")
			before := tree(t, root, "etc", "var")
			fifo := filepath.Join(etcd, "zz.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
			_, err := nodeops.Apply(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), "moving /var/lib/etcd/zz.fifo aside") {
				t.Fatalf("Apply with a FIFO in the data dir: %v", err)
			}
			if _, err := os.Stat(filepath.Join(etcd, "member")); err == nil {
				t.Fatalf("member/ was not moved before the FIFO stopped apply")
			}
			if err := os.Remove(fifo); err != nil {
				t.Fatal(err)
			}
			if next == "apply" {
				if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
					t.Fatalf("the resumed Apply: %v", err)
				}
				checkApplied(t, root)
			}
			if _, err := nodeops.Rollback(context.Background(), cfg); err != nil {
				t.Fatalf("Rollback: %v", err)
			}
			checkRolledBack(t, root, before, "")
		})
	}
}

// TestApplyRefusesAFullEtcdDisk: the etcd data dir is a small disk of its
// own (a 64 KiB tmpfs) and the new member (256 KiB) does not fit. The
// backup's file system has room, and before issue 51 preflight counted
// only that one, so apply failed with ENOSPC half way through installing
// the member. Now preflight refuses before any change, naming the data
// dir's file system; on a resumed apply (after --stop-only: the old
// member is in the backup, the disk is empty) too. With room made (the
// disk replaced by a larger one), the same apply resumes and finishes.
func TestApplyRefusesAFullEtcdDisk(t *testing.T) {
	if !inMountNamespace(t, "TestApplyRefusesAFullEtcdDisk") {
		return
	}
	big := map[string]string{"etcd/m1/member/snap/db": strings.Repeat("new member db\n", 256<<10/14)}
	want := "on the file system of /var/lib/etcd (mounted at "
	t.Run("fresh", func(t *testing.T) {
		b, root := t.TempDir(), node(t)
		nodetest.Bundle(t, b, big)
		mountWith(t, root, "var/lib/etcd", false, "mode=0700,size=64k")
		before := tree(t, root, "etc", "var")
		cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
		res, err := nodeops.Apply(context.Background(), cfg)
		if err == nil || !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the new etcd member needs 256 KiB (+10%): make room there") {
			t.Fatalf("Apply with the member larger than the etcd disk: %v", err)
		}
		if res.Outcome != nodeops.OutcomeRefused {
			t.Errorf("outcome %s, want %s", res.Outcome, nodeops.OutcomeRefused)
		}
		if after := tree(t, root, "etc", "var"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed the node")
		}
	})
	t.Run("resumed", func(t *testing.T) {
		b, root := t.TempDir(), node(t)
		nodetest.Bundle(t, b, big)
		cfg := nodeops.Config{Bundle: b, Node: "n1", Root: root, SkipHealth: true}
		stop := cfg
		stop.StopOnly = true
		if _, err := nodeops.Apply(context.Background(), stop); err != nil {
			t.Fatalf("Apply --stop-only: %v", err)
		}
		// The data dir, moved into the backup, comes back as the small disk.
		if err := os.Mkdir(filepath.Join(root, "var/lib/etcd"), 0o700); err != nil {
			t.Fatal(err)
		}
		etcd := mountWith(t, root, "var/lib/etcd", false, "mode=0700,size=64k")
		recs, _ := filepath.Glob(filepath.Join(root, "var/lib/snapshift/backup/n1-*", nodeops.RecordFile))
		if len(recs) != 1 {
			t.Fatalf("records %v", recs)
		}
		rec, _ := os.ReadFile(recs[0])
		_, err := nodeops.Apply(context.Background(), cfg)
		if err == nil || !errors.Is(err, nodeops.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Fatalf("the resumed Apply with the member larger than the etcd disk: %v", err)
		}
		if again, _ := os.ReadFile(recs[0]); string(again) != string(rec) {
			t.Errorf("the refused apply changed backup.json:\n%s\nwas\n%s", again, rec)
		}
		if ents, _ := os.ReadDir(etcd); len(ents) != 0 {
			t.Errorf("the refused apply wrote into the data dir: %v", ents)
		}
		if err := syscall.Unmount(etcd, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := nodeops.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("Apply once the disk has room: %v", err)
		}
		if got, _ := os.ReadFile(filepath.Join(etcd, "member/snap/db")); string(got) != big["etcd/m1/member/snap/db"] {
			t.Errorf("the member installed is %d bytes, want %d", len(got), len(big["etcd/m1/member/snap/db"]))
		}
	})
}
