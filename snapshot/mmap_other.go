//go:build !linux

package snapshot

// mmapPopulate is Linux's MAP_POPULATE; elsewhere (darwin) pages are
// faulted in as they are read.
const mmapPopulate = 0

// populateFlags is 0: there is no MAP_POPULATE.
func populateFlags(int64) int { return 0 }

// adviseSequential is Linux's; elsewhere bbolt's advice stays.
func adviseSequential(uintptr, int64) {}
