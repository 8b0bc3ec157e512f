package bench

import (
	"slices"
	"testing"
)

// TestRoundOrder: every round runs every case once; the cases that read the input rotate, and
// restore, which reads transform-migrate's output, comes last.
func TestRoundOrder(t *testing.T) {
	want := map[int][]string{
		1: {CaseFloor, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore, CaseRestore},
		2: {CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore, CaseFloor, CaseRestore},
		7: {CaseFloor, CaseTransform, CaseTransformMigrate, CasePlanMigrate, CaseFusedMigrate, CaseEtcdutlRestore, CaseRestore},
	}
	for round, w := range want {
		if seq := roundOrder(round); !slices.Equal(seq, w) {
			t.Errorf("round %d: %v, want %v", round, seq, w)
		}
	}
}
