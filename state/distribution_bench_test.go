package state_test

import (
	"path/filepath"
	"testing"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/gen"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
)

// BenchmarkDetectDistribution is the distribution's detection on a
// generated 50k-key snapshot, with its prefixes walked (an index that does
// not name them) and named (DistributionListed in IndexOptions.Named, as
// the rules that detect now list them). Every migration's Prepare runs it
// at least twice.
func BenchmarkDetectDistribution(b *testing.B) {
	res, err := gen.Generate(b.Context(), gen.Config{Path: filepath.Join(b.TempDir(), "in.db"), Keys: 50_000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	s, err := snapshot.Open(res.Path, snapshot.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name  string
		named []string
	}{{"walked", nil}, {"named", state.DistributionListed}} {
		ix, err := s.IndexWith(b.Context(), nil, snapshot.IndexOptions{Named: c.named})
		if err != nil {
			b.Fatal(err)
		}
		v := state.NewView(s, ix, codec.New(), nil, state.ResolvePrefix(ix, ""))
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := state.DetectDistribution(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
