//go:build !linux

package snapshot

// mmapPopulate is Linux's MAP_POPULATE; elsewhere (darwin) pages are
// faulted in as they are read.
const mmapPopulate = 0
