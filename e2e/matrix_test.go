//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcdsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/snapshot"
)

// defaultEtcdMatrix is the etcd every user runs: the newest patch of each
// minor on the Go module proxy (go list -m -versions go.etcd.io/etcd/server/v3),
// each with its own bbolt (3.5: v1.3.12, 3.6: v1.4.3, 3.7: v1.5.0).
// hack/e2e.sh builds the same list (SNAPSHIFT_E2E_ETCD overrides both).
var defaultEtcdMatrix = []string{"v3.5.35", "v3.6.16", "v3.7.3"}

func etcdMatrix() []string {
	if v := os.Getenv("SNAPSHIFT_E2E_ETCD"); v != "" {
		return strings.Fields(v)
	}
	return defaultEtcdMatrix
}

// etcdBins are the etcd server and etcdutl of one version, built by
// hack/build-etcd.sh VERSION. Missing binaries fail the test: make e2e
// builds them first.
type etcdBins struct{ ver, etcd, etcdutl string }

func etcdVersionBins(t *testing.T, ver string) etcdBins {
	t.Helper()
	cache := os.Getenv("SNAPSHIFT_E2E_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "snapshift-e2e")
	}
	dir := filepath.Join(cache, "etcd-"+ver)
	b := etcdBins{ver: ver, etcd: filepath.Join(dir, "etcd"), etcdutl: filepath.Join(dir, "etcdutl")}
	for _, p := range []string{b.etcd, b.etcdutl} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("etcd %s: %s not built: run hack/build-etcd.sh %s (make e2e does): %v", ver, filepath.Base(p), ver, err)
		}
	}
	return b
}

// corruptCheckArgs turn on every corruption check of one etcd version, each
// pass once a second: the initial check (a member whose hash differs from a
// peer's at one revision refuses to start), the periodic check (the leader
// raises alarm:CORRUPT) and the compaction-hash check. 3.5 has them as
// experimental flags; 3.6 deprecates those for feature gates and plain
// durations, which 3.7 keeps alone (server/v3/embed/config.go of each).
func corruptCheckArgs(ver string) []string {
	if strings.HasPrefix(ver, "v3.5.") {
		return []string{"--experimental-initial-corrupt-check=true", "--experimental-corrupt-check-time=1s",
			"--experimental-compact-hash-check-enabled=true", "--experimental-compact-hash-check-time=1s"}
	}
	return []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true", "--corrupt-check-time=1s",
		"--compact-hash-check-time=1s"}
}

// The log lines of etcd's corruption checker (server/v3/etcdserver/corrupt.go,
// the same words in 3.5, 3.6 and 3.7) that show a check ran and passed.
const (
	logInitialCheckStart  = "starting initial corruption check"
	logInitialCheckPassed = "initial corruption checking passed"
	logPeriodicCheck      = "finished peer corruption check"
	logCompactHashChecked = "successfully checked hash on whole cluster"
)

// matrixChecks are the named checks of one cell, in the order they run.
var matrixChecks = []string{"restore", "boot", "version", "initial-check", "serve", "periodic-check", "writes",
	"compact", "defrag", "compact-hash-check", "restart", "hashkv", "no-alarm", "corrupt-detected"}

// matrixResults collects pass/fail per etcd version × path × check for the
// table the test prints at the end.
type matrixResults struct {
	mu     sync.Mutex
	failed map[string]string // "ver|path|check" -> first failure
	passed map[string]bool
}

func (r *matrixResults) set(ver, path, check string, ok bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := ver + "|" + path + "|" + check
	if !ok {
		if _, seen := r.failed[k]; !seen {
			r.failed[k] = msg
		}
		return
	}
	r.passed[k] = true
}

