package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SampleInterval is how often a child's /proc/<pid>/status is read.
const SampleInterval = 50 * time.Millisecond

// Measurement is what one child process cost.
type Measurement struct {
	Wall time.Duration `json:"wallNanos"`
	// MaxRSS is the child's peak resident set (getrusage ru_maxrss), file pages included.
	MaxRSS int64 `json:"maxRSSBytes"`
	// PeakRssAnon is the highest RssAnon sampled: anonymous memory only (heap, stacks), not the
	// mapped snapshot pages. Zero if the child ended before the first sample.
	PeakRssAnon int64         `json:"peakRssAnonBytes"`
	User        time.Duration `json:"userNanos"`
	Sys         time.Duration `json:"sysNanos"`
	// MajorFaults are page faults the child waited for the disk on (getrusage ru_majflt);
	// MinorFaults those the page cache answered (ru_minflt).
	MajorFaults int64 `json:"majorFaults"`
	MinorFaults int64 `json:"minorFaults"`
	// ReadBytes and WrittenBytes are what the child read from and wrote to the disk (ru_inblock,
	// ru_oublock, 512-byte blocks): unlike major faults, ReadBytes also counts read(2), the way
	// etcdutl reads its input.
	ReadBytes    int64 `json:"readBytes"`
	WrittenBytes int64 `json:"writtenBytes"`
	// Phases are where the child said its time went: the "Timing" block snapshift's --profile
	// prints last (none for other children).
	Phases []Phase `json:"phases,omitempty"`
	// Signal is the signal that ended the child ("killed" for SIGKILL), if one did.
	Signal string `json:"signal,omitempty"`
	// Cgroup is what the case's memory cgroup recorded (ModeCgroup only).
	Cgroup *CgroupUsage `json:"cgroup,omitempty"`
	// Failure says why the case failed where failing is a result, not an error of the benchmark
	// (ModeCgroup): "OOM-killed ...", "mmap failure: ...", "failed: ...". Empty: it succeeded.
	Failure string `json:"failure,omitempty"`
}

// Phase is one phase of a snapshift run and its wall time.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// profileLine is one phase line of snapshift's --profile block: "  hash wait   0.123s   4.5%".
var profileLine = regexp.MustCompile(`^  (\S.*?)\s+([0-9]+\.[0-9]+)s\s+[0-9.]+%$`)

// parsePhases reads the phases from the end of a child's output: the lines after the last
// "Timing (" heading, but the "between phases" rest.
func parsePhases(out string) []Phase {
	i := strings.LastIndex(out, "\nTiming (")
	if i < 0 {
		return nil
	}
	var ps []Phase
	for _, line := range strings.Split(out[i+1:], "\n")[1:] {
		m := profileLine.FindStringSubmatch(line)
		if m == nil || m[1] == "between phases" {
			continue
		}
		s, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			ps = append(ps, Phase{Name: m[1], Seconds: s})
		}
	}
	return ps
}

// Measure runs argv through the launcher (the benchmark binary's ChildCommand "measure", see
// ChildMain) and returns what the launcher measured.
//
// The launcher exists because Linux carries the parent's memory high-water mark into a child's
// ru_maxrss across fork and exec: measured straight from the benchmark process, every case would
// report at least the benchmark's own peak (which includes generating the snapshot). The launcher
// is a small fresh process, so the child it starts reports its own peak, plus at most the
// launcher's few MiB.
func Measure(ctx context.Context, launcher, argv []string) (Measurement, error) {
	return MeasureIn(ctx, launcher, "", argv)
}

// MeasureIn is Measure with the launcher, and so the measured child, inside the memory cgroup
// (v1) directory cgroup, if not empty: there a failure of the child is a result (Measurement's
// Failure, with what the cgroup recorded), not an error.
func MeasureIn(ctx context.Context, launcher []string, cgroup string, argv []string) (Measurement, error) {
	var m Measurement
	args := append(append([]string(nil), launcher[1:]...), "measure")
	if cgroup != "" {
		args = append(args, "--cgroup", cgroup)
	}
	args = append(args, argv...)
	cmd := exec.CommandContext(ctx, launcher[0], args...)
	var stdout bytes.Buffer
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Interrupting kills the launcher's whole process group, the measured child with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		return m, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		return m, fmt.Errorf("launcher output %q: %w", stdout.String(), err)
	}
	return m, nil
}

// MeasureDirect runs argv as a child of this process (the tails of its stdout and stderr kept:
// the phases snapshift's --profile prints, the error) and measures it: wall time, rusage, and
// RssAnon sampled every SampleInterval.
func MeasureDirect(ctx context.Context, argv []string) (Measurement, error) {
	var m Measurement
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // the last 8 KiB of each: the phases, the error
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	pid := cmd.Process.Pid
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(SampleInterval)
		defer t.Stop()
		for {
			if anon, ok := readRssAnon(pid); ok && anon > m.PeakRssAnon {
				m.PeakRssAnon = anon
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	m.Wall = time.Since(start)
	close(stop)
	wg.Wait()
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			m.MaxRSS = ru.Maxrss * 1024 // kilobytes on Linux
			m.MajorFaults, m.MinorFaults = ru.Majflt, ru.Minflt
			m.ReadBytes, m.WrittenBytes = ru.Inblock*512, ru.Oublock*512
		}
		m.User, m.Sys = ps.UserTime(), ps.SystemTime()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			m.Signal = ws.Signal().String()
		}
	}
	if err != nil {
		return m, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	m.Phases = parsePhases(stdout.String())
	return m, nil
}

// readRssAnon reads RssAnon (bytes) from /proc/<pid>/status.
func readRssAnon(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// tailBuffer keeps the last 8 KiB written to it (a child's stderr, for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-8<<10:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
