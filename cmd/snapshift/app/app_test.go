package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"

	"github.com/snapshift/snapshift/inspect"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
)

func TestInspect(t *testing.T) {
	in := copySample(t)
	before := testfile.Sum(t, in)
	_, ix := liveState(t, in)

	r := run(t, "inspect", in)
	if r.code != ExitOK {
		t.Fatalf("inspect: exit %d, stderr %s", r.code, r.stderr)
	}
	for _, want := range []string{"Snapshot:", in, fmt.Sprintf("%d live", ix.LiveKeys), "verified (sha256 ", sample.ServiceCIDR, sample.PodCIDR} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect text output lacks %q:\n%s", want, r.stdout)
		}
	}

	for _, args := range [][]string{{"inspect", in, "-o", "json"}, {"inspect", "-o", "json", in}, {"inspect", in, "--output=json", "-q"}} {
		r = run(t, args...)
		if r.code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %s", args, r.code, r.stderr)
		}
		var rep struct {
			LiveKeys int `json:"liveKeys"`
			Networks struct {
				ServiceCIDR []struct {
					Source string   `json:"source"`
					CIDRs  []string `json:"cidrs"`
				} `json:"serviceCIDR"`
			} `json:"networks"`
			Resources []struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			} `json:"resources"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: stdout is not JSON: %v\n%s", args, err, r.stdout)
		}
		if rep.LiveKeys != ix.LiveKeys {
			t.Errorf("%v: liveKeys %d, want %d", args, rep.LiveKeys, ix.LiveKeys)
		}
		found := false
		for _, s := range rep.Networks.ServiceCIDR {
			found = found || slices.Contains(s.CIDRs, sample.ServiceCIDR)
		}
		if !found {
			t.Errorf("%v: networks.serviceCIDR %+v lacks %s", args, rep.Networks.ServiceCIDR, sample.ServiceCIDR)
		}
		services := 0
		for _, c := range rep.Resources {
			if c.Name == "services" {
				services = c.Count
			}
		}
		if services != len(sample.Services()) {
			t.Errorf("%v: resources.services = %d, want %d", args, services, len(sample.Services()))
		}
	}
	if r.stderr != "" {
		t.Errorf("--quiet still wrote to stderr: %q", r.stderr)
	}
	if testfile.Sum(t, in) != before {
		t.Fatal("inspect modified its input")
	}
}

func TestLs(t *testing.T) {
	in := copySample(t)
	const prefix = "/registry/services/specs/"
	var want []string
	for _, s := range sample.Services() {
		want = append(want, s.Key())
	}
	slices.Sort(want)

	r := run(t, "ls", in, prefix)
	if r.code != ExitOK {
		t.Fatalf("ls: exit %d, stderr %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) < 1 || !strings.HasPrefix(lines[0], "KEY") {
		t.Fatalf("ls output has no header:\n%s", r.stdout)
	}
	var keys []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 5 || f[4] != "v1/Service" {
			t.Errorf("ls line %q: want KEY REVISION VERSION SIZE v1/Service", l)
			continue
		}
		keys = append(keys, f[0])
	}
	if !slices.Equal(keys, want) {
		t.Errorf("ls %s listed %v, want %v", prefix, keys, want)
	}

	r = run(t, "ls", in, prefix, "-o", "json")
	var list struct{ Items []inspect.ListEntry }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != ExitOK {
		t.Fatalf("ls -o json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	entries := list.Items
	live, _ := liveState(t, in)
	if len(entries) != len(want) {
		t.Fatalf("ls -o json: %d entries, want %d", len(entries), len(want))
	}
	for i, e := range entries {
		kv := live[e.Key]
		if e.Key != want[i] || e.ModRevision != kv.ModRevision || e.Version != kv.Version || e.Size != len(kv.Value) {
			t.Errorf("entry %+v does not match the snapshot (%s: mod %d version %d size %d)", e, want[i], kv.ModRevision, kv.Version, len(kv.Value))
		}
	}

	r = run(t, "ls", in, "/registry/nothing-here/", "-o", "json")
	if r.code != ExitOK || !strings.Contains(r.stdout, `"items": []`) {
		t.Errorf("ls of an empty prefix: exit %d, %q; want no items", r.code, r.stdout)
	}
}

func TestGet(t *testing.T) {
	in := copySample(t)
	live, _ := liveState(t, in)
	var secretKeys []string
	for _, k := range sortedKeys(live) {
		if strings.HasPrefix(k, "/registry/secrets/") {
			secretKeys = append(secretKeys, k)
		}
	}
	if len(secretKeys) == 0 {
		t.Fatal("the sample has no Secrets")
	}
	// The secret values the sample keeps live (one lives only in history).
	var liveSecrets []string
	for _, s := range sample.SecretValues() {
		for _, k := range secretKeys {
			if bytes.Contains(live[k].Value, []byte(s)) {
				liveSecrets = append(liveSecrets, s)
				break
			}
		}
	}
	if len(liveSecrets) < 5 {
		t.Fatalf("only %d secret values are live in the sample's Secrets", len(liveSecrets))
	}

	var shown strings.Builder
	for _, k := range secretKeys {
		for _, format := range []string{"yaml", "json"} {
			r := run(t, "get", in, k, "-o", format) // run checks that no secret is printed
			if r.code != ExitOK || !strings.Contains(r.stdout, "redacted") || !strings.Contains(r.stdout, "Secret") {
				t.Errorf("get %s -o %s: exit %d, want a redacted Secret:\n%s%s", k, format, r.code, r.stdout, r.stderr)
			}
		}
		// --show-secrets after the positional arguments.
		r := run(t, "get", in, k, "--show-secrets")
		if r.code != ExitOK || strings.Contains(r.stdout, "redacted") {
			t.Errorf("get %s --show-secrets: exit %d:\n%s%s", k, r.code, r.stdout, r.stderr)
		}
		shown.WriteString(r.stdout)
	}
	for _, s := range liveSecrets {
		if !strings.Contains(shown.String(), base64.StdEncoding.EncodeToString([]byte(s))) {
			t.Errorf("--show-secrets did not show the value %.16q...", s)
		}
	}
	if findSecret(shown.String()) == "" {
		t.Error("the leak detector finds nothing in --show-secrets output: it would miss a leak")
	}

	dns := "/registry/services/specs/kube-system/kube-dns"
	if r := run(t, "get", in, dns); r.code != ExitOK || !strings.Contains(r.stdout, sample.DNSServiceIP) || !strings.Contains(r.stdout, "kind: Service") {
		t.Errorf("get %s: exit %d:\n%s%s", dns, r.code, r.stdout, r.stderr)
	}

	missing := "/registry/secrets/demo/does-not-exist"
	r := run(t, "get", in, missing)
	if r.code == ExitOK {
		t.Fatalf("get of a missing key: exit 0:\n%s", r.stdout)
	}
	if lines := r.stderrLines(); len(lines) != 1 || !strings.Contains(lines[0], missing) {
		t.Errorf("get of a missing key: stderr %q, want one line naming the key", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("get of a missing key printed %q", r.stdout)
	}
}

func TestTransform(t *testing.T) {
	in := copySample(t)
	before := testfile.Sum(t, in)
	srcLive, ix := liveState(t, in)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "out.db")

	// Flags after the positional argument.
	r := run(t, "transform", in, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("transform: exit %d, stderr %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf("wrote %d unchanged", ix.LiveKeys)) {
		t.Errorf("transform report:\n%s", r.stdout)
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(out)
	if st1.Mode().Perm() != 0o600 {
		t.Errorf("output mode %v, want 0600", st1.Mode().Perm())
	}
	outLive, _ := liveState(t, out)
	if len(outLive) != len(srcLive) {
		t.Errorf("output holds %d live keys, input %d", len(outLive), len(srcLive))
	}

	// A second run without --force is refused and leaves the output alone.
	r = run(t, "transform", in, "--out", out)
	if r.code != ExitRefused {
		t.Errorf("second transform without --force: exit %d, want %d (stderr %q)", r.code, ExitRefused, r.stderr)
	}
	if lines := r.stderrLines(); len(lines) == 0 || !strings.Contains(lines[len(lines)-1], out) || !strings.Contains(lines[len(lines)-1], "--force") {
		t.Errorf("refusal message %q: want it to name the output and --force", r.stderr)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, first) {
		t.Error("refused run changed the existing output")
	}
	if names := testfile.Names(t, outDir); !slices.Equal(names, []string{"out.db"}) {
		t.Errorf("output dir holds %v", names)
	}

	// --force replaces it (a new file renamed over the old one).
	r = run(t, "transform", in, "--out", out, "--force", "--quiet")
	if r.code != ExitOK {
		t.Fatalf("transform --force: exit %d, stderr %s", r.code, r.stderr)
	}
	if r.stderr != "" {
		t.Errorf("--quiet still wrote to stderr: %q", r.stderr)
	}
	st2, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(st1, st2) {
		t.Error("--force did not replace the output")
	}
	if l, _ := liveState(t, out); len(l) != len(srcLive) {
		t.Error("forced output is not a valid transform")
	}

	// --dry-run writes nothing.
	dry := filepath.Join(outDir, "dry.db")
	r = run(t, "transform", in, "--dry-run", "--out", dry)
	if r.code != ExitOK || !strings.Contains(r.stdout, "would write") {
		t.Errorf("transform --dry-run: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = run(t, "transform", in, "--dry-run"); r.code != ExitOK {
		t.Errorf("transform --dry-run without --out: exit %d: %s", r.code, r.stderr)
	}
	if names := testfile.Names(t, outDir); !slices.Equal(names, []string{"out.db"}) {
		t.Errorf("dry run left %v in the output dir", names)
	}

	// JSON report.
	jout := filepath.Join(outDir, "j.db")
	r = run(t, "transform", "-o", "json", in, "--out="+jout)
	var rep transform.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitOK {
		t.Fatalf("transform -o json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if rep.Copied != ix.LiveKeys || rep.Output == nil || rep.Output.Path != jout || rep.CompactRevision != ix.CurrentRevision+1 {
		t.Errorf("JSON report %+v", rep)
	}
	if testfile.Sum(t, in) != before {
		t.Fatal("transform modified its input")
	}
}

func TestRestore(t *testing.T) {
	in := copySample(t)
	srcLive, ix := liveState(t, in)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	if r := run(t, "transform", in, "--out", out, "-q"); r.code != ExitOK {
		t.Fatalf("transform: exit %d, %s", r.code, r.stderr)
	}
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", port)
	dataDir := filepath.Join(dir, "m1.etcd")
	// No --initial-advertise-peer-urls: the member's entry in
	// --initial-cluster is its default (the member starts on it below).
	restoreArgs := func(d string) []string {
		return []string{"restore", out, "--name", "m1", "--data-dir", d, "--initial-cluster", "m1=" + peer}
	}
	r := run(t, restoreArgs(dataDir)...)
	if r.code != ExitOK {
		t.Fatalf("restore: exit %d, stderr %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "m1") || !strings.Contains(r.stdout, dataDir) {
		t.Errorf("restore report: %s", r.stdout)
	}
	if names := testfile.Names(t, dir); !slices.Equal(names, []string{"m1.etcd", "out.db"}) {
		t.Errorf("restore left %v beside the data dir", names)
	}

	srv := etcdtest.StartRestoredT(t, etcdtest.RestoredConfig{DataDir: dataDir, Name: "m1", PeerURL: peer})
	kvs, err := srv.LiveKVs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, string(kv.Key))
		w, ok := srcLive[string(kv.Key)]
		if !ok || !bytes.Equal(w.Value, kv.Value) || w.ModRevision != kv.ModRevision || w.CreateRevision != kv.CreateRevision || w.Version != kv.Version {
			t.Errorf("%s: restored %d bytes mod %d create %d version %d; input mod %d create %d version %d (found %v)",
				kv.Key, len(kv.Value), kv.ModRevision, kv.CreateRevision, kv.Version, w.ModRevision, w.CreateRevision, w.Version, ok)
		}
	}
	if want := sortedKeys(srcLive); !slices.Equal(got, want) {
		t.Errorf("restored keys differ from the input's: %d vs %d", len(got), len(want))
	}
	rev, err := srv.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rev < ix.CurrentRevision+snapshot.DefaultRevisionBump {
		t.Errorf("restored revision %d: the default bump was not applied", rev)
	}

	// The restored cluster lives on; its next snapshot (with etcdutl's bump
	// marker in it) goes through snapshift again.
	if _, err := srv.Put(context.Background(), "/registry/configmaps/demo/after-restore", []byte("x")); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.db")
	if err := srv.SaveSnapshot(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	again2 := filepath.Join(t.TempDir(), "again-out.db")
	if r := run(t, "transform", again, "--out", again2, "-q", "-o", "json"); r.code != ExitOK {
		t.Fatalf("transform of a snapshot of the restored cluster: exit %d: %s", r.code, r.stderr)
	} else {
		var rep transform.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Input.CurrentRevision <= rev || rep.CompactRevision <= rep.Input.CurrentRevision || rep.Copied != len(srcLive)+1 {
			t.Errorf("second transform: input revision %d (restored member was at %d), compacted at %d, copied %d",
				rep.Input.CurrentRevision, rev, rep.CompactRevision, rep.Copied)
		}
	}
	if err := os.Remove(again); err != nil {
		t.Fatal(err)
	}

	// A non-empty data dir is refused and left as it was.
	busy := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(busy, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(busy, "member", "keep.txt"), []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, restoreArgs(busy)...)
	if r.code != ExitRefused {
		t.Errorf("restore into a non-empty dir: exit %d, want %d (stderr %q)", r.code, ExitRefused, r.stderr)
	}
	if lines := r.stderrLines(); len(lines) != 1 || !strings.Contains(lines[0], busy) {
		t.Errorf("stderr %q: want one line naming the data dir", r.stderr)
	}
	if names := testfile.Names(t, busy); !slices.Equal(names, []string{"member"}) {
		t.Errorf("non-empty data dir now holds %v", names)
	}
	if names := testfile.Names(t, filepath.Join(busy, "member")); !slices.Equal(names, []string{"keep.txt"}) {
		t.Errorf("non-empty data dir's member/ now holds %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(busy, "member", "keep.txt")); string(b) != "precious" {
		t.Error("file in the non-empty data dir was changed")
	}
	// The live data dir of the running member is refused too.
	if r = run(t, restoreArgs(dataDir)...); r.code != ExitRefused {
		t.Errorf("restore into the running member's data dir: exit %d", r.code)
	}
	if names := testfile.Names(t, dir); !slices.Equal(names, []string{"busy", "m1.etcd", "out.db"}) {
		t.Errorf("refused restores left %v", names)
	}
}

// badInputs returns damaged or foreign files, each written into its own
// directory so that any file a command leaves behind is visible.
func badInputs(t *testing.T) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	rnd := make([]byte, 64*1024+32)
	rand.New(rand.NewSource(1)).Read(rnd)
	wrongTrailer := bytes.Clone(data)
	wrongTrailer[len(wrongTrailer)-1] ^= 1
	return map[string][]byte{
		"empty":                []byte{},
		"random":               rnd,
		"text":                 []byte(strings.Repeat("apiVersion: v1\nkind: ConfigMap\n", 64)),
		"truncated-half":       data[:len(data)/2],
		"truncated-512+32":     data[:8192+32],
		"truncated-last-byte":  data[:len(data)-1],
		"wrong-trailer":        wrongTrailer,
		"truncated-no-trailer": data[:len(data)-32],
	}
}

// checkBadInput runs inspect and transform on every bad input and checks
// exit code 3, an error that names the file, an unchanged input and an
// empty output directory. With oneLine, stderr must be exactly that line.
func checkBadInput(t *testing.T, extra []string, oneLine bool) {
	for name, data := range badInputs(t) {
		for _, cmd := range []string{"inspect", "transform"} {
			t.Run(cmd+"/"+name, func(t *testing.T) {
				in := filepath.Join(t.TempDir(), name+".db")
				if err := os.WriteFile(in, data, 0o600); err != nil {
					t.Fatal(err)
				}
				before := testfile.Sum(t, in)
				outDir := t.TempDir()
				out := filepath.Join(outDir, "out.db")
				args := []string{cmd, in}
				if cmd == "transform" {
					args = append(args, "--out", out)
				}
				r := run(t, append(args, extra...)...)
				if r.code != ExitBadInput {
					t.Errorf("exit %d, want %d (stderr %q)", r.code, ExitBadInput, r.stderr)
				}
				lines := r.stderrLines()
				if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "snapshift: ") || !strings.Contains(lines[len(lines)-1], in) {
					t.Errorf("stderr %q: want an error line naming %s", r.stderr, in)
				}
				if oneLine && len(lines) != 1 {
					t.Errorf("stderr has %d lines, want exactly the error:\n%s", len(lines), r.stderr)
				}
				if r.stdout != "" {
					t.Errorf("stdout %q, want nothing", r.stdout)
				}
				if testfile.Sum(t, in) != before {
					t.Error("input modified")
				}
				if names := testfile.Names(t, outDir); len(names) != 0 {
					t.Errorf("output dir holds %v, want nothing (no output, no temporary files)", names)
				}
			})
		}
	}
}

func TestBadInputs(t *testing.T) {
	checkBadInput(t, []string{"--quiet"}, true)
}

// TestBadInputStderrIsOneLine: without --quiet, a bad input must still
// print exactly one line: the error. A phase that failed must not be
// reported as finished.
func TestBadInputStderrIsOneLine(t *testing.T) {
	checkBadInput(t, nil, true)
}

func TestUsageErrors(t *testing.T) {
	in := copySample(t)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "out.db")
	cases := [][]string{
		{"inspect"},
		{"inspect", in, in},
		{"transform"},
		{"transform", in},
		{"ls"},
		{"get", in},
		{"restore"},
		{"inspect", in, "--bogus"},
		{"transform", in, "--out", out, "--bogus"},
		{"transform", "--nope", in, "--out", out},
		{"--bogus", "inspect", in},
		{"inspect", in, "-o", "toml"},
		{"get", in, "/registry/services/specs/default/kubernetes", "-o", "text"},
	}
	for _, args := range cases {
		r := run(t, args...)
		if r.code != ExitUsage {
			t.Errorf("snapshift %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), r.code, ExitUsage, r.stderr)
		}
		if len(r.stderrLines()) == 0 {
			t.Errorf("snapshift %s: nothing on stderr", strings.Join(args, " "))
		}
	}
	if names := testfile.Names(t, outDir); len(names) != 0 {
		t.Errorf("usage errors left %v", names)
	}
}

// TestUnknownCommandIsUsageError: a mistyped command is a bad command line
// (exit 2), not an unexpected failure (exit 1).
func TestUnknownCommandIsUsageError(t *testing.T) {
	r := run(t, "transfrom", "in.db", "--out", "out.db")
	if r.code != ExitUsage {
		t.Errorf("unknown command: exit %d, want %d (stderr %q)", r.code, ExitUsage, r.stderr)
	}
	if !strings.Contains(r.stderr, "transfrom") {
		t.Errorf("stderr %q does not name the unknown command", r.stderr)
	}
}

// TestNoSecretsInAnyOutput runs every command on the sample, and on the
// transform's output, without --show-secrets; run fails the test on any
// secret in stdout or stderr.
func TestNoSecretsInAnyOutput(t *testing.T) {
	in := copySample(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.db")
	live, _ := liveState(t, in)
	n := 0
	must := func(args ...string) {
		t.Helper()
		n++
		if r := run(t, args...); r.code != ExitOK {
			t.Errorf("snapshift %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	for _, format := range []string{"text", "json"} {
		must("inspect", in, "-o", format)
		must("ls", in, "-o", format)
		must("transform", in, "--dry-run", "-o", format)
	}
	must("transform", in, "--out", out)
	must("transform", in, "--out", out, "--force", "-o", "json")
	for _, k := range sortedKeys(live) {
		must("get", in, k)
		must("get", out, k, "-o", "json")
	}
	must("inspect", out)
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", port)
	must("restore", out, "--name", "m1", "--data-dir", filepath.Join(dir, "m1"), "--initial-cluster", "m1="+peer, "--initial-advertise-peer-urls", peer, "-o", "json")
	// Failures print errors; they must not quote values either.
	run(t, "get", in, "/registry/secrets/demo/missing")
	run(t, "transform", in, "--out", out)
	if n < len(live)*2 {
		t.Fatalf("only %d commands ran", n)
	}
}

// TestPlanTextBoundsChanges: on a cluster with hundreds of Services the text
// report lists the first maxChangesPerRule changes of each rule and says how
// many it left out; JSON lists every one.
func TestPlanTextBoundsChanges(t *testing.T) {
	in := filepath.Join(t.TempDir(), "gen.db")
	if _, err := gen.Generate(t.Context(), gen.Config{Path: in, Keys: 8000, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	args := []string{"plan", in, "--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16", "--quiet"}
	js := run(t, append(args, "-o", "json")...)
	if js.code != ExitOK {
		t.Fatalf("plan -o json: exit %d: %s", js.code, js.stderr)
	}
	var res struct {
		Objects []struct{ Rules []string } `json:"objects"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &res); err != nil {
		t.Fatal(err)
	}
	perRule := map[string]int{}
	for _, o := range res.Objects {
		perRule[strings.Join(o.Rules, ",")]++
	}
	hidden := 0
	for _, n := range perRule {
		hidden += max(0, n-maxChangesPerRule)
	}
	if hidden == 0 {
		t.Fatalf("premise: some rule changes over %d objects; got %v", maxChangesPerRule, perRule)
	}
	txt := run(t, args...)
	if txt.code != ExitOK {
		t.Fatalf("plan: exit %d: %s", txt.code, txt.stderr)
	}
	listed := 0
	for _, l := range strings.Split(txt.stdout, "\n") {
		// "  replace svc/NS/NAME  [rule]", with the change on that line when it is the only one;
		// "  rename  ip/OLD -> NEW  [rule]" is a create and a delete in JSON.
		f := strings.Fields(l)
		if !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") || len(f) < 3 || !strings.HasPrefix(f[len(f)-1], "[") {
			continue
		}
		switch f[0] {
		case "replace", "create", "delete":
			listed++
		case "rename":
			listed += 2
		}
	}
	// A rename (two objects) that does not fit in a rule's first maxChangesPerRule is left out
	// whole: a rule may list one fewer.
	var said int
	if _, more, ok := strings.Cut(txt.stdout, "... and "); !ok {
		t.Fatalf("text does not say how many changes it left out:\n%s", txt.stdout)
	} else if _, err := fmt.Sscanf(more, "%d more changes", &said); err != nil {
		t.Fatal(err)
	}
	if listed+said != len(res.Objects) || said < hidden || said > hidden+len(perRule) {
		t.Errorf("text lists %d changes and says %d more, want %d in all (%d in JSON), about %d left out", listed, said, len(res.Objects), len(res.Objects), hidden)
	}
}

