package app

import (
	"os"
	"runtime/debug"
)

// SizeGC, set by the snapshift binary when neither GOGC nor GOMEMLIMIT is
// set, lets a migration (plan, transform, restore) size the collector to
// its input (sizeGC). Tests leave it unset: the process is theirs.
var SizeGC bool

// Collector settings of a migration: at most half the collections of the
// GOGC=50 the binary starts with, and a soft memory limit that brings them
// back only when the heap nears it. The live heap peaks at about 0.9% of
// the input (67 MB for plan, 74 MB for the one pass on the 8 GiB, 3.2M-key
// bench snapshot, since issue 39 shrank the index and moved the report's
// changed objects to a spill file), so the limit is gcFloor, or the
// input's size over gcSizeDivisor above that (8.75 GiB): about 1.4x the
// live heap, and not a limit a huge cluster's live heap is near (the
// collector would then run back to back). At 8 GiB the 112 MiB limit keeps
// RssAnon at 109 MiB (it was 160 MiB under 1/50 of the input) for 3-5%
// more CPU in plan and no measurable cost in the one pass
// (docs/PERFORMANCE.md).
const (
	gcPercent     = 100
	gcFloor       = 112 << 20
	gcSizeDivisor = 80
)

// sizeGC applies the settings above for a migration of input.
func sizeGC(input string) {
	if !SizeGC {
		return
	}
	limit := int64(gcFloor)
	if st, err := os.Stat(input); err == nil {
		limit = max(limit, st.Size()/gcSizeDivisor)
	}
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(limit)
}
