//go:build linux

package snapshot

import "testing"

// TestPopulateFlags: an input that fits in half the memory budget is populated, one beyond it is
// not; the budget is at most the machine's memory.
func TestPopulateFlags(t *testing.T) {
	b := memoryBudget()
	if b <= 0 || b > memTotal() {
		t.Fatalf("memory budget %d, MemTotal %d", b, memTotal())
	}
	if got := populateFlags(b / 4); got != mmapPopulate {
		t.Errorf("a quarter of the budget: flags %#x, want MAP_POPULATE", got)
	}
	if got := populateFlags(b); got != 0 {
		t.Errorf("the whole budget: flags %#x, want none", got)
	}
}
