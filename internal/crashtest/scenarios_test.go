//go:build crash

package crashtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/encryption"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/internal/testfile"
)

const samplePath = "../../testdata/sample.db"

// output is one path a command publishes, and how to check it.
type output struct {
	kind  string // snapshot, member, bundle, certs, manifests
	path  string // relative to the work dir
	rules []string
	// A restored member: its name and peer URL, a separate WAL dir.
	name, peer, wal string
}

// scenario is one command on one input, run in a copy of template.
type scenario struct {
	name     string
	args     []string
	inputs   []string // relative; never modified
	outputs  []output
	few      bool // crash at the first and last hit of each failpoint only
	killOnly bool // SIGKILL only (no panic)
	template string
	inputSHA []string
	before   []string      // per output: its state before the run
	ref      []memberState // per output: what etcd serves from the reference run's member
}

// input is a snapshot to migrate and the flags it needs.
type input struct {
	name, path string
	flags      []string // --encryption-config
	extra      map[string]string
}

var seedRules = []string{"--service-cidr", "172.24.0.0/16", "--pod-network-cidr", "10.55.0.0/16"}

// writerArgs choose the writer of every command that writes a database:
// SNAPSHIFT_WRITER=bbolt runs the suite on the reference writer (bbolt's
// own Put), as bbolt runs its own on both freelists (TEST_FREELIST_TYPE);
// unset, the default (the bulk loader).
func writerArgs() []string {
	if w := os.Getenv("SNAPSHIFT_WRITER"); w != "" {
		return []string{"--writer", w}
	}
	return nil
}

const encConf = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n" +
	"- resources: [configmaps]\n  providers:\n  - secretbox:\n      keys:\n      - {name: cm-key, secret: Y29uZmlnbWFwcy1zZWNyZXRib3gta2V5LTMyYnl0ZXM=}\n  - identity: {}\n" +
	"- resources: [services]\n  providers:\n  - aescbc:\n      keys:\n      - {name: svc-key, secret: c2VydmljZXMtYWVzY2JjLWtleS0zMi1ieXRlcy0xMjM=}\n  - identity: {}\n"

// inputs are the sample, a churned generated snapshot and the sample
// with its ConfigMaps and Services encrypted at rest.
func inputs(t *testing.T, dir string, churnKeys int) []input {
	t.Helper()
	churn := filepath.Join(dir, "churn.db")
	if _, err := gen.Generate(context.Background(), gen.Config{Path: churn, Keys: churnKeys, Seed: 23, Profile: gen.ProfileChurn}); err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "enc.yaml")
	if err := os.WriteFile(confPath, []byte(encConf), 0o600); err != nil {
		t.Fatal(err)
	}
	enc, err := encryption.Load(confPath)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := testfile.RewriteLive(t, samplePath, filepath.Join(dir, "encrypted.db"), func(key string, v []byte) ([]byte, error) {
		switch {
		case strings.HasPrefix(key, "/registry/configmaps/"):
			return enc.Encrypt(key, v, encryption.Info{Provider: "secretbox", KeyName: "cm-key"})
		case strings.HasPrefix(key, "/registry/services/specs/"):
			return enc.Encrypt(key, v, encryption.Info{Provider: "aescbc", KeyName: "svc-key"})
		}
		return v, nil
	})
	return []input{
		{name: "sample", path: samplePath},
		{name: "churn", path: churn},
		{name: "encrypted", path: encrypted, flags: []string{"--encryption-config", "enc.yaml"}, extra: map[string]string{"enc.yaml": encConf}},
	}
}

