package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestWriterFlag: --writer bbolt (bbolt's own Put, the fallback) and the
// default bulk loader write the same migrated live state, through transform
// and through the fused restore; a --writer that names no writer is a usage
// error before anything is written.
func TestWriterFlag(t *testing.T) {
	work := t.TempDir()
	rules := []string{"--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "--quiet"}
	var outs []string
	for _, w := range []string{"bulk", "bbolt"} {
		out := filepath.Join(work, w+".db")
		if r := run(t, append([]string{"transform", samplePath, "--out", out, "--writer", w}, rules...)...); r.code != ExitOK {
			t.Fatalf("transform --writer %s: exit %d: %s", w, r.code, r.stderr)
		}
		outs = append(outs, out)
	}
	a, ia := liveState(t, outs[0])
	b, ib := liveState(t, outs[1])
	if fmt.Sprint(a) != fmt.Sprint(b) || ia.CurrentRevision != ib.CurrentRevision {
		t.Errorf("transform: the bulk and bbolt writers wrote different live states (revisions %d, %d)", ia.CurrentRevision, ib.CurrentRevision)
	}

	data := filepath.Join(work, "m1.etcd")
	args := append(fusedRestoreInto(samplePath, work), "--writer", "bbolt", "--quiet")
	if r := run(t, args...); r.code != ExitOK {
		t.Fatalf("restore --writer bbolt: exit %d: %s", r.code, r.stderr)
	}
	db, err := bolt.Open(filepath.Join(data, "member", "snap", "db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("the restored member's database: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"transform", samplePath, "--out", filepath.Join(work, "bad.db"), "--writer", "btree"},
		append(fusedRestoreInto(samplePath, filepath.Join(work, "bad")), "--writer", "btree"),
	} {
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, `--writer "btree"`) {
			t.Errorf("%s --writer btree: exit %d, stderr %q; want %d naming --writer", args[0], r.code, r.stderr, ExitUsage)
		}
	}
	for _, p := range []string{filepath.Join(work, "bad.db"), filepath.Join(work, "bad")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a refused --writer left %s", p)
		}
	}
}
