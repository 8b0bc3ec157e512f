package verify_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/state"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
	"github.com/snapshift/snapshift/wellknown"
)

const samplePath = "../testdata/sample.db"

var seed = verify.Config{ServiceCIDR: "172.24.0.0/16", PodNetworkCIDR: "10.55.0.0/16", Structure: true}

func copySample(t *testing.T) string {
	t.Helper()
	return testfile.Copy(t, samplePath, t.TempDir())
}

// migrate runs the seed migration, plus extra rules that break things.
func migrate(t *testing.T, in string, extra ...transform.Rule) string {
	t.Helper()
	rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.db")
	if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: append(rs, extra...)}); err != nil {
		t.Fatal(err)
	}
	return out
}

func run(t *testing.T, cfg verify.Config) *verify.Report {
	t.Helper()
	r, err := verify.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func failed(r *verify.Report) map[string]verify.Check {
	out := map[string]verify.Check{}
	for _, c := range r.Checks {
		if !c.OK {
			out[c.Name] = c
		}
	}
	return out
}

func TestSampleBeforeAndAfter(t *testing.T) {
	in := copySample(t)
	cfg := seed
	cfg.Path = in
	plain := run(t, verify.Config{Path: in, Structure: true})
	if !plain.OK || len(plain.Checks) < 6 {
		t.Fatalf("the sample fails its structural checks: %+v", plain)
	}
	before := run(t, cfg)
	f := failed(before)
	for _, name := range []string{"Service ClusterIPs in the new range", "RangeAllocation matches the Services",
		"default ServiceCIDR is the new range", "node pod CIDRs inside the cluster CIDR and disjoint", "configuration agrees with the CIDRs"} {
		if _, ok := f[name]; !ok {
			t.Errorf("before the migration, %q passed", name)
		}
	}
	if err := before.Err(); err == nil || !strings.Contains(err.Error(), "verification failed") {
		t.Errorf("Err() = %v", err)
	}
	cfg.Path = migrate(t, in)
	after := run(t, cfg)
	if !after.OK {
		t.Fatalf("after the migration: %v", after.Err())
	}
	if len(after.Checks) != len(before.Checks) {
		t.Errorf("%d checks after, %d before", len(after.Checks), len(before.Checks))
	}
}

// breaker is a rule that damages one kind of object after the migration.
type breaker struct {
	prefix string
	fn     func(o *state.Object)
}

func (b breaker) Name() string       { return "breaker" }
func (b breaker) Prefixes() []string { return []string{b.prefix} }
func (b breaker) Apply(_ context.Context, o *state.Object) (transform.Result, error) {
	b.fn(o)
	return transform.Result{Action: transform.Replace}, nil
}

func TestVerifyCatchesBrokenOutputs(t *testing.T) {
	in := copySample(t)
	cases := []struct {
		name  string
		rule  transform.Rule
		check string
	}{
		{"bitmap missing an address", breaker{"/registry/ranges/serviceips", func(o *state.Object) {
			ra := o.Value.Obj.(*corev1.RangeAllocation)
			ra.Data = ra.Data[1:]
		}}, "RangeAllocation matches the Services"},
		{"a Service left in the old range", breaker{"/registry/services/specs/demo/api", func(o *state.Object) {
			svc := o.Value.Obj.(*corev1.Service)
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "192.168.200.14", []string{"192.168.200.14"}
		}}, "Service ClusterIPs in the new range"},
		{"two Services on one address", breaker{"/registry/services/specs/demo/api", func(o *state.Object) {
			svc := o.Value.Obj.(*corev1.Service)
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "172.24.3.7", []string{"172.24.3.7"}
		}}, "no duplicate ClusterIPs"},
		{"a node outside the cluster CIDR", breaker{"/registry/minions/worker-vm1", func(o *state.Object) {
			n := o.Value.Obj.(*corev1.Node)
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.1.0/24", []string{"10.244.1.0/24"}
		}}, "node pod CIDRs inside the cluster CIDR and disjoint"},
		{"overlapping nodes", breaker{"/registry/minions/worker-vm1", func(o *state.Object) {
			n := o.Value.Obj.(*corev1.Node)
			n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.55.8.0/24", []string{"10.55.8.0/24"}
		}}, "node pod CIDRs inside the cluster CIDR and disjoint"},
		{"clusterDNS pointing nowhere", breaker{"/registry/configmaps/kube-system/kubelet-config", func(o *state.Object) {
			cm := o.Value.Obj.(*corev1.ConfigMap)
			cm.Data["kubelet"] = strings.ReplaceAll(cm.Data["kubelet"], "172.24.0.10", "172.24.0.53")
		}}, "configuration agrees with the CIDRs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := seed
			cfg.Path = migrate(t, in, c.rule)
			r := run(t, cfg)
			f := failed(r)
			if _, ok := f[c.check]; !ok {
				t.Fatalf("%q passed; failed checks: %v", c.check, f)
			}
			if len(f[c.check].Problems) == 0 {
				t.Errorf("%q failed without saying why", c.check)
			}
			// transform's own check of its output (a filtered index) catches it too.
			self := seed
			self.Path, self.Structure, self.JustWritten = cfg.Path, false, true
			if _, ok := failed(run(t, self))[c.check]; !ok {
				t.Errorf("the self-check of a just-written output misses %q", c.check)
			}
		})
	}
}

