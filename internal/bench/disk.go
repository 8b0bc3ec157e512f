package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/gen"
)

// bytesPerKey is about what the generator writes per key (8.3 GB for 3.1M keys, basic), to foresee an
// input's size before it exists.
const bytesPerKey = 2800

// checkDisk refuses a size whose input (if it still has to be generated, in inDir) and the two
// outputs a round keeps at a time (in workDir: transform-migrate's, which restore reads, and the
// case's own, each removed right after it is measured; the bbolt floor's, the largest, at most
// 1.25x the input) would leave less than keepFree bytes free.
func checkDisk(inDir, workDir string, size gen.Size, seed int64, profile string, keepFree int64) error {
	est := int64(gen.SizedKeys(profile, size.Keys)) * bytesPerKey
	input := est
	if res, ok := cachedInput(inDir, size, seed, profile); ok {
		input, est = 0, res.Size
	}
	outputs := 2 * (est + est/4 + 128<<20)
	need := map[string]int64{}
	devIn, err := device(inDir)
	if err != nil {
		return err
	}
	devWork, err := device(workDir)
	if err != nil {
		return err
	}
	need[inDir] += input
	if devIn == devWork {
		need[inDir] += outputs
	} else {
		need[workDir] += outputs
	}
	for dir, n := range need {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return fmt.Errorf("checking free space in %s: %w", dir, err)
		}
		free := int64(st.Bavail) * st.Bsize
		if n+keepFree > free {
			return fmt.Errorf("size %s needs about %s free in %s (input %s, two outputs at a time %s, keeping %s free), but only %s is free: free some space or choose a smaller size",
				size.Name, fsutil.FormatSize(n+keepFree), dir, fsutil.FormatSize(est), fsutil.FormatSize(outputs), fsutil.FormatSize(keepFree), fsutil.FormatSize(free))
		}
	}
	return nil
}

// device is the device of the filesystem dir is on.
func device(dir string) (uint64, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Dev, nil
	}
	return 0, nil
}

// cachedInput is the cached input of a size in dir, if it is there and current.
func cachedInput(dir string, size gen.Size, seed int64, profile string) (*gen.Result, bool) {
	res, ok := readCacheMeta(filepath.Join(dir, inputName(size, seed, profile)), size, seed, profile)
	return res, ok
}
