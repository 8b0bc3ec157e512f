package rules_test

import (
	"testing"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/snapshot"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
)

// TestPrepareWalksNothing: with the index naming what the rules say they
// list (transform.Lister, as the engine builds it) and counting what they
// say they count (transform.Counter), the seed migration's
// Prepare (detection of the networks, the CNI and the distribution
// included) lists every prefix from the index and never walks the whole
// key bucket, which costs a pass over every entry each time.
func TestPrepareWalksNothing(t *testing.T) {
	rs, _, err := rules.Build(rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"},
		PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "10.55.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	var named, counted []string
	for _, r := range rs {
		if l, ok := r.(transform.Lister); ok {
			named = append(named, l.Lists()...)
		}
		if c, ok := r.(transform.Counter); ok {
			counted = append(counted, c.Counts()...)
		}
	}
	s, err := snapshot.Open(samplePath, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ix, err := s.IndexWith(t.Context(), nil, snapshot.IndexOptions{Named: named, Counted: counted})
	if err != nil {
		t.Fatal(err)
	}
	v := state.NewView(s, ix, codec.New(), nil, state.ResolvePrefix(ix, ""))
	for _, r := range rs {
		if p, ok := r.(transform.Preparer); ok {
			if err := p.Prepare(t.Context(), v); err != nil {
				t.Fatalf("%s: %v", r.Name(), err)
			}
		}
		if ix.Walks > 0 {
			t.Fatalf("rule %s's Prepare walked the key bucket %d times: a prefix it lists is missing from its Lists()", r.Name(), ix.Walks)
		}
	}
}
