package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"time"
)

// Modes: what a case finds in the page cache when it starts.
const (
	// ModeWarm: the case's input was read just before it, so it is in the page cache.
	ModeWarm = "warm"
	// ModeCold: the page cache was dropped just before the case (after a sync).
	ModeCold = "cold"
	// ModeCgroup: cold, and the case runs inside a memory cgroup of Config.CgroupLimit bytes
	// (snapshift's cases and etcd's restore only; see cgroup.go).
	ModeCgroup = "cgroup"
)

// DefaultDropCaches is the file written to drop the page cache (Config.DropCaches).
const DefaultDropCaches = "/proc/sys/vm/drop_caches"

// newOrderRNG is the generator of every round's order: the same seed gives the same orders.
func newOrderRNG(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x5eed0fca5e))
}

// clockSeed is an order seed for a run that was not given one.
func clockSeed() int64 {
	return time.Now().UnixNano() & (1<<53 - 1) // printable exactly, and through JSON
}

// roundOrder is a random order of the cases for one round: every one of cases once, each in any
// place, except that restore, which reads transform-migrate's output, comes somewhere after it. No
// case keeps its neighbours from round to round, so none pays for (or profits from) the same
// predecessor every time.
func roundOrder(rng *rand.Rand, cases []string) []string {
	seq := slices.DeleteFunc(slices.Clone(cases), func(c string) bool { return c == CaseRestore })
	rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	if !slices.Contains(cases, CaseRestore) {
		return seq
	}
	after := slices.Index(seq, CaseTransformMigrate) + 1
	return slices.Insert(seq, after+rng.IntN(len(seq)-after+1), CaseRestore)
}

// modeOrder is the order of the modes within a round: random, so that neither mode always
// follows the other.
func modeOrder(rng *rand.Rand, modes []string) []string {
	out := slices.Clone(modes)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// cacheDropper drops the page cache through a drop_caches file.
type cacheDropper struct{ path string }

// newCacheDropper returns a dropper of the page cache through path, or why the cache cannot be
// dropped on this machine (not root, a read-only /proc).
func newCacheDropper(path string) (*cacheDropper, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%s is not writable here (dropping the page cache needs root): %w", path, err)
		}
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &cacheDropper{path: path}, nil
}

// drop writes every dirty page back, then drops the clean ones, dentries and inodes.
func (d *cacheDropper) drop() error {
	syscall.Sync()
	if err := os.WriteFile(d.path, []byte("3\n"), 0); err != nil {
		return fmt.Errorf("dropping the page cache: %w", err)
	}
	return nil
}
