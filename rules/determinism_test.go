package rules_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/corpus"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
)

// sameBytesCase is one migration TestSameBytes runs twice.
type sameBytesCase struct {
	name string
	in   string
	opts rules.Options
	enc  *encryption.Config
	// fused: also restore one member per run (a different member each
	// time, as `snapshift restore` is run once per member) and compare the
	// members' databases.
	fused bool
}

// TestSameBytes is the property separate runs rely on (members restored
// one by one must agree, or etcd's corruption check fails them): every
// golden case and every corpus, migrated twice at different wall-clock
// seconds, writes the same snapshot file byte for byte (key bucket, the
// other buckets, bbolt's pages and meta, the sha256 trailer); on the
// corpora, two members restored in two runs hold the same database. The
// rules read no clock (objects they create are stamped from the input) and
// the encryption derives its nonces, so the clock is not injected: the
// second run of each case waits, if it must, until a second has passed
// since its first, so a timestamp taken from the clock would differ.
func TestSameBytes(t *testing.T) {
	t.Parallel()
	cases := append(goldenSameBytesCases(t), corpusSameBytesCases(t)...)
	first := make([]time.Time, len(cases))
	outs := make([][]string, len(cases))
	dir := t.TempDir()
	members := map[bool][]snapshot.RestoreConfig{}
	for i, c := range cases {
		first[i] = time.Now()
		outs[i] = sameBytesRun(t, c, filepath.Join(dir, "a", strconv.Itoa(i)), 0, &members)
	}
	for i, c := range cases {
		if outs[i] == nil {
			continue // refused (TestGolden checks the refusal)
		}
		if wait := time.Until(first[i].Add(1100 * time.Millisecond)); wait > 0 {
			time.Sleep(wait)
		}
		again := sameBytesRun(t, c, filepath.Join(dir, "b", strconv.Itoa(i)), 1, &members)
		if again == nil {
			t.Errorf("%s: the second run failed, the first did not", c.name)
			continue
		}
		for j := range outs[i] {
			compareFiles(t, c.name, outs[i][j], again[j])
		}
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases: the golden cases or corpora were not found", len(cases))
	}
}

// sameBytesRun migrates c once into dir: the snapshot file, and with fused
// the database of member m (of two, the same --initial-cluster in every
// run). It returns the files to compare, nil when the run refused.
func sameBytesRun(t *testing.T, c sameBytesCase, dir string, m int, members *map[bool][]snapshot.RestoreConfig) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rs, _, err := rules.Build(c.opts)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	out := filepath.Join(dir, "out.db")
	if _, err := transform.Run(context.Background(), transform.Config{Input: c.in, Output: out, Rules: rs, Encryption: c.enc}); err != nil {
		return nil
	}
	files := []string{out}
	if !c.fused {
		return files
	}
	if (*members)[true] == nil {
		(*members)[true], _ = fusedMembers(t, t.TempDir(), 2)
	}
	member := (*members)[true][m]
	member.DataDir = filepath.Join(dir, member.Name+".etcd")
	if rs, _, err = rules.Build(c.opts); err != nil {
		t.Fatal(err)
	}
	if _, err := transform.Run(context.Background(), transform.Config{Input: c.in, Rules: rs, Encryption: c.enc,
		Restore: []snapshot.RestoreConfig{member}}); err != nil {
		t.Fatalf("%s: restoring member %s: %v", c.name, member.Name, err)
	}
	return append(files, filepath.Join(member.DataDir, "member", "snap", "db"))
}

// compareFiles fails unless a and b hold the same bytes, naming the first
// difference and the live keys whose values differ.
func compareFiles(t *testing.T, name, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(x, y) {
		return
	}
	off := 0
	for off < min(len(x), len(y)) && x[off] == y[off] {
		off++
	}
	var keys []string
	if sa, sb := readStateRaw(t, a), readStateRaw(t, b); sa != nil && sb != nil {
		for _, k := range sa.keys() {
			if kb, ok := sb.Live[k]; !ok || !bytes.Equal(kb.KV.Value, sa.Live[k].KV.Value) || kb.Rev != sa.Live[k].Rev {
				keys = append(keys, k)
			}
		}
	}
	t.Errorf("%s: two runs wrote different %s (%d and %d bytes, first difference at byte %d); live keys that differ: %s",
		name, filepath.Base(a), len(x), len(y), off, capKeys(keys))
}