func (r *matrixResults) table(vers, paths []string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-10s", "etcd", "path")
	for _, c := range matrixChecks {
		fmt.Fprintf(&b, " %s", c)
	}
	b.WriteString("\n")
	for _, v := range vers {
		for _, p := range paths {
			fmt.Fprintf(&b, "%-8s %-10s", v, p)
			for _, c := range matrixChecks {
				k := v + "|" + p + "|" + c
				cell := "-"
				if _, bad := r.failed[k]; bad {
					cell = "FAIL"
				} else if r.passed[k] {
					cell = "ok"
				}
				fmt.Fprintf(&b, " %-*s", len(c), cell)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// matrixCell is one etcd version × restore path × member count.
type matrixCell struct {
	bins    etcdBins
	path    string // fused, plain or etcdutl
	members int
	// storage is the input's storage version (etcd 3.6 on; 3.5 has none).
	storage string
	res     *matrixResults
}

func (c matrixCell) name() string { return fmt.Sprintf("%s/%d", c.path, c.members) }

// check records a named assertion and fails the test with a sentence that
// names the etcd version, the path and the check.
func (c matrixCell) check(t *testing.T, check string, ok bool, format string, args ...any) bool {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	c.res.set(c.bins.ver, c.name(), check, ok, msg)
	if !ok {
		t.Errorf("etcd %s, %s, %d member(s): %s: %s", c.bins.ver, c.path, c.members, check, msg)
	}
	return ok
}

// must is check that ends the cell on failure: what follows depends on it.
func (c matrixCell) must(t *testing.T, check string, ok bool, format string, args ...any) {
	t.Helper()
	if !c.check(t, check, ok, format, args...) {
		t.FailNow()
	}
}

// TestEtcdVersionMatrix is issue 39's "every etcd a user runs": member data
// dirs snapshift writes boot and serve on etcd 3.5, 3.6 and 3.7 servers,
// whose bbolt versions (v1.3.12, v1.4.3, v1.5.0) differ from the one
// snapshift writes with. Per version, the input is a snapshot that version's
// own etcd wrote (versionSnapshot). Then, one member and three members (each
// restored in its own process):
//
//   - fused: `snapshift restore INPUT --service-cidr ... --pod-network-cidr ...`
//   - plain: `snapshift restore` of the snapshot `snapshift transform` wrote
//   - etcdutl: that version's own `etcdutl snapshot restore` of the same
//     transform output
//
// each started by that version's etcd with the initial, periodic and
// compaction-hash corruption checks on, must boot, report the version and
// the input's storage version, pass the initial check, serve the migrated
// data (the same keys and values on every path; the fused and plain paths
// the same hashkv), take writes, compact, defragment, survive a rolling
// restart (each restarted member's initial check against live peers) and
// keep one hashkv across members and across the restart, with no alarm.
// control/3: a member migrated to another range is caught by the checks.
// The test ends with the table of version × path × check.
func TestEtcdVersionMatrix(t *testing.T) {
	vers := etcdMatrix()
	bins := make(map[string]etcdBins, len(vers))
	for _, v := range vers {
		bins[v] = etcdVersionBins(t, v)
	}
	snapBin := buildSnapshift(t)
	res := &matrixResults{failed: map[string]string{}, passed: map[string]bool{}}
	paths := []string{"fused/1", "fused/3", "plain/1", "plain/3", "etcdutl/1", "etcdutl/3"}
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("etcd version matrix (%s):\n%s", time.Since(start).Round(time.Second), res.table(vers, append(paths, "control/3")))
	})
	rules := []string{"--service-cidr", newServiceCIDR, "--pod-network-cidr", newPodCIDR}
	for _, v := range vers {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			b := bins[v]
			dir := t.TempDir()
			input, storage := versionSnapshot(t, b, filepath.Join(dir, "input"))
			migrated := filepath.Join(dir, "migrated.db")
			runBin(t, snapBin, append([]string{"transform", input, "--out", migrated, "--quiet"}, rules...)...)
			digests := map[string]string{}
			bootHash := map[string]uint32{}
			for _, p := range paths {
				var members int
				var path string
				fmt.Sscanf(strings.Replace(p, "/", " ", 1), "%s %d", &path, &members)
				cell := matrixCell{bins: b, path: path, members: members, storage: storage, res: res}
				t.Run(p, func(t *testing.T) {
					var restore func(m restoredMember, cluster string) []string
					switch path {
					case "fused":
						restore = func(m restoredMember, cluster string) []string {
							return append(snapshiftRestoreArgs(snapBin, input, m, cluster), rules...)
						}
					case "plain":
						restore = func(m restoredMember, cluster string) []string {
							return snapshiftRestoreArgs(snapBin, migrated, m, cluster)
						}
					case "etcdutl":
						restore = func(m restoredMember, cluster string) []string {
							return []string{b.etcdutl, "snapshot", "restore", migrated, "--name", m.name, "--data-dir", m.dataDir,
								"--initial-cluster", cluster, "--initial-advertise-peer-urls", m.peerURL,
								"--initial-cluster-token", "snapshift-e2e-matrix"}
						}
					}
					ms := restoreMatrixMembers(t, cell, t.TempDir(), restore)
					digest, h := judgeCell(t, cell, ms)
					digests[p], bootHash[p] = digest, h
				})
			}
			t.Run("control/3", func(t *testing.T) {
				// The third member migrated to another service range: this
				// etcd's checks, as turned on here, must notice.
				other := []string{"--service-cidr", "172.25.0.0/16", "--pod-network-cidr", newPodCIDR}
				cell := matrixCell{bins: b, path: "control", members: 3, res: res}
				ms := restoreMatrixMembers(t, cell, t.TempDir(), func(m restoredMember, cluster string) []string {
					if m.name == "m2" {
						return append(snapshiftRestoreArgs(snapBin, input, m, cluster), other...)
					}
					return append(snapshiftRestoreArgs(snapBin, input, m, cluster), rules...)
				})
				judgeControlCell(t, cell, ms)
			})
			// Every path serves the same keys and values; the two snapshift
			// paths (both bump the revision by the same amount) the same
			// hashkv at boot.
			for _, p := range paths[1:] {
				if digests[p] != "" && digests[paths[0]] != "" && digests[p] != digests[paths[0]] {
					t.Errorf("etcd %s: %s serves other keys or values than %s (digest %s, %s)", v, p, paths[0], digests[p], digests[paths[0]])
				}
			}
			if a, b := bootHash["fused/1"], bootHash["plain/1"]; a != 0 && b != 0 && a != b {
				t.Errorf("etcd %s: the fused and the plain path serve different data at their boot revision: hashkv %d, %d", v, a, b)
			}
		})
	}
}

