package snapshot

import (
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/snapshift/snapshift/progress"
)

// mmapPopulate maps a file's pages in one go (see Open).
const mmapPopulate = syscall.MAP_POPULATE

// populateFlags is the bbolt MmapFlags Open maps an input of size bytes
// with: MAP_POPULATE when the input fits in half the memory this process
// may fill (memoryBudget), else none. Populating a file larger than its
// memory cgroup reads it whole while evicting what it read, and every pass
// then reads it again: plan of an 8 GiB snapshot in a 1 GiB cgroup read
// 30 GB in 3 minutes and was stopped after 10; unpopulated, it was 79%
// through its stream after 150 s (issue 39's bench).
func populateFlags(size int64) int {
	if b := memoryBudget(); b > 0 && size > b/2 {
		return 0
	}
	return mmapPopulate
}

// memoryBudget is the memory this process may fill, in bytes: the
// machine's (MemTotal), or its memory cgroup's limit where lower (v1
// memory.limit_in_bytes, v2 memory.max, the lowest of its cgroup and their
// ancestors). 0: unknown.
func memoryBudget() int64 {
	budget := memTotal()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return budget
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3) // hierarchy-ID:controllers:path
		if len(f) != 3 {
			continue
		}
		var root, file string
		switch {
		case f[0] == "0" && f[1] == "":
			root, file = "/sys/fs/cgroup", "memory.max"
		case strings.Contains(","+f[1]+",", ",memory,"):
			root, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for dir := filepath.Join(root, f[2]); ; dir = filepath.Dir(dir) {
			if v, err := os.ReadFile(filepath.Join(dir, file)); err == nil {
				n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64) // "max": no limit
				if err == nil && n > 0 && (budget == 0 || n < budget) {
					budget = n
				}
			}
			if dir == root || !strings.HasPrefix(dir, root) {
				break
			}
		}
	}
	return budget
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 if unknown.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// adviseSequential undoes, for a file Open does not populate and that was
// written in key order (OpenOptions.InOrder), bbolt's MADV_RANDOM
// (bolt_unix.go mmap: no readahead, one 4 KiB page read a fault) on the
// first size bytes of the mapping at data, advising MADV_SEQUENTIAL
// instead: a pass over the key bucket then reads the file front to back,
// and the kernel reads ahead and reclaims the pages read first. An input
// keeps bbolt's advice: its pages are not in key order, and in a 1 GiB
// memory cgroup plan of the 8 GiB bench input, which finishes in 173 s
// with MADV_RANDOM, had read 142 GB in 172 s with MADV_NORMAL's read-around
// and the one pass 190 GB in 228 s with MADV_SEQUENTIAL. A failure is
// ignored: the advice is only a speed.
func adviseSequential(data uintptr, size int64) {
	if data == 0 || size <= 0 {
		return
	}
	unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_SEQUENTIAL)
}

// hashMapped writes the first size bytes of f to w in 4 MiB pieces
// through a read-only mapping of its own, reporting each to p, and reports
// whether it could: false (nothing written) when the input is one Open
// does not populate (a memory cgroup smaller than twice the input: there
// the hash reads as it always did), when the file cannot be mapped, or on
// a fault (a file truncated while it is read), after which the caller
// reads it with pread, from the start, and says what is wrong.
//
// Read with pread, the hash of the 8 GiB bench input cost 1.7 s of system
// time copying the page cache into a buffer; mapped, the hash reads the
// page cache where it is, and each page fault maps 16 pages that are there
// already (fault-around). MADV_SEQUENTIAL makes the kernel read ahead of a
// cold input as it does for pread.
func hashMapped(f *os.File, size int64, w io.Writer, p progress.Reporter) (ok bool) {
	if size <= 0 || populateFlags(size) == 0 || int64(int(size)) != size {
		return false
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return false
	}
	defer unix.Munmap(data)
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL) // only a speed
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	const piece = 4 << 20
	for off := 0; off < len(data); off += piece {
		n := min(piece, len(data)-off)
		w.Write(data[off : off+n])
		// Unmap what was hashed (the pages stay in the page cache): the
		// process's RSS then counts the input once, as the index's
		// mapping holds it, not twice.
		_ = unix.Madvise(data[off:off+n], unix.MADV_DONTNEED)
		p.Add(int64(n))
	}
	return true
}
