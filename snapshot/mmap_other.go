//go:build !linux

package snapshot

import (
	"io"
	"os"

	"github.com/snapshift/snapshift/progress"
)

// mmapPopulate is Linux's MAP_POPULATE; elsewhere (darwin) pages are
// faulted in as they are read.
const mmapPopulate = 0

// populateFlags is 0: there is no MAP_POPULATE.
func populateFlags(int64) int { return 0 }

// adviseSequential is Linux's; elsewhere bbolt's advice stays.
func adviseSequential(uintptr, int64) {}

// hashMapped is Linux's: elsewhere the hash reads with pread.
func hashMapped(*os.File, int64, io.Writer, progress.Reporter) bool { return false }