// newTemplate makes a scenario's template dir holding in.db (a copy of
// in) and in's extra files.
func newTemplate(t *testing.T, in input) string {
	t.Helper()
	dir := t.TempDir()
	testfile.CopyTo(t, in.path, filepath.Join(dir, "in.db"))
	for name, content := range in.extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func peerURL(t *testing.T) string {
	t.Helper()
	port, err := etcdtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "http://127.0.0.1:" + itoa(port)
}

// snapshotScenarios are transform and the restores of one input.
func snapshotScenarios(t *testing.T, in input) []*scenario {
	t.Helper()
	rules := append(append([]string{}, seedRules...), in.flags...)
	tr := &scenario{name: "transform/" + in.name, template: newTemplate(t, in), inputs: []string{"in.db"},
		args:    append(append([]string{"transform", "in.db", "--out", "out.db", "--quiet"}, writerArgs()...), rules...),
		outputs: []output{{kind: "snapshot", path: "out.db", rules: rules}}}
	out := []*scenario{tr}
	for _, route := range []string{"rewrite"} { // the one route since the copy route was removed
		peer := peerURL(t)
		out = append(out, &scenario{name: "restore-" + route + "/" + in.name, template: newTemplate(t, in), inputs: []string{"in.db"},
			args: append([]string{"restore", "in.db", "--name", "m1", "--data-dir", "m1.etcd", "--initial-cluster", "m1=" + peer,
				"--initial-advertise-peer-urls", peer, "--route", route, "--quiet"}, append(writerArgs(), rules...)...),
			outputs: []output{{kind: "member", path: "m1.etcd", name: "m1", peer: peer}}})
	}
	return out
}

// sampleScenarios are the commands run on the sample only: transform
// over an existing output (--force), the plain restore with and without a
// separate WAL dir, rebuild, certs --renew apiserver and manifests.
func sampleScenarios(t *testing.T) []*scenario {
	t.Helper()
	sample := input{name: "sample", path: samplePath}
	force := &scenario{name: "transform-force/sample", template: newTemplate(t, sample), inputs: []string{"in.db"},
		args:    append(append([]string{"transform", "in.db", "--out", "out.db", "--force", "--quiet"}, writerArgs()...), seedRules...),
		outputs: []output{{kind: "snapshot", path: "out.db", rules: seedRules}}}
	if r := run(t, plainBin, force.template, runOpts{}, "transform", "in.db", "--out", "out.db", "--service-cidr", "172.30.0.0/16", "--quiet"); r.code != 0 {
		t.Fatalf("the existing output: %s", r.stderr)
	}
	peer := peerURL(t)
	plain := &scenario{name: "restore-plain/sample", template: newTemplate(t, sample), inputs: []string{"in.db"},
		args: []string{"restore", "in.db", "--name", "m1", "--data-dir", "m1.etcd", "--initial-cluster", "m1=" + peer,
			"--initial-advertise-peer-urls", peer, "--quiet"},
		outputs: []output{{kind: "member", path: "m1.etcd", name: "m1", peer: peer}}}
	wal := &scenario{name: "restore-wal-dir/sample", template: newTemplate(t, sample), inputs: []string{"in.db"},
		args: []string{"restore", "in.db", "--name", "m1", "--data-dir", "m1.etcd", "--wal-dir", "m1.wal",
			"--initial-cluster", "m1=" + peer, "--initial-advertise-peer-urls", peer, "--quiet"},
		outputs: []output{{kind: "member", path: "m1.etcd", name: "m1", peer: peer, wal: "m1.wal"}}}
	rb := &scenario{name: "rebuild/sample", template: newTemplate(t, sample), inputs: []string{"in.db"}, few: true,
		args:    append([]string{"rebuild", "--config", "rebuild.yaml", "--quiet"}, writerArgs()...),
		outputs: []output{{kind: "bundle", path: "bundle"}}}
	conf, err := os.ReadFile("../../testdata/rebuild.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The file's paths are relative to it: the copy beside in.db names in.db and bundle.
	conf = []byte(strings.NewReplacer("snapshot: sample.db", "snapshot: in.db", "output: ../out/demo/bundle", "output: bundle").Replace(string(conf)))
	if !strings.Contains(string(conf), "snapshot: in.db\n") || !strings.Contains(string(conf), "output: bundle\n") {
		t.Fatalf("testdata/rebuild.yaml no longer names sample.db and ../out/demo/bundle as this scenario expects:\n%s", conf)
	}
	if err := os.WriteFile(filepath.Join(rb.template, "rebuild.yaml"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	return []*scenario{force, plain, wal, rb, certsScenario(t), manifestsScenario(t)}
}

func certsScenario(t *testing.T) *scenario {
	t.Helper()
	s := &scenario{name: "certs-renew-apiserver/pki", template: t.TempDir(),
		args:    []string{"certs", "--renew", "apiserver", "--cert-dir", "pki", "--service-cidr", "172.24.0.0/16", "--old-service-cidr", "192.168.0.0/16"},
		outputs: []output{{kind: "certs", path: "pki"}}}
	if r := run(t, plainBin, s.template, runOpts{}, "certs", "--all", "--cert-dir", "pki", "--service-cidr", "192.168.0.0/16",
		"--node-name", "cp1", "--apiserver-advertise-address", "10.0.0.10", "--etcd-member", "cp1=https://10.0.0.10:2380", "-o", "json"); r.code != 0 {
		t.Fatalf("certs --all: %s", r.stderr)
	}
	return s
}

func manifestsScenario(t *testing.T) *scenario {
	t.Helper()
	s := &scenario{name: "manifests/kubeadm", template: t.TempDir(),
		args:    append([]string{"manifests", "--manifest-dir", "manifests", "--backup-dir", "backup"}, seedRules...),
		outputs: []output{{kind: "manifests", path: "manifests"}}}
	src := "../../manifests/testdata/kubeadm-v1.36.3/ipv4"
	copyTree(t, src, mkdir(t, filepath.Join(s.template, "manifests")))
	return s
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
