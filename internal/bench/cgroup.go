package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultCgroupLimit is Config.CgroupLimit's default: the small host of issue 39, 1 GiB.
const DefaultCgroupLimit = 1 << 30

// cgroupV1Root is where the cgroup v1 memory controller is mounted.
const cgroupV1Root = "/sys/fs/cgroup/memory"

// CgroupUsage is what a case's memory cgroup (v1) recorded.
type CgroupUsage struct {
	LimitBytes int64 `json:"limitBytes"`
	// MaxUsageBytes is memory.max_usage_in_bytes: the cgroup's peak charge, the page cache its
	// process read or wrote included.
	MaxUsageBytes int64 `json:"maxUsageBytes"`
	// Failcnt is memory.failcnt: how often the charge hit the limit (and the kernel reclaimed the
	// cgroup's page cache instead). Not a failure by itself.
	Failcnt int64 `json:"failcnt"`
	// OOMKills is memory.oom_control's oom_kill: processes the OOM killer killed in the cgroup.
	OOMKills int64 `json:"oomKills"`
	UnderOOM bool  `json:"underOOM"`
}

// memoryCgroups makes a fresh memory cgroup (v1) for each case under parent, limited to limit bytes.
type memoryCgroups struct {
	parent string
	limit  int64
	n      int
}

// newMemoryCgroups returns the maker of cases' cgroups under this process's own memory cgroup (so
// the limits of whatever runs the benchmark still hold), or why there can be none here: no cgroup
// v1 memory controller, or not allowed to create one (root is needed).
func newMemoryCgroups(limit int64) (*memoryCgroups, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,") {
			own = f[2]
		}
	}
	if own == "" {
		return nil, errors.New("this machine has no cgroup v1 memory controller (the 1 GiB mode needs /sys/fs/cgroup/memory)")
	}
	parent := filepath.Join(cgroupV1Root, own)
	probe := filepath.Join(parent, fmt.Sprintf("snapbench-%d-probe", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create a memory cgroup under %s (root is needed): %w", parent, err)
	}
	if err := os.Remove(probe); err != nil {
		return nil, err
	}
	return &memoryCgroups{parent: parent, limit: limit}, nil
}

// create makes the next case's cgroup with its limit.
func (m *memoryCgroups) create() (string, error) {
	m.n++
	dir := filepath.Join(m.parent, fmt.Sprintf("snapbench-%d-%d", os.Getpid(), m.n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating memory cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(m.limit, 10)), 0); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("limiting memory cgroup %s: %w", dir, err)
	}
	return dir, nil
}

// remove removes a case's cgroup once its processes are gone (the kernel moves what is still
// charged to it, page cache, to the parent).
func (m *memoryCgroups) remove(dir string) error {
	var err error
	for range 300 { // 30 s: a process killed in reclaim takes its time to go
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing memory cgroup %s: %w", dir, err)
}

// joinCgroup moves the calling process into the memory cgroup dir: whatever it starts from then
// on, before that exec's, starts there.
func joinCgroup(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("joining memory cgroup %s: %w", dir, err)
	}
	return nil
}

// readCgroupUsage reads what the memory cgroup dir recorded.
func readCgroupUsage(dir string) (*CgroupUsage, error) {
	u := &CgroupUsage{}
	for _, f := range []struct {
		name string
		to   *int64
	}{{"memory.limit_in_bytes", &u.LimitBytes}, {"memory.max_usage_in_bytes", &u.MaxUsageBytes}, {"memory.failcnt", &u.Failcnt}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return nil, err
		}
		if *f.to, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "oom_kill":
			u.OOMKills = v
		case "under_oom":
			u.UnderOOM = v != 0
		}
	}
	return u, nil
}

// classifyFailure names why a case in a memory cgroup failed: killed by the OOM killer, an mmap
// that failed, or another error.
func classifyFailure(m Measurement, err error) string {
	msg := err.Error()
	switch {
	case (m.Cgroup != nil && m.Cgroup.OOMKills > 0) || m.Signal == "killed":
		return "OOM-killed (SIGKILL; memory.oom_control oom_kill " + strconv.FormatInt(oomKills(m), 10) + ")"
	case strings.Contains(msg, "mmap"):
		return "mmap failure: " + lastLine(msg)
	}
	return "failed: " + lastLine(msg)
}

func oomKills(m Measurement) int64 {
	if m.Cgroup == nil {
		return 0
	}
	return m.Cgroup.OOMKills
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