// TestPlanTextReadsAsAList: the changes of plan and transform --dry-run leave out a row that
// changes nothing ("data: bitmap of 8 addresses -> bitmap of 8 addresses"), write an object
// with one change on one line, and an IPAddress renamed (a create and its delete) on one line
// (issue 52 item 8: four lines per moved Service address before).
func TestPlanTextReadsAsAList(t *testing.T) {
	in := copySample(t)
	flags := []string{"--service-cidr", newSvc, "--pod-network-cidr", "10.55.0.0/16", "--quiet"}
	for _, args := range [][]string{
		append([]string{"plan", in}, flags...),
		append([]string{"transform", in, "--dry-run", "--out", filepath.Join(t.TempDir(), "out.db")}, flags...),
	} {
		r := run(t, args...)
		if r.code != ExitOK {
			t.Fatalf("%s: exit %d: %s", args[0], r.code, r.stderr)
		}
		_, changes, _ := strings.Cut(r.stdout, "\nChanges:\n")
		changes, _, _ = strings.Cut(changes, "\n\n")
		lines := strings.Split(changes, "\n")
		for _, want := range []string{
			"  replace svc/default/kubernetes  spec.clusterIPs: 192.168.0.1 -> 172.24.0.1  [service-cidr]",
			"  rename  ip/192.168.0.1 -> 172.24.0.1  [service-cidr]",
			"  replace /registry/ranges/serviceips  range: 192.168.0.0/16 -> 172.24.0.0/16  [service-cidr]",
			"  rename  ipamblocks.crd.projectcalico.org/10-244-0-0-26 -> 10-55-0-0-26  spec.cidr: 10.244.0.0/26 -> 10.55.0.0/26  [calico]",
		} {
			if !slices.Contains(lines, want) {
				t.Errorf("%s: no line %q in the changes:\n%s", args[0], want, changes)
			}
		}
		for _, l := range lines {
			if _, change, ok := strings.Cut(strings.TrimSpace(l), ": "); ok {
				change, _, _ = strings.Cut(change, "  [")
				if o, n, ok := strings.Cut(change, " -> "); ok && o == n {
					t.Errorf("%s: a row that changes nothing: %q", args[0], l)
				}
			}
			if strings.Contains(l, "renamed") && strings.Contains(l, "ipaddresses") {
				t.Errorf("%s: an IPAddress's rename over two entries: %q", args[0], l)
			}
		}
	}
}

