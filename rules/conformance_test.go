package rules_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/state"

	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/transform"
)

// enablingOptions are the registered example options of a rule: the
// sample snapshot (192.168.0.0/16 services, 10.244.0.0/16 pods) migrates
// with them.
func enablingOptions(name string) (rules.Options, bool) {
	e, err := rules.Lookup(name)
	if err != nil || e.Example == nil {
		return rules.Options{}, false
	}
	o := e.Example()
	return o, e.Enabled(&o)
}

// prepareOnly runs a sibling rule's Prepare (which fills the shared plan)
// but claims no key, so that one rule can be run alone.
type prepareOnly struct{ r transform.Rule }

func (p prepareOnly) Name() string       { return p.r.Name() + " (prepare only)" }
func (p prepareOnly) Prefixes() []string { return nil }
func (p prepareOnly) Apply(context.Context, *state.Object) (transform.Result, error) {
	return transform.Result{}, nil
}
func (p prepareOnly) Prepare(ctx context.Context, v *state.View) error {
	if pr, ok := p.r.(transform.Preparer); ok {
		return pr.Prepare(ctx, v)
	}
	return nil
}

func underAny(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// TestConformance holds every registered rule to the same contract on the
// sample snapshot: a unique name that Build and Lookup agree on; run alone,
// it writes nothing outside its Prefixes (those keys keep their stored
// KeyValue and revision), replaced keys get input revision + 1 with
// Version+1 and the same CreateRevision and Lease, created keys are a new
// generation; a dry run reports exactly what the real run does; and running
// the same options again on the output changes nothing.
func TestConformance(t *testing.T) {
	names := rules.Names()
	if len(names) == 0 {
		t.Fatal("no rules registered")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			t.Errorf("rule name %q is empty or registered twice (%v)", n, names)
		}
		seen[n] = true
		if got, err := rules.Lookup(n); err != nil || got.Name != n {
			t.Errorf("Lookup(%q) = %q, %v", n, got.Name, err)
		}
	}
	if _, err := rules.Lookup("no-such-rule"); err == nil || !strings.Contains(err.Error(), strings.Join(sortedCopy(names), ", ")) {
		t.Errorf("Lookup of an unknown rule = %v, want an error listing %v", err, names)
	}
	// Build with everything on returns every rule once, in registry order.
	all, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"},
		PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}, SATokensOptions: rules.SATokensOptions{SATokens: rules.SATokensClear},
		ClusterInfoOptions: rules.ClusterInfoOptions{ClusterCA: []byte(testCA)}, ControlPlaneOptions: rules.ControlPlaneOptions{ControlPlaneAddresses: []string{"cp1=10.1.0.10"}},
		UserRulesOptions: rules.UserRulesOptions{Rules: []string{"../testdata/rules/example.yaml"}}, WebhooksOptions: rules.WebhooksOptions{Webhooks: rules.WebhooksIgnore}})
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, r := range all {
		built = append(built, r.Name())
	}
	if !slices.Equal(built, names) {
		t.Errorf("Build with every rule on gives %v, want %v (Names order)", built, names)
	}
	if rs, _, err := rules.Build(rules.Options{}); err != nil || len(rs) != 0 {
		t.Errorf("Build(zero Options) = %d rules, %v; want none", len(rs), err)
	}

	dir := t.TempDir()
	in := testfile.Copy(t, samplePath, dir)
	sum := testfile.Sum(t, in)
	inState := readState(t, in)

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in, inState := conformanceInput(t, name, in, inState)
			opts, ok := enablingOptions(name)
			if !ok {
				t.Fatalf("rule %s has no enabling options in this test: add them to enablingOptions", name)
			}
			rs, _, err := rules.Build(opts)
			if err != nil {
				t.Fatal(err)
			}
			var target transform.Rule
			var alone []transform.Rule
			for _, r := range rs {
				if r.Name() == name {
					target = r
					alone = append(alone, r)
				} else {
					alone = append(alone, prepareOnly{r})
				}
			}
			if target == nil {
				t.Fatalf("Build(%+v) does not include %s", opts, name)
			}
			if len(target.Prefixes()) == 0 {
				t.Fatalf("%s claims no prefix", name)
			}

			// Alone: nothing outside its prefixes moves.
			out := filepath.Join(t.TempDir(), "alone.db")
			rep, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: alone})
			if err != nil {
				t.Fatal(err)
			}
			c := ruleCounts(rep)[name]
			if c.Changed+c.Created+c.Deleted == 0 {
				t.Fatalf("%s changed nothing on the sample with %+v: the test does not exercise it", name, opts)
			}
			outState := readState(t, out)
			checkRevisionMetadata(t, inState, outState, rep)
			for _, k := range inState.keys() {
				if underAny(k, target.Prefixes()) {
					continue
				}
				o, ok := outState.Live[k]
				if !ok {
					t.Errorf("%s: outside %s's prefixes but missing from its output", k, name)
					continue
				}
				if o.Rev != inState.Live[k].Rev || string(o.KV.Value) != string(inState.Live[k].KV.Value) {
					t.Errorf("%s: outside %s's prefixes but changed (revision %v -> %v)", k, name, inState.Live[k].Rev, o.Rev)
				}
			}
			for o := range rep.Objects.All() {
				if !underAny(o.Key, target.Prefixes()) {
					t.Errorf("%s %s: outside %s's prefixes %v", o.Action, o.Key, name, target.Prefixes())
				}
				if len(o.Rules) != 1 || o.Rules[0] != name {
					t.Errorf("%s %s is attributed to %v, want only %s", o.Action, o.Key, o.Rules, name)
				}
			}
			if rep.NewRevision != inState.Current+1 || rep.CompactRevision != inState.Current+2 {
				t.Errorf("report: new revision %d, compacted at %d; want %d and %d", rep.NewRevision, rep.CompactRevision, inState.Current+1, inState.Current+2)
			}

			// A dry run reports the same as the real run (plan before write).
			rsDry, _, err := rules.Build(opts)
			if err != nil {
				t.Fatal(err)
			}
			var aloneDry []transform.Rule
			for _, r := range rsDry {
				if r.Name() == name {
					aloneDry = append(aloneDry, r)
				} else {
					aloneDry = append(aloneDry, prepareOnly{r})
				}
			}
			dry, err := transform.Run(context.Background(), transform.Config{Input: in, DryRun: true, Rules: aloneDry})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(dry.Objects)
			b, _ := json.Marshal(rep.Objects)
			if string(a) != string(b) || dry.Replaced != rep.Replaced || dry.Created != rep.Created || dry.Deleted != rep.Deleted {
				t.Errorf("the dry run reports differently from the real run:\n dry: %s\nreal: %s", a, b)
			}

			// Idempotent: the same options on the output of the full rule set
			// change nothing.
			full := filepath.Join(t.TempDir(), "full.db")
			if _, _, _, err := runRules(t, in, full, opts); err != nil {
				t.Fatal(err)
			}
			again := filepath.Join(t.TempDir(), "again.db")
			rep2, _, _, err := runRules(t, full, again, opts)
			if err != nil {
				t.Fatalf("running %+v on its own output: %v", opts, err)
			}
			if rep2.Replaced != 0 || rep2.Created != 0 || rep2.Deleted != 0 {
				t.Errorf("second run with %+v: %d replaced, %d created, %d deleted; want nothing: %+v", opts, rep2.Replaced, rep2.Created, rep2.Deleted, rep2.Objects)
			}
			for _, r := range rep2.Rules {
				if r.Changed+r.Created+r.Deleted != 0 {
					t.Errorf("second run: rule %s changed %d, created %d, deleted %d", r.Name, r.Changed, r.Created, r.Deleted)
				}
			}
			fullState, againState := readState(t, full), readState(t, again)
			for _, k := range fullState.keys() {
				if a, ok := againState.Live[k]; !ok || string(a.KV.Value) != string(fullState.Live[k].KV.Value) || a.Rev != fullState.Live[k].Rev {
					t.Errorf("second run changed %s", k)
				}
			}
			if len(againState.Live) != len(fullState.Live) {
				t.Errorf("second run: %d live keys, first %d", len(againState.Live), len(fullState.Live))
			}
		})
	}
	t.Cleanup(func() {
		if testfile.Sum(t, in) != sum {
			t.Errorf("the input %s was modified", in)
		}
	})
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestIdempotentVariants runs the flag combinations beyond the conformance
// options twice on the sample: the second run (a dry run on the first
// one's output) must have nothing left to do.
func TestIdempotentVariants(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	for _, c := range []struct {
		name string
		opts rules.Options
	}{
		{"keep kube-dns", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"kube-system/kube-dns"}}}},
		{"keep kube-dns with a bridge", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"kube-system/kube-dns"}, DNSBridge: true}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}}},
		{"shrink with repack", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/20", Repack: true}}},
		{"grow", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "10.96.0.0/12"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.128.0.0/12"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.db")
			rep, _, _, err := runRules(t, in, out, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Replaced == 0 {
				t.Fatalf("the first run changed nothing")
			}
			rep2, _, _, err := runRules(t, out, "", c.opts)
			if err != nil {
				t.Fatalf("second run: %v", err)
			}
			if rep2.Replaced != 0 || rep2.Created != 0 || rep2.Deleted != 0 {
				t.Errorf("second run: %d replaced, %d created, %d deleted: %+v", rep2.Replaced, rep2.Created, rep2.Deleted, rep2.Objects)
			}
		})
	}
}

// testCA stands for a new cluster CA (the rule copies it, it does not parse it).
const testCA = "-----BEGIN CERTIFICATE-----\nTkVXLUNMVVNURVItQ0EtRk9SLVRFU1RT\n-----END CERTIFICATE-----\n"
