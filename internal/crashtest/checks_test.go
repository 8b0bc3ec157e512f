//go:build crash

package crashtest

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.yaml.in/yaml/v3"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/fsutil"
)

// Output states after a crash.
const (
	stAbsent   = "absent"
	stOld      = "old"      // as it was before the run
	stComplete = "complete" // the new content, checked
	stHalf     = "half"     // a set or pair between its renames, recognised
)

// boltCheck runs bbolt's consistency check (Tx.Check) on a database
// (a snapshot file's trailer is past bbolt's last page).
func boltCheck(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Errorf("bbolt open %s: %v", path, err)
		return
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Errorf("bbolt Tx.Check %s: %v", path, err)
	}
}

// checkSnapshot: out is absent, as before, or a snapshot verify accepts
// with the run's own rules.
func checkSnapshot(t *testing.T, work string, o output, before string) string {
	h := sha(t, filepath.Join(work, o.path))
	switch h {
	case "absent":
		return stAbsent
	case before:
		return stOld
	}
	args := append([]string{"verify", o.path, "--quiet"}, o.rules...)
	if r := run(t, plainBin, work, runOpts{}, args...); r.code != 0 {
		t.Errorf("verify %s: exit %d: %s%s", o.path, r.code, r.stdout, r.stderr)
	}
	boltCheck(t, filepath.Join(work, o.path))
	return stComplete
}

// etcdMu serialises the real etcd started on restored members (a
// scenario's members share a peer port).
var etcdMu sync.Mutex

// memberState is what a real etcd serves from a restored member.
type memberState struct {
	revision int64
	kvs      string // digest of every key, value (not an encrypted one) and mod revision
	keys     int
}

func startMember(t *testing.T, dataDir string, o output) memberState {
	t.Helper()
	etcdMu.Lock()
	defer etcdMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := etcdtest.StartRestored(ctx, etcdtest.RestoredConfig{DataDir: dataDir, Name: o.name, PeerURL: o.peer})
	if err != nil {
		t.Errorf("etcd on %s: %v", dataDir, err)
		return memberState{}
	}
	defer s.Close()
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Errorf("etcd on %s: %v", dataDir, err)
	}
	kvs, err := s.LiveKVs(ctx)
	if err != nil {
		t.Errorf("etcd on %s: %v", dataDir, err)
	}
	h := sha256.New()
	for _, kv := range kvs {
		v := kv.Value
		if strings.HasPrefix(string(v), "k8s:enc:") {
			v = nil // encrypted anew by each run, with a new nonce: its key and revision must match
		}
		fmt.Fprintf(h, "%q %q %d\n", kv.Key, v, kv.ModRevision)
	}
	return memberState{revision: rev, kvs: hex.EncodeToString(h.Sum(nil)), keys: len(kvs)}
}

// checkMember: the data dir (and a separate WAL dir) absent, or complete:
// bbolt's check passes and a real etcd started on it serves the reference
// run's revision and keys. A WAL dir without its data dir must be one the
// next run recognises (its marker).
func checkMember(t *testing.T, work string, o output, ref memberState) string {
	data := filepath.Join(work, o.path)
	empty, _ := fsutil.IsEmptyOrMissingDir(data)
	if empty {
		if o.wal == "" {
			return stAbsent
		}
		if _, err := os.Stat(filepath.Join(work, o.wal)); err != nil {
			return stAbsent
		}
		ls, _ := fsutil.FindLeftovers(work, o.wal)
		if len(ls) != 1 || !ls[0].HalfPublished {
			t.Errorf("%s is there without %s, and not recognised as half published: %+v", o.wal, o.path, ls)
		}
		return stHalf
	}
	boltCheck(t, filepath.Join(data, "member", "snap", "db"))
	if o.wal != "" {
		wals, _ := filepath.Glob(filepath.Join(work, o.wal, "*.wal"))
		if len(wals) == 0 {
			t.Errorf("%s is there, its WAL dir %s holds no WAL", o.path, o.wal)
		}
		return stComplete // etcdtest starts members with member/wal inside
	}
	got := startMember(t, data, o)
	if got != ref {
		t.Errorf("etcd on %s serves revision %d, %d keys (%s); the reference run's %d, %d keys (%s)",
			o.path, got.revision, got.keys, got.kvs[:8], ref.revision, ref.keys, ref.kvs[:8])
	}
	return stComplete
}

// checkBundle: the bundle absent, or every file in it parses and every
// member's database passes bbolt's check.
func checkBundle(t *testing.T, work string, o output) string {
	dir := filepath.Join(work, o.path)
	if empty, _ := fsutil.IsEmptyOrMissingDir(dir); empty {
		return stAbsent
	}
	files := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if err := parseFile(p); err != nil {
			t.Errorf("bundle file %s: %v", p, err)
		}
		if d.Name() == "db" {
			boltCheck(t, p)
		}
		return nil
	})
	if files < 20 {
		t.Errorf("bundle %s holds %d files", dir, files)
	}
	return stComplete
}

// parseFile parses a bundle file by its kind.
func parseFile(p string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if len(b) == 0 && !strings.Contains(p, "/wal/") {
		return fmt.Errorf("empty")
	}
	var v any
	switch filepath.Ext(p) {
	case ".json":
		return json.Unmarshal(b, &v)
	case ".yaml", ".conf":
		return yaml.Unmarshal(b, &v)
	case ".crt", ".key", ".pub", ".pem":
		if blk, _ := pem.Decode(b); blk == nil {
			return fmt.Errorf("no PEM block")
		}
	}
	return nil
}

// checkCertPair: apiserver.key and .crt as before, or a new matching
// pair; a key that does not match its certificate is a set between its
// renames.
func checkCertPair(t *testing.T, work string, o output, before string) string {
	key, crt := filepath.Join(work, o.path, "apiserver.key"), filepath.Join(work, o.path, "apiserver.crt")
	if sha(t, key)+sha(t, crt) == before {
		return stOld
	}
	if _, err := tls.LoadX509KeyPair(crt, key); err != nil {
		return stHalf
	}
	return stComplete
}

// checkManifests: every manifest old, or every one new, or (between the
// renames) some new but never kube-apiserver's before the others.
func checkManifests(t *testing.T, work string, o output) string {
	newer := map[string]bool{}
	for _, m := range []string{"kube-apiserver", "kube-controller-manager", "etcd", "kube-scheduler"} {
		b, err := os.ReadFile(filepath.Join(work, o.path, m+".yaml"))
		if err != nil {
			t.Errorf("manifest %s: %v", m, err)
			continue
		}
		newer[m] = strings.Contains(string(b), "172.24.0.0/16") || strings.Contains(string(b), "10.55.0.0/16")
	}
	n := 0
	for _, m := range []string{"kube-apiserver", "kube-controller-manager"} {
		if newer[m] {
			n++
		}
	}
	switch {
	case n == 0:
		return stOld
	case n == 2:
		return stComplete
	case newer["kube-apiserver"]:
		t.Errorf("kube-apiserver.yaml was replaced before kube-controller-manager.yaml")
	}
	return stHalf
}
