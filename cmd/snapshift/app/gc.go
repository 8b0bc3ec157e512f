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
// stream at about 2.5% of the input (72 MB on the 2.9 GB, 1.1M-key bench
// snapshot), so the limit is gcFloor, or the input's size over
// gcSizeDivisor above that: about 1.6x the live heap, and never a limit a
// huge cluster's live heap could reach (the collector would then run
// back to back). gcFloor at every size was measured on the 8 GiB bench
// input: plan's peak RssAnon went from 280 to 150 MiB (the live heap is
// over gcFloor there) for about a fifth more time, so the limit still grows
// with the input (README, Performance).
const (
	gcPercent     = 100
	gcFloor       = 112 << 20
	gcSizeDivisor = 25
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