// readStateRaw reads a snapshot file or a member's database (no trailer).
func readStateRaw(t *testing.T, path string) *liveState {
	t.Helper()
	if filepath.Base(path) == "db" {
		return nil // a member's database: the byte offset says enough
	}
	return readState(t, path)
}

func capKeys(keys []string) string {
	if len(keys) > 5 {
		return strings.Join(keys[:5], ", ") + fmt.Sprintf(" and %d more", len(keys)-5)
	}
	if len(keys) == 0 {
		return "none (the difference is in the database's layout)"
	}
	return strings.Join(keys, ", ")
}

// goldenSameBytesCases are the golden cases, their inputs written to a
// real etcd as TestGolden writes them.
func goldenSameBytesCases(t *testing.T) []sameBytesCase {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "*", "*", "case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := codec.New()
	out := make([]sameBytesCase, len(dirs))
	inputs := make([][]corpus.KV, len(dirs))
	for i, f := range dirs {
		dir := filepath.Dir(f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := parseCaseFlags(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		inputs[i] = corpus.KVs(t, c, corpus.Read(t, filepath.Join(dir, "input.yaml")))
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		out[i] = sameBytesCase{name: "golden " + name, in: filepath.Join(t.TempDir(), "input.db"), opts: flags.options()}
	}
	// Written by real etcd servers, a few at a time: each waits mostly on
	// its start and its fsyncs, not on the CPU.
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 6)
		errs = make([]error, len(out))
	)
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = saveSnapshot(t.Context(), inputs[i], out[i].in)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// saveSnapshot is corpus.Write for another goroutine: kvs put, in order,
// into a new embedded etcd, whose snapshot is saved at path.
func saveSnapshot(ctx context.Context, kvs []corpus.KV, path string) (err error) {
	srv, err := etcdtest.Start(ctx, etcdtest.Config{})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()
	for _, kv := range kvs {
		if _, err := srv.Put(ctx, kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return srv.SaveSnapshot(ctx, path)
}

// corpusSameBytesCases are the corpora: the sample (plain, with the DNS
// bridge, encrypted at rest), k3s and RKE2, and generated clusters of
// every profile.
func corpusSameBytesCases(t *testing.T) []sameBytesCase {
	seed := rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"},
		PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}
	bridge := seed
	bridge.KeepServiceIPs, bridge.DNSBridge = []string{"kube-system/kube-dns"}, true
	enc, err := encryption.Parse([]byte(encConfig))
	if err != nil {
		t.Fatal(err)
	}
	out := []sameBytesCase{
		{name: "sample", in: samplePath, opts: seed, fused: true},
		{name: "sample --keep-service-ip kube-system/kube-dns --dns-bridge", in: samplePath, opts: bridge, fused: true},
		{name: "sample encrypted", in: encryptSample(t, enc), opts: seed, enc: enc, fused: true},
		{name: "sample encrypted --dns-bridge", in: encryptSample(t, enc), opts: bridge, enc: enc},
	}
	for _, program := range []string{"k3s", "rke2"} {
		entries, err := sample.K3s(program)
		if err != nil {
			t.Fatal(err)
		}
		var kvs []corpus.KV
		for _, e := range entries {
			kvs = append(kvs, corpus.KV{Key: e.Key, Value: e.Value})
		}
		out = append(out, sameBytesCase{name: program, in: corpus.Write(t, kvs), opts: seed})
	}
	for _, p := range gen.Profiles {
		in := filepath.Join(t.TempDir(), "gen.db")
		if _, err := gen.Generate(t.Context(), gen.Config{Path: in, Keys: 3000, Seed: 11, Profile: p}); err != nil {
			t.Fatal(err)
		}
		out = append(out, sameBytesCase{name: "generated " + p, in: in, opts: seed, fused: p == gen.Profiles[0]})
	}
	return out
}
