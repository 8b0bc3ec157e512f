package fsutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// deadTag is a process tag of a writer that no longer runs: a process
// that has exited (its pid, any start time).
func deadTag(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d-%d-%s", cmd.Process.Pid, 4242, bootID())
}

func TestTempNamesTellLiveFromDead(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	f, err := CreateTemp(out, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	o, ok := parseTemp(filepath.Base(f.Name()))
	if !ok || o.target != "out.db" || o.pid != os.Getpid() || !o.live() {
		t.Fatalf("%s: parsed %+v %v, want this live process's temporary of out.db", f.Name(), o, ok)
	}
	// Same pid, another start time: a reused pid, so a dead writer.
	reused := tempOwner{target: "out.db", pid: os.Getpid(), start: o.start + 1, boot: o.boot}
	otherBoot := tempOwner{target: "out.db", pid: os.Getpid(), start: o.start, boot: "ffffffff"}
	if reused.live() || otherBoot.live() {
		t.Errorf("a reused pid or another boot taken as live")
	}
	dead := filepath.Join(dir, ".out.db.snapshift-"+deadTag(t)+"-0badcafe.tmp")
	deadDir := filepath.Join(dir, ".out.db.snapshift-"+deadTag(t)+"-0badf00d")
	other := filepath.Join(dir, ".other.db.snapshift-"+deadTag(t)+"-0badcafe.tmp")
	shared := filepath.Join(dir, ".out.db.snapshift-"+deadTag(t)+"-00000001.tmp")
	for _, p := range []string{dead, other} {
		if err := os.WriteFile(p, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(deadDir, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Writable by others: not a file snapshift wrote; left alone.
	if err := os.WriteFile(shared, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o666)
	ls, err := CleanFor(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Leftover{}
	for _, l := range ls {
		got[l.Path] = l
	}
	if len(ls) != 3 || !got[dead].Removed || !got[deadDir].Removed || got[f.Name()].Removed || !got[f.Name()].Live {
		t.Fatalf("CleanFor = %+v; want the dead file and dir removed, the live one kept", ls)
	}
	for p, want := range map[string]bool{dead: false, deadDir: false, f.Name(): true, other: true, shared: true} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", p, err == nil, want)
		}
	}
	s := Summary(ls)
	if !strings.Contains(s, "removed 2 leftover(s)") || !strings.Contains(s, "left alone") || strings.Contains(s, "\n") {
		t.Errorf("Summary = %q", s)
	}
}

// A WAL dir published before its data dir, by a run killed in between:
// the next clean removes the WAL dir whole; once the data dir is there,
// only the marker.
func TestHalfPublishedPair(t *testing.T) {
	for _, second := range []bool{false, true} {
		dir := t.TempDir()
		wal, data := filepath.Join(dir, "wal"), filepath.Join(dir, "data")
		if err := os.MkdirAll(wal, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(wal, "0.wal"), []byte("x"), 0o600)
		marker, err := MarkPending(wal, data)
		if err != nil {
			t.Fatal(err)
		}
		if ls, _ := CleanFor(wal); len(ls) != 1 || !ls[0].Live || ls[0].Removed {
			t.Fatalf("a live run's pair: %+v", ls)
		}
		// The writer dies.
		deadMarker := filepath.Join(wal, ".pending.snapshift-"+deadTag(t)+"-00000002")
		if err := os.Rename(marker, deadMarker); err != nil {
			t.Fatal(err)
		}
		if second {
			os.MkdirAll(filepath.Join(data, "member"), 0o700)
		}
		ls, err := CleanFor(wal)
		if err != nil || len(ls) != 1 || !ls[0].Removed || ls[0].HalfPublished == second {
			t.Fatalf("second=%v: CleanFor = %+v, %v", second, ls, err)
		}
		_, werr := os.Stat(filepath.Join(wal, "0.wal"))
		_, merr := os.Stat(deadMarker)
		if (werr == nil) != second || merr == nil {
			t.Errorf("second=%v: wal kept %v, marker kept %v", second, werr == nil, merr == nil)
		}
	}
}

// Two runs publishing the same output without force: exactly one wins,
// the other is refused and the winner's file is intact (a check before a
// plain rename lets both through; RENAME_NOREPLACE does not).
func TestPublishNeverReplacesWithoutForce(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	for i := range 300 {
		os.Remove(out)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		tmps := make([]string, 2)
		for j := range tmps {
			f, err := CreateTemp(out, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "run %d", j)
			f.Close()
			tmps[j] = f.Name()
		}
		for j := range tmps {
			wg.Add(1)
			go func() { defer wg.Done(); errs[j] = Publish(tmps[j], out, false) }()
		}
		wg.Wait()
		won := 0
		for j, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, ErrExists):
				os.Remove(tmps[j])
			default:
				t.Fatal(err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d runs published the same output, want 1", i, won)
		}
	}
}

// A failed directory fsync after the rename: the output is in place and
// the error says so (ErrNotDurable), not that it is absent.
func TestPublishNotDurable(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	dirSyncer = func(string) error { return errors.New("EIO") }
	defer func() { dirSyncer = SyncDir }()
	f, err := CreateTemp(out, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = Publish(f.Name(), out, false)
	if !errors.Is(err, ErrNotDurable) || !strings.Contains(err.Error(), "is in place") {
		t.Fatalf("Publish with a failing fsync = %v, want ErrNotDurable", err)
	}
	if _, serr := os.Stat(out); serr != nil {
		t.Errorf("the output is not in place: %v", serr)
	}
	werr := WriteFile(filepath.Join(dir, "w"), []byte("x"), 0o600, false)
	if !errors.Is(werr, ErrNotDurable) {
		t.Errorf("WriteFile = %v", werr)
	}
}

// PublishDir replaces an empty directory, never a non-empty one.
func TestPublishDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "bundle")
	os.Mkdir(out, 0o700)
	tmp, err := MkdirTemp(out, "")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(tmp, "a", "b"), 0o700)
	os.WriteFile(filepath.Join(tmp, "a", "b", "ca.key"), []byte("k"), 0o600)
	if err := PublishDir(tmp, out); err != nil {
		t.Fatal(err)
	}
	tmp2, _ := MkdirTemp(out, "")
	if err := PublishDir(tmp2, out); !errors.Is(err, ErrExists) {
		t.Errorf("PublishDir over a full directory = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "a", "b", "ca.key")); string(b) != "k" {
		t.Errorf("bundle content %q", b)
	}
}

// A set is written whole before anything is replaced: a file of the set
// that cannot be written leaves every file of the set as it was (writing
// them one after the other replaced the key and then failed on the
// certificate), and no temporary behind.
func TestWriteSetIsStagedWhole(t *testing.T) {
	dir := t.TempDir()
	key, crt := filepath.Join(dir, "apiserver.key"), filepath.Join(dir, "missing", "apiserver.crt")
	os.WriteFile(key, []byte("old key"), 0o600)
	n, err := WriteSet([]SetFile{{Path: key, Data: []byte("new key"), Perm: 0o600}, {Path: crt, Data: []byte("new crt"), Perm: 0o644}})
	if err == nil || n != 0 {
		t.Fatalf("WriteSet into a missing directory = %d, %v", n, err)
	}
	if b, _ := os.ReadFile(key); string(b) != "old key" {
		t.Errorf("the key was replaced before its certificate was written: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left %d entries, want the key alone", len(entries))
	}
	os.Mkdir(filepath.Dir(crt), 0o700)
	set := []SetFile{{Path: key, Data: []byte("new key"), Perm: 0o600}, {Path: crt, Data: []byte("new crt"), Perm: 0o644}}
	if n, err := WriteSet(set); err != nil || n != 2 || set[0].Backup != key+".bak" || set[1].Backup != "" {
		t.Fatalf("WriteSet = %d, %v, %+v", n, err, set)
	}
	if b, _ := os.ReadFile(key + ".bak"); string(b) != "old key" {
		t.Errorf("backup %q", b)
	}
	if st, _ := os.Stat(crt); st.Mode().Perm() != 0o644 {
		t.Errorf("crt mode %v", st.Mode())
	}
}