// versionSnapshot is the sample as the etcd of bins writes it: the sample's
// live keys and values put, in revision order, into a new member of that
// etcd, defragmented (the whole file written anew by its bbolt) and saved
// through the Maintenance API as `etcdctl snapshot save` does, with etcd's
// sha256 trailer. Not the sample restored by its etcdutl: the sample was
// written by etcd 3.7 and carries its storage version (3.7.0), which etcd
// 3.6 refuses to boot ("version \"3.7.0\" is not supported"), as etcd
// refuses any downgrade of its data.
func versionSnapshot(t *testing.T, b etcdBins, dir string) (path, storageVersion string) {
	t.Helper()
	src, ix := testfile.OpenIndexed(t, membersSample)
	type kv struct{ k, v string }
	var live []kv
	err := src.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		live = append(live, kv{string(e.KV.Key), string(e.KV.Value)})
		return nil
	})
	if err != nil || len(live) == 0 {
		t.Fatalf("the sample's live keys: %d, %v", len(live), err)
	}
	ms := newMatrixMembers(t, dir, 1)
	m := ms[0]
	procs := startEtcdMembers(t, b, ms, "source")
	cli := matrixClient(t, ms)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := waitMembers(ctx, t, cli, ms, procs); err != nil {
		t.Fatalf("etcd %s source: %v", b.ver, err)
	}
	st, err := cli.Status(ctx, m.clientURL)
	if err != nil || !strings.HasPrefix("v"+st.Version, b.ver[:len("v3.x.")]) {
		t.Fatalf("etcd %s source: the server is not the binary under test (status %v, %v)", b.ver, st, err)
	}
	for _, e := range live {
		if _, err := cli.Put(ctx, e.k, e.v); err != nil {
			t.Fatalf("etcd %s source: put %s: %v", b.ver, e.k, err)
		}
	}
	if _, err := cli.Put(ctx, "/snapshift-e2e/source", b.ver); err != nil {
		t.Fatalf("etcd %s source: put: %v", b.ver, err)
	}
	if _, err := cli.Defragment(ctx, m.clientURL); err != nil {
		t.Fatalf("etcd %s source: defragment: %v", b.ver, err)
	}
	// From 3.6 on, etcd stamps its storage version into the data a few
	// seconds after the cluster version is decided: a snapshot a user takes
	// of a running 3.6 cluster carries it.
	if !strings.HasPrefix(b.ver, "v3.5.") {
		for {
			st, err := cli.Status(ctx, m.clientURL)
			if err == nil && st.StorageVersion != "" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("etcd %s source: no storage version after 60 s: %v", b.ver, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	out := filepath.Join(filepath.Dir(dir), "input.db")
	sv, err := etcdsnapshot.SaveWithVersion(ctx, zap.NewNop(), clientv3.Config{Endpoints: []string{m.clientURL}, DialTimeout: 5 * time.Second}, out)
	if err != nil {
		t.Fatalf("etcd %s source: snapshot save: %v", b.ver, err)
	}
	t.Logf("etcd %s source: %d live keys of the sample, saved with storage version %q", b.ver, len(live), sv)
	for _, p := range procs {
		p.stop()
	}
	return out, sv
}

// snapshiftRestoreArgs is `snapshift restore SNAPSHOT` of one member.
func snapshiftRestoreArgs(bin, snap string, m restoredMember, cluster string) []string {
	return []string{bin, "restore", snap, "--name", m.name, "--data-dir", m.dataDir, "--initial-cluster", cluster,
		"--initial-advertise-peer-urls", m.peerURL, "--initial-cluster-token", "snapshift-e2e-matrix", "--quiet"}
}

// newMatrixMembers names n members m0... in dir with free 127.0.0.1 ports.
func newMatrixMembers(t *testing.T, dir string, n int) []restoredMember {
	t.Helper()
	var ms []restoredMember
	for i := range n {
		peer, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		client, err := etcdtest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, restoredMember{name: fmt.Sprintf("m%d", i), dataDir: filepath.Join(dir, fmt.Sprintf("m%d.etcd", i)),
			peerURL: fmt.Sprintf("http://127.0.0.1:%d", peer), clientURL: fmt.Sprintf("http://127.0.0.1:%d", client)})
	}
	return ms
}

func clusterOf(ms []restoredMember) string {
	var c []string
	for _, m := range ms {
		c = append(c, m.name+"="+m.peerURL)
	}
	return strings.Join(c, ",")
}

// restoreMatrixMembers restores each member of a cell in its own process.
func restoreMatrixMembers(t *testing.T, c matrixCell, dir string, restore func(restoredMember, string) []string) []restoredMember {
	t.Helper()
	ms := newMatrixMembers(t, dir, c.members)
	cluster := clusterOf(ms)
	for _, m := range ms {
		args := restore(m, cluster)
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		c.must(t, "restore", err == nil, "%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return ms
}

// runBin runs a binary and fails the test on a non-zero exit.
func runBin(t *testing.T, bin string, args ...string) {
	t.Helper()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
}

// startEtcdMembers starts the etcd of bins on every member with every
// corruption check on; tag names the logs (a restart gets new ones).
func startEtcdMembers(t *testing.T, b etcdBins, ms []restoredMember, tag string) []*proc {
	t.Helper()
	var procs []*proc
	for _, m := range ms {
		procs = append(procs, startEtcdMember(t, b, m, clusterOf(ms), tag))
	}
	return procs
}

func startEtcdMember(t *testing.T, b etcdBins, m restoredMember, cluster, tag string) *proc {
	t.Helper()
	args := append([]string{"--name", m.name, "--data-dir", m.dataDir, "--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL, "--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--initial-cluster", cluster, "--initial-cluster-token", "snapshift-e2e-matrix"}, corruptCheckArgs(b.ver)...)
	p := start(t, fmt.Sprintf("etcd-%s-%s-%s", b.ver, m.name, tag), b.etcd, args, t.TempDir())
	dumpOnFailure(t, p)
	return p
}

func matrixClient(t *testing.T, ms []restoredMember) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.clientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// waitMembers waits until every member answers Status, and returns the
// first error that says why not (a member exited, or the deadline).
func waitMembers(ctx context.Context, t *testing.T, cli *clientv3.Client, ms []restoredMember, procs []*proc) error {
	t.Helper()
	for _, m := range ms {
		for {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cli.Status(sctx, m.clientURL)
			scancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("member %s does not answer: %w", m.name, err)
			}
			for _, p := range procs {
				if done, perr := p.exited(); done {
					return fmt.Errorf("%s exited (%v) before the cluster was up: %s", p.name, perr, tail(p.logText(), 1500))
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// waitLog waits until one of procs has logged a line holding every one of
// parts, or the deadline.
func waitLog(procs []*proc, d time.Duration, parts ...string) bool {
	deadline := time.Now().Add(d)
	for {
		for _, p := range procs {
			for line := range strings.Lines(p.logText()) {
				if !slices.ContainsFunc(parts, func(s string) bool { return !strings.Contains(line, s) }) {
					return true
				}
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// hashesAt is every member's hashkv at rev, and whether they agree, once
// every member has applied rev.
func hashesAt(ctx context.Context, cli *clientv3.Client, ms []restoredMember, rev int64) (uint32, string, bool, error) {
	var first *clientv3.HashKVResponse
	var all []string
	agree := true
	for _, m := range ms {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			st, err := cli.Status(ctx, m.clientURL)
			if err == nil && st.Header.Revision >= rev {
				break
			}
			if time.Now().After(deadline) {
				return 0, "", false, fmt.Errorf("member %s has not applied revision %d within 10 s (%v)", m.name, rev, err)
			}
		}
		h, err := cli.HashKV(ctx, m.clientURL, rev)
		if err != nil {
			return 0, "", false, fmt.Errorf("hashkv of %s at %d: %w", m.name, rev, err)
		}
		all = append(all, fmt.Sprintf("%s=%d (compacted at %d)", m.name, h.Hash, h.CompactRevision))
		if first == nil {
			first = h
		} else if h.Hash != first.Hash || h.CompactRevision != first.CompactRevision {
			agree = false
		}
	}
	return first.Hash, strings.Join(all, ", "), agree, nil
}

// judgeCell runs a cell's life on its etcd and records every check. It
// returns a digest of the keys and values served at boot and the hashkv at
// the boot revision.
func judgeCell(t *testing.T, c matrixCell, ms []restoredMember) (string, uint32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	began := time.Now()
	var phases []string
	phase := func(name string) { phases = append(phases, fmt.Sprintf("%s %.1fs", name, time.Since(began).Seconds())) }
	procs := startEtcdMembers(t, c.bins, ms, "boot")
	cli := matrixClient(t, ms)
	err := waitMembers(ctx, t, cli, ms, procs)
	c.must(t, "boot", err == nil, "%v", err)

	for _, m := range ms {
		st, err := cli.Status(ctx, m.clientURL)
		c.must(t, "version", err == nil, "status of %s: %v", m.name, err)
		c.must(t, "version", strings.HasPrefix("v"+st.Version, c.bins.ver[:len("v3.x.")]),
			"member %s reports etcd %s, not %s: not the binary under test", m.name, st.Version, c.bins.ver)
		c.check(t, "version", st.StorageVersion == c.storage,
			"member %s reports storage version %q, the input's is %q", m.name, st.StorageVersion, c.storage)
	}
	for _, p := range procs {
		text := p.logText()
		c.check(t, "initial-check", strings.Contains(text, logInitialCheckStart) && strings.Contains(text, logInitialCheckPassed),
			"%s did not log %q and %q: the initial corruption check did not run or did not pass", p.name, logInitialCheckStart, logInitialCheckPassed)
	}

	// serve: the migrated data, read from each member on its own
	// (serializable): every member holds the same keys and values.
	st, err := cli.Status(ctx, ms[0].clientURL)
	c.must(t, "serve", err == nil, "status: %v", err)
	bootRev := st.Header.Revision
	var digest string
	var served int
	for _, m := range ms {
		d, n, err := servedDigest(ctx, m, bootRev)
		c.must(t, "serve", err == nil && n > 0, "member %s: range of every key at revision %d: %d keys, %v", m.name, bootRev, n, err)
		if digest == "" {
			digest, served = d, n
		}
		c.check(t, "serve", d == digest, "member %s serves other keys or values than %s at revision %d", m.name, ms[0].name, bootRev)
	}
	svc, err := cli.Get(ctx, "/registry/services/specs/default/kubernetes")
	c.must(t, "serve", err == nil && len(svc.Kvs) == 1 && bytes.Contains(svc.Kvs[0].Value, []byte("172.24.0.1")),
		"the kubernetes Service is not served at its migrated address 172.24.0.1 (%v)", err)
	bootHash, all, agree, err := hashesAt(ctx, cli, ms, bootRev)
	c.must(t, "hashkv", err == nil && agree, "at boot revision %d: %s %v", bootRev, all, err)

	phase("boot+serve")
	if c.members > 1 {
		c.check(t, "periodic-check", waitLog(procs, 10*time.Second, logPeriodicCheck, `"number-of-peers-checked":2`),
			"no member logged %q with 2 peers within 10 s: the periodic corruption check did not run", logPeriodicCheck)
	}

	phase("periodic")
	// writes, then delete half, from every member in turn.
	for i := range 90 {
		m := ms[i%len(ms)]
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cli.Put(wctx, fmt.Sprintf("/snapshift-e2e/matrix/%03d", i), fmt.Sprintf("%s %d via %s", c.bins.ver, i, m.name))
		wcancel()
		c.must(t, "writes", err == nil, "put %d: %v", i, err)
	}
	_, err = cli.Delete(ctx, "/snapshift-e2e/matrix/00", clientv3.WithPrefix())
	c.must(t, "writes", err == nil, "delete: %v", err)
	gr, err := cli.Get(ctx, "/snapshift-e2e/matrix/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	c.must(t, "writes", err == nil, "count: %v", err)
	c.must(t, "writes", gr.Count == 80, "after 90 puts and deleting 10: %d keys, want 80", gr.Count)
	rev := gr.Header.Revision

	phase("writes")
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	c.must(t, "compact", err == nil, "compact at %d: %v", rev, err)
	_, err = cli.Get(ctx, "/snapshift-e2e/matrix/", clientv3.WithRev(rev-1))
	c.check(t, "compact", err != nil && strings.Contains(err.Error(), "compacted"), "a read below the compacted revision %d: %v, want compacted", rev, err)
	for _, m := range ms {
		_, err := cli.Defragment(ctx, m.clientURL)
		c.must(t, "defrag", err == nil, "defragment %s: %v", m.name, err)
	}
	phase("compact+defrag")
	if c.members > 1 {
		c.check(t, "compact-hash-check", waitLog(procs, 10*time.Second, logCompactHashChecked),
			"no member logged %q within 10 s of the compaction: the compaction-hash check did not compare the members", logCompactHashChecked)
	}
	phase("compact-hash")
	// One write past the compaction: hashkv at the compaction revision
	// itself is the hash etcd kept from the compaction (another value, its
	// compact revision -1) until a restart, on any data.
	pr, err := cli.Put(ctx, "/snapshift-e2e/matrix/after-compaction", c.bins.ver)
	c.must(t, "writes", err == nil, "put after the compaction: %v", err)
	hrev := pr.Header.Revision
	before, all, agree, err := hashesAt(ctx, cli, ms, hrev)
	c.must(t, "hashkv", err == nil && agree, "after compaction at %d and defragmentation, at %d: %s %v", rev, hrev, all, err)

	// restart: a rolling restart, one member after the other, as an
	// operator does: each restarted member's initial corruption check
	// compares its hash with live peers'.
	for i, m := range ms {
		procs[i].stop()
		c.check(t, "restart", stoppedCleanly(procs[i]), "%s did not stop on SIGTERM within 10 s: %v", procs[i].name, procs[i].cmd.ProcessState)
		procs[i] = startEtcdMember(t, c.bins, m, clusterOf(ms), "restart")
		err = waitMembers(ctx, t, cli, ms[i:i+1], procs[i:i+1])
		c.must(t, "restart", err == nil, "after the restart of %s: %v", m.name, err)
		text := procs[i].logText()
		c.check(t, "initial-check", strings.Contains(text, logInitialCheckPassed),
			"%s did not log %q after its restart", procs[i].name, logInitialCheckPassed)
		if c.members > 1 {
			for _, bad := range []string{"failed hash kv request", "cannot fetch hash"} {
				c.check(t, "initial-check", !strings.Contains(text, bad),
					"%s's initial check after its restart did not compare with every peer: it logged %q", procs[i].name, bad)
			}
		}
	}
	phase("restart")
	_, err = cli.Put(ctx, "/snapshift-e2e/matrix/after-restart", c.bins.ver)
	c.check(t, "restart", err == nil, "put after the restart: %v", err)
	time.Sleep(2 * time.Second) // two periodic checks on the restarted members
	after, all, agree, err := hashesAt(ctx, cli, ms, hrev)
	c.must(t, "hashkv", err == nil && agree, "after the restart at %d: %s %v", hrev, all, err)
	c.check(t, "hashkv", after == before, "at revision %d: %d before the restart, %d after", hrev, before, after)
	st, err = cli.Status(ctx, ms[0].clientURL)
	c.must(t, "hashkv", err == nil, "status: %v", err)
	_, all, agree, err = hashesAt(ctx, cli, ms, st.Header.Revision)
	c.check(t, "hashkv", err == nil && agree, "at the last revision %d: %s %v", st.Header.Revision, all, err)
	alarms, err := cli.AlarmList(ctx)
	c.must(t, "no-alarm", err == nil, "alarm list: %v", err)
	c.check(t, "no-alarm", len(alarms.Alarms) == 0, "alarms raised: %v", alarms.Alarms)
	for _, p := range procs {
		done, perr := p.exited()
		c.check(t, "no-alarm", !done, "%s exited while the test ran: %v", p.name, perr)
	}
	t.Logf("etcd %s, %s, %d member(s): booted, initial check passed, served %d keys at revision %d, 90 writes, compacted at %d, defragmented, restarted; hashkv %d on every member before and after the restart; no alarm (%s)",
		c.bins.ver, c.path, c.members, served, bootRev, rev, after, strings.Join(phases, ", "))
	return digest, bootHash
}

// judgeControlCell starts a cell whose members hold different data: a
// member must refuse to start with an inconsistency (the initial check) or
// alarm:CORRUPT must be raised (the periodic check), within 60 s.
func judgeControlCell(t *testing.T, c matrixCell, ms []restoredMember) {
	t.Helper()
	procs := startEtcdMembers(t, c.bins, ms, "control")
	cli := matrixClient(t, ms)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if done, _ := p.exited(); done && strings.Contains(p.logText(), "inconsistency") {
				c.check(t, "corrupt-detected", true, "")
				t.Logf("etcd %s control: %s exited: the initial corruption check found the member that differs", c.bins.ver, p.name)
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		alarms, err := cli.AlarmList(ctx)
		cancel()
		if err == nil {
			for _, a := range alarms.Alarms {
				if a.Alarm == etcdserverpb.AlarmType_CORRUPT {
					c.check(t, "corrupt-detected", true, "")
					t.Logf("etcd %s control: alarm:CORRUPT on member %x: the periodic check found the member that differs", c.bins.ver, a.MemberID)
					return
				}
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	c.check(t, "corrupt-detected", false, "members holding different data ran 60 s without an inconsistency or alarm:CORRUPT: the corruption checks are not on")
}

// stoppedCleanly: the process exited by itself or by the SIGTERM it was
// sent (etcd re-raises it after a graceful stop), not by the SIGKILL that
// follows when it hangs.
func stoppedCleanly(p *proc) bool {
	ps := p.cmd.ProcessState
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && (ws.Exited() || (ws.Signaled() && ws.Signal() == syscall.SIGTERM))
}

// servedDigest ranges every key a member serves at rev (serializable, so
// the member's own data) and hashes keys and values, not revisions: the
// etcdutl path does not bump the revision as snapshift restore does.
func servedDigest(ctx context.Context, m restoredMember, rev int64) (string, int, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", 0, err
	}
	defer cli.Close()
	r, err := cli.Get(ctx, "", clientv3.WithFromKey(), clientv3.WithRev(rev), clientv3.WithSerializable())
	if err != nil {
		return "", 0, err
	}
	h := sha256.New()
	keys := make([]string, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		keys = append(keys, string(kv.Key))
		fmt.Fprintf(h, "%d:%s%d:", len(kv.Key), kv.Key, len(kv.Value))
		h.Write(kv.Value)
	}
	if !slices.IsSorted(keys) {
		return "", 0, fmt.Errorf("range not in key order")
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8]), len(r.Kvs), nil
}