// TestVerifyCatchesBadRevisionMetadata writes a snapshot by hand whose
// KeyValue claims another mod_revision than its bucket revision.
func TestVerifyCatchesBadRevisionMetadata(t *testing.T) {
	in := copySample(t)
	s, ix := testfile.OpenIndexed(t, in)
	out := filepath.Join(t.TempDir(), "bad.db")
	w, err := snapshot.Create(snapshot.WriterConfig{Path: out})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.CopyBuckets(s); err != nil {
		t.Fatal(err)
	}
	broke := 0
	err = s.Live(context.Background(), ix, "test", nil, func(e *snapshot.Entry) error {
		if broke == 0 && strings.HasPrefix(string(e.KV.Key), "/registry/configmaps/") {
			kv := e.KV
			kv.ModRevision += 1000
			raw, err := kv.Marshal()
			if err != nil {
				return err
			}
			broke++
			return w.Put(e.RevKey, raw)
		}
		return w.Put(e.RevKey, e.Raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r := run(t, verify.Config{Path: out, Structure: true})
	if _, ok := failed(r)["revision metadata"]; !ok || r.OK {
		t.Fatalf("a KeyValue with a wrong mod_revision passed: %+v", r.Checks)
	}
}

// TestOutputMustCloseHistory: a file snapshift has just written must carry
// compaction markers above every key revision; the sample as etcd saved it
// (markers below its newest keys) does not, and passes as a plain input.
func TestOutputMustCloseHistory(t *testing.T) {
	in := copySample(t)
	if r := run(t, verify.Config{Path: in}); !r.OK {
		t.Fatalf("the sample as an input: %v", failed(r))
	}
	r := run(t, verify.Config{Path: in, JustWritten: true, SkipHashCheck: true})
	if c, ok := failed(r)["compaction markers"]; !ok || !strings.Contains(strings.Join(c.Problems, " "), "does not close the history") {
		t.Errorf("the sample checked as a fresh output: %+v, want the compaction markers check to fail", failed(r))
	}
	if r := run(t, verify.Config{Path: migrate(t, in), JustWritten: true, SkipHashCheck: true}); !r.OK {
		t.Errorf("a migrated output: %v", failed(r))
	}
}

// TestVerifyCustomPrefix: a snapshot whose objects live under another
// --etcd-prefix is checked there (detected), and a wrong prefix must not
// pass the network checks on no objects at all: it is refused as an option
// this snapshot cannot take, naming the right prefix.
func TestVerifyCustomPrefix(t *testing.T) {
	in := testfile.RewriteLiveKV(t, copySample(t), filepath.Join(t.TempDir(), "prefixed.db"), func(k string, v []byte) (string, []byte, error) {
		return strings.Replace(k, "/registry/", "/kubernetes.io/", 1), v, nil
	})
	if r := run(t, verify.Config{Path: in, ServiceCIDR: "192.168.0.0/16", PodNetworkCIDR: "10.244.0.0/16", Structure: true}); !r.OK {
		t.Errorf("verify of the sample under a detected /kubernetes.io/: %+v", failed(r))
	}
	if r := run(t, verify.Config{Path: in, ServiceCIDR: "172.24.0.0/16", PodNetworkCIDR: "10.244.0.0/16"}); r.OK {
		t.Error("verify passed the old service range as the new one under /kubernetes.io/: the checks saw no Services")
	}
	_, err := verify.Run(context.Background(), verify.Config{Path: in, ServiceCIDR: "192.168.0.0/16", PodNetworkCIDR: "10.244.0.0/16", EtcdPrefix: "/registry"})
	var oe *option.Error
	if !errors.As(err, &oe) || oe.Field != "EtcdPrefix" || !strings.Contains(err.Error(), `under "/kubernetes.io/", not "/registry/"`) {
		t.Fatalf("verify of a /kubernetes.io/ snapshot read under /registry/: %v, want an option error naming the prefix", err)
	}
}

// TestCNIStateChecks: the migrated sample's Calico IPAM state passes (every
// block inside the moved pool, disjoint, affinities matching), also as a
// fresh output; a block moved outside every pool, a block overlapping
// another and an affinity whose block went away each fail, named.
func TestCNIStateChecks(t *testing.T) {
	out := migrate(t, copySample(t))
	const check = "Calico IPAM: blocks inside the IPPools, disjoint, affinities matching"
	for _, cfg := range []verify.Config{{Path: out, PodNetworkCIDR: "10.55.0.0/16"}, {Path: out, PodNetworkCIDR: "10.55.0.0/16", JustWritten: true, SkipHashCheck: true}} {
		r := run(t, cfg)
		found := false
		for _, c := range r.Checks {
			found = found || (c.Name == check && c.OK)
		}
		if !found || !r.OK {
			t.Errorf("the migrated sample (just written %v): %+v, want %q to pass", cfg.JustWritten, failed(r), check)
		}
	}
	var blocks []string
	_, ix := testfile.OpenIndexed(t, out)
	for _, kr := range ix.LiveKeysWithPrefix(wellknown.PrefixCalicoBlocks) {
		blocks = append(blocks, kr.Key)
	}
	if len(blocks) < 2 {
		t.Fatalf("the migrated sample has %d IPAMBlocks, want several", len(blocks))
	}
	for _, c := range []struct {
		name string
		edit func(key string, v []byte) []byte
		want string
	}{
		{"a block outside every pool", func(k string, v []byte) []byte {
			if k != blocks[0] {
				return v
			}
			return bytes.Replace(v, []byte(`"cidr":"10.55.`), []byte(`"cidr":"10.99.`), 1)
		}, "is inside no IPPool"},
		{"two blocks overlapping", func(k string, v []byte) []byte {
			if k != blocks[1] {
				return v
			}
			return bytes.Replace(v, []byte(`"cidr":"10.55.`), []byte(`"cidr":"10.55.0.0/16","x":"`), 1)
		}, "overlaps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := testfile.RewriteLive(t, out, filepath.Join(t.TempDir(), "bad.db"), func(k string, v []byte) ([]byte, error) { return c.edit(k, v), nil })
			r := run(t, verify.Config{Path: bad, PodNetworkCIDR: "10.55.0.0/16"})
			got, ok := failed(r)[check]
			if !ok || !strings.Contains(strings.Join(got.Problems, "; "), c.want) {
				t.Errorf("%s: %+v, want %q failing with %q", c.name, failed(r), check, c.want)
			}
		})
	}
}

// An interrupted check is an interruption, not a failed check: a caller
// (transform's check of its own output) must not report "verification
// failed" (exit 5) for a run that was stopped (issue 23, item 2).
func TestInterruptedCheckIsNotAFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := seed
	cfg.Path = copySample(t)
	cfg.JustWritten = true
	r, err := verify.Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context = %+v, %v; want context.Canceled", r, err)
	}
	if errors.Is(err, verify.ErrFailed) {
		t.Errorf("a cancelled check reported as a failed one: %v", err)
	}
}
