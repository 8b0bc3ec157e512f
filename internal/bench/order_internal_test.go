package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRoundOrder: every round runs every case once, restore after transform-migrate; the order
// changes from round to round, and the same seed gives the same orders.
func TestRoundOrder(t *testing.T) {
	rng, again := newOrderRNG(42), newOrderRNG(42)
	all := slices.Clone(Cases)
	slices.Sort(all)
	seen := map[string]bool{}
	firsts := map[string]bool{}
	for round := range 50 {
		seq := roundOrder(rng, Cases)
		if other := roundOrder(again, Cases); !slices.Equal(seq, other) {
			t.Fatalf("round %d: seed 42 gave %v and %v", round, seq, other)
		}
		sorted := slices.Clone(seq)
		slices.Sort(sorted)
		if !slices.Equal(sorted, all) {
			t.Fatalf("round %d: %v is not every case once", round, seq)
		}
		if slices.Index(seq, CaseRestore) < slices.Index(seq, CaseTransformMigrate) {
			t.Fatalf("round %d: restore before transform-migrate: %v", round, seq)
		}
		seen[seq[0]+"|"+seq[len(seq)-1]] = true
		firsts[seq[0]] = true
	}
	if len(seen) < 10 || len(firsts) < 6 {
		t.Errorf("50 rounds had %d distinct first/last pairs and %d distinct first cases: not shuffled", len(seen), len(firsts))
	}
	r1, r2 := newOrderRNG(1), newOrderRNG(2)
	same := 0
	for range 5 {
		if slices.Equal(roundOrder(r1, Cases), roundOrder(r2, Cases)) {
			same++
		}
	}
	if same == 5 {
		t.Error("seeds 1 and 2 give the same five orders")
	}
}

// TestCacheDropper: the dropper writes "3" to its file; a file it cannot write is refused with
// the reason.
func TestCacheDropper(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "drop_caches")
	if err := os.WriteFile(fake, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := newCacheDropper(fake)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.drop(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fake); string(b) != "3\n" {
		t.Errorf("wrote %q", b)
	}
	if _, err := newCacheDropper(filepath.Join(dir, "missing", "drop_caches")); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestParsePhases reads the phases from the end of snapshift's --profile output.
func TestParsePhases(t *testing.T) {
	out := "Input: x\n  note (rule): 1.5s is not a phase\n\nTiming (2.33s wall):\n  open               0.090s    3.9%\n  hash wait          0.040s    1.7%\n" +
		"  stream             0.623s   26.8%\n  between phases     0.001s    0.0%\n"
	got := parsePhases(out)
	want := []Phase{{"open", 0.09}, {"hash wait", 0.04}, {"stream", 0.623}}
	if !slices.Equal(got, want) {
		t.Errorf("phases %+v, want %+v", got, want)
	}
	if ps := parsePhases("no timing here\n"); ps != nil {
		t.Errorf("phases without a Timing block: %+v", ps)
	}
}
