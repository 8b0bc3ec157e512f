//go:build crash

package crashtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The binaries `make crash` builds: the plain one (reference runs and
// reruns) and the one with failpoints compiled in.
var (
	plainBin = os.Getenv("SNAPSHIFT_BIN")
	fpBin    = os.Getenv("SNAPSHIFT_FAILPOINTS_BIN")
)

// failpoints are every failpoint the failpoint binary holds.
var failpoints = []string{
	"fsutilTempCreated", "snapshotTxCommitted", "fsutilBeforeFsync", "fsutilAfterFsync", "fsutilBeforeRename",
	"fsutilBeforeParentSync", "fsutilAfterParentSync", "fsutilBetweenRenames", "fsutilBetweenMembers",
}

// outcome is one run of a binary.
type outcome struct {
	pid            int
	code           int // exit code; -1 when killed by a signal
	signal         syscall.Signal
	stdout, stderr string
	took           time.Duration
}

// runOpts says how to run a binary.
type runOpts struct {
	env   []string
	fsize int64         // > 0: RLIMIT_FSIZE, SIGXFSZ ignored (a full disk: EFBIG)
	kill  time.Duration // > 0: SIGKILL after this long
}

func run(t *testing.T, bin, dir string, o runOpts, args ...string) outcome {
	t.Helper()
	var cmd *exec.Cmd
	if o.fsize > 0 {
		script := fmt.Sprintf(`trap '' XFSZ; ulimit -f %d; exec "$0" "$@"`, max(1, o.fsize/1024))
		cmd = exec.Command("bash", append([]string{"-c", script, bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), o.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if o.kill > 0 {
		timer := time.AfterFunc(o.kill, func() { cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	out := outcome{pid: cmd.Process.Pid, stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		ws := ee.Sys().(syscall.WaitStatus)
		out.code = ws.ExitStatus()
		if ws.Signaled() {
			out.code, out.signal = -1, ws.Signal()
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return out
}

// stepLog runs args (with o's environment) with every failpoint, and the
// extra ones, counting its hits and returns them in order.
func stepLog(t *testing.T, dir string, args []string, o runOpts, extra ...string) []string {
	t.Helper()
	log := filepath.Join(t.TempDir(), "steps")
	var terms []string
	for _, fp := range append(append([]string(nil), failpoints...), extra...) {
		terms = append(terms, fp+`=return("count")`)
	}
	o.env = append(o.env, "GOFAIL_FAILPOINTS="+strings.Join(terms, ";"), "SNAPSHIFT_FAILPOINT_LOG="+log)
	r := run(t, fpBin, dir, o, args...)
	if r.code != 0 {
		t.Fatalf("counting run of %v: exit %d: %s", args, r.code, r.stderr)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("no failpoint was hit: %v", err)
	}
	return strings.Fields(string(b))
}

// point is one step: the n-th hit of a failpoint.
type point struct {
	name string
	n    int
}

// between says whether p may fall between two renames of a set: a set's
// first rename is done there.
func (p point) between() bool {
	return p.name == "fsutilBetweenRenames" || p.name == "fsutilBeforeRename" && p.n > 1
}

func (p point) String() string { return fmt.Sprintf("%s#%d", p.name, p.n) }

// term is the gofail term that does act ("kill" or "panic") at p.
func (p point) term(act string) string {
	do := `return("kill")`
	if act == "panic" {
		do = `panic("crash")`
	}
	if p.n > 1 {
		do = fmt.Sprintf("%d*off->%s", p.n-1, do)
	}
	return p.name + "=" + do
}

// points picks the steps to crash at: for every failpoint hit, its first,
// second, middle and last hit (first and last when few is set).
func points(steps []string, few bool) []point {
	count := map[string]int{}
	for _, s := range steps {
		count[s]++
	}
	var out []point
	for _, fp := range failpoints {
		c := count[fp]
		if c == 0 {
			continue
		}
		ns := []int{1, 2, (c + 1) / 2, c}
		if few {
			ns = []int{1, c}
		}
		seen := map[int]bool{}
		for _, n := range ns {
			if n >= 1 && n <= c && !seen[n] {
				seen[n] = true
				out = append(out, point{fp, n})
			}
		}
	}
	return out
}

// copyTree copies the template dir src to a new dir dst (cp -a).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
}

func sha(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return "absent"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// treeHash is a digest of every name, mode and content under dir ("absent"
// when there is no dir).
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	if _, err := os.Lstat(dir); err != nil {
		return "absent"
	}
	var lines []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		c := ""
		if info.Mode().IsRegular() {
			c = sha(t, p)
		}
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, info.Mode(), c))
		return nil
	})
	sort.Strings(lines)
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(h[:])
}

// filesOf lists every path under dir whose name holds a snapshift
// temporary tag of process pid.
func filesOf(dir string, pid int) []string {
	tag := ".snapshift-" + strconv.Itoa(pid) + "-"
	var out []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.Contains(filepath.Base(p), tag) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// oneLine says whether s is one line (a refusal must be).
func oneLine(s string) bool {
	sc := bufio.NewScanner(strings.NewReader(strings.TrimSpace(s)))
	n := 0
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "[") { // progress and notes are [phase] lines
			n++
		}
	}
	return n == 1
}
