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
// back only when the heap nears it. The live heap peaks at the end of the
// stream at about 1.3% of the input (92 MB for plan, 110 MB for the one
// pass on the 8 GiB, 3.2M-key bench snapshot, since issue 39 shrank the
// index and the engine's bookkeeping), so the limit is gcFloor, or the
// input's size over gcSizeDivisor above that (5.5 GiB): about 1.5x the
// live heap, and not a limit a huge cluster's live heap is near (the
// collector would then run back to back). A 128 MiB limit at 8 GiB kept
// RssAnon at 127 MiB but doubled the one pass's stream (its live heap is
// 110 MB); 1/50 of the input (164 MiB) cost nothing measurable (README,
// Performance).
const (
	gcPercent     = 100
	gcFloor       = 112 << 20
	gcSizeDivisor = 50
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