// TestOneLineJoinsLines: a message over several lines (errors.Join, a
// command's stderr, node apply's "where the backup is" clause) is printed
// as one line of clauses, never with a literal \n in it.
func TestOneLineJoinsLines(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb": "a; b",
		"[kubelet] failed\n  the backup is in /x\n": "[kubelet] failed; the backup is in /x",
		"v1/x\nsnapshift: all good":                 "v1/x; snapshift: all good",
		"tab\there\rx":                              `tab\there\rx`,
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFailureMessageHasNoLiteralNewline: a user rule whose merge patch adds
// two unknown fields is refused with both strict-decoding errors (joined by
// errors.Join with a newline); the one stderr line lists them as clauses,
// not with a literal \n between them.
func TestFailureMessageHasNoLiteralNewline(t *testing.T) {
	in := copySample(t)
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesFile, []byte(`apiVersion: snapshift.io/v1alpha1
kind: RuleSet
rules:
- name: two-bad-fields
  match: {resource: configmaps, namespaces: [demo], names: [app-settings]}
  mergePatch: {bogus1: 1, bogus2: 2}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "transform", in, "--out", filepath.Join(dir, "out.db"), "--service-cidr", "172.24.0.0/16", "--rules", rulesFile, "--quiet")
	if r.code != ExitRefused {
		t.Errorf("exit %d, want %d: %s", r.code, ExitRefused, r.stderr)
	}
	if lines := r.stderrLines(); len(lines) != 1 || strings.Contains(r.stderr, `\n`) || !strings.Contains(r.stderr, `unknown field "bogus1"; unknown field "bogus2"`) {
		t.Errorf("stderr %q, want one line naming both fields, without a literal \\n", r.stderr)
	}
}
