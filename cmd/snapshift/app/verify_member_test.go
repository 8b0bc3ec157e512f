package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verifyMember runs verify --data-dir with -o json and returns the exit
// code and each check's problems by name (nil: passed).
func verifyMember(t *testing.T, args ...string) (int, map[string][]string) {
	t.Helper()
	r := run(t, append([]string{"verify", "--quiet", "-o", "json", "--data-dir"}, args...)...)
	var rep struct {
		Checks []struct {
			Name     string   `json:"name"`
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("verify --data-dir %v: exit %d, %v; stdout %q stderr %q", args, r.code, err, r.stdout, r.stderr)
	}
	checks := map[string][]string{}
	for _, c := range rep.Checks {
		checks[c.Name] = c.Problems
		if !c.OK && len(c.Problems) == 0 {
			checks[c.Name] = []string{"failed"}
		}
	}
	return r.code, checks
}

// TestVerifyDataDir: verify --data-dir passes a member the one-pass
// restore wrote (each writer) and one etcd's own restore wrote, and fails,
// naming the check, a member behind its input's revision, a WAL with a
// flipped byte, and a data dir without a database.
func TestVerifyDataDir(t *testing.T) {
	work := t.TempDir()
	rules := []string{"--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16"}
	for _, w := range []string{"bulk", "bbolt"} {
		dir := filepath.Join(work, w)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if r := run(t, append(fusedRestoreInto(samplePath, dir), "--writer", w, "--quiet")...); r.code != ExitOK {
			t.Fatalf("restore --writer %s: %s", w, r.stderr)
		}
		code, checks := verifyMember(t, append([]string{filepath.Join(dir, "m1.etcd"), samplePath}, rules...)...)
		for _, name := range []string{"data dir", "WAL", "bbolt Tx.Check", "key bucket", "consistent index", "revision", "Service ClusterIPs in the new range", "compaction markers"} {
			if p, ok := checks[name]; !ok || p != nil {
				t.Errorf("--writer %s: check %q: ran %v, problems %v", w, name, ok, p)
			}
		}
		if code != ExitOK {
			t.Errorf("--writer %s: exit %d, checks %v", w, code, checks)
		}
	}

	// A member restored without a revision bump from the sample is behind a
	// migrated snapshot, whose changes are above the sample's revision.
	migrated := filepath.Join(work, "migrated.db")
	if r := run(t, append([]string{"transform", samplePath, "--out", migrated, "--quiet"}, rules...)...); r.code != ExitOK {
		t.Fatal(r.stderr)
	}
	plain := filepath.Join(work, "plain")
	if err := os.Mkdir(plain, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := run(t, append(restoreInto(samplePath, plain), "--bump-revision", "0", "--mark-compacted=false", "--quiet")...); r.code != ExitOK {
		t.Fatal(r.stderr)
	}
	member := filepath.Join(plain, "m1.etcd")
	if code, checks := verifyMember(t, member, samplePath); code != ExitOK {
		t.Errorf("etcd's own restore: exit %d, %v", code, checks)
	}
	code, checks := verifyMember(t, member, migrated)
	if code != ExitVerify || len(checks["revision"]) == 0 || !strings.Contains(checks["revision"][0], "below the input's") {
		t.Errorf("a member behind its input: exit %d, revision check %v", code, checks["revision"])
	}

	wals, _ := filepath.Glob(filepath.Join(member, "member", "wal", "*.wal"))
	if len(wals) != 1 {
		t.Fatalf("WAL files %v", wals)
	}
	b, err := os.ReadFile(wals[0])
	if err != nil {
		t.Fatal(err)
	}
	b[200] ^= 0xff // inside the first records
	if err := os.WriteFile(wals[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, checks := verifyMember(t, member); code != ExitVerify || len(checks["WAL"]) == 0 {
		t.Errorf("a flipped byte in the WAL: exit %d, checks %v", code, checks)
	}

	if err := os.Remove(filepath.Join(member, "member", "snap", "db")); err != nil {
		t.Fatal(err)
	}
	if code, checks := verifyMember(t, member); code != ExitVerify || len(checks["data dir"]) == 0 {
		t.Errorf("no database: exit %d, checks %v", code, checks)
	}
	if r := run(t, "verify", "--wal-dir", "x", samplePath); r.code != ExitUsage {
		t.Errorf("--wal-dir without --data-dir: exit %d, %q", r.code, r.stderr)
	}
}
