package bench

import (
	"slices"
	"testing"
)

// TestRoundOrder: every round runs every case once; the independent cases rotate, and the two
// restores come last, alternating.
func TestRoundOrder(t *testing.T) {
	want := map[int][]string{
		1: {CaseFloor, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseRestore, CaseEtcdutlRestore},
		2: {CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFloor, CaseEtcdutlRestore, CaseRestore},
		3: {CaseTransformMigrate, CasePlanMigrate, CaseFloor, CaseTransform, CaseRestore, CaseEtcdutlRestore},
		4: {CasePlanMigrate, CaseFloor, CaseTransform, CaseTransformMigrate, CaseEtcdutlRestore, CaseRestore},
		5: {CaseFloor, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseRestore, CaseEtcdutlRestore},
	}
	for round, w := range want {
		seq, restores := roundOrder(round)
		if !slices.Equal(seq, w) {
			t.Errorf("round %d: %v, want %v", round, seq, w)
		}
		if !slices.Equal(restores, seq[4:]) {
			t.Errorf("round %d: restores %v, not the last two of %v", round, restores, seq)
		}
	}
}
