//go:build linux

package snapshot

import (
	"os"

	"golang.org/x/sys/unix"
)

// writeBehindBytes is how much of the output the bulk loader lets pile up
// before it starts the kernel writing it back (writeBehind).
const writeBehindBytes = 64 << 20

// A writeBehind starts the writeback of a file written front to back while
// it is being written, instead of leaving all of it dirty for the one fsync
// at the end. Every window bytes it starts writing back the window just
// written (sync_file_range SYNC_FILE_RANGE_WRITE, which does not wait) and
// waits for the window before it, so at most two windows are dirty at a
// time and the disk works while the writer computes: the final fsync finds
// little left to write. With drop, the waited window then leaves the page
// cache (posix_fadvise POSIX_FADV_DONTNEED), so that writing a file larger
// than the memory the process may fill neither piles up dirty pages (a
// cgroup v1 memory cgroup has no dirty limit of its own: the writer then
// sits at the limit reclaiming) nor evicts what others use. Without drop the
// written pages stay cached for the check and the hash that read them next.
//
// sync_file_range is not a durability guarantee (it writes no metadata and
// flushes no disk cache): the Writer's final fsync is what makes the file
// durable, and it stays. Errors are ignored for the same reason: the fsync
// reports a failed write.
type writeBehind struct {
	fd     int
	window int64
	drop   bool
	// [start, end) is written and not yet started; [prev, start) started,
	// not yet waited for.
	prev, start, end int64
}

// newWriteBehind starts the writeback of f's pages while they are written;
// the file is expected to grow to about size bytes (0: unknown), and its
// pages are dropped from the page cache once written back if that is more
// than half the memory the process may fill (as Open does not populate
// such an input, populateFlags).
func newWriteBehind(f *os.File, size int64) *writeBehind {
	b := memoryBudget()
	return &writeBehind{fd: int(f.Fd()), window: writeBehindBytes, drop: b > 0 && size > b/2}
}

// wrote records n bytes written at off; the loader writes front to back.
func (w *writeBehind) wrote(off, n int64) {
	if w == nil {
		return
	}
	if off < w.end { // a rewrite of earlier pages: left to the fsync
		return
	}
	w.end = off + n
	if w.end-w.start < w.window {
		return
	}
	unix.SyncFileRange(w.fd, w.start, w.end-w.start, unix.SYNC_FILE_RANGE_WRITE)
	if w.start > w.prev {
		unix.SyncFileRange(w.fd, w.prev, w.start-w.prev,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		if w.drop {
			unix.Fadvise(w.fd, w.prev, w.start-w.prev, unix.FADV_DONTNEED)
		}
	}
	w.prev, w.start = w.start, w.end
}
