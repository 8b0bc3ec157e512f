package verify_test

import (
	"path/filepath"
	"testing"

	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/verify"
)

// BenchmarkVerifyJustWritten is transform's check of its own output (the
// fused restore's "check" phase) on a generated 50k-key snapshot, with the
// seed migration's networks.
func BenchmarkVerifyJustWritten(b *testing.B) {
	res, err := gen.Generate(b.Context(), gen.Config{Path: filepath.Join(b.TempDir(), "in.db"), Keys: 50_000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}})
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "out.db")
	if _, err := transform.Run(b.Context(), transform.Config{Input: res.Path, Output: out, Rules: rs}); err != nil {
		b.Fatal(err)
	}
	cfg := verify.Config{Path: out, JustWritten: true, SkipHashCheck: true, ServiceCIDR: "172.24.0.0/16", PodNetworkCIDR: "10.55.0.0/16"}
	for b.Loop() {
		r, err := verify.Run(b.Context(), cfg)
		if err != nil || !r.OK {
			b.Fatalf("%v %+v", err, r)
		}
	}
}
