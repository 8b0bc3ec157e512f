//go:build crash

package crashtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The fsync audit: a command runs under strace, and its trace is replayed
// against a model of what a power loss may lose. A file's data is safe
// once fsynced (or fdatasynced) after its last write; a directory entry
// (a file or directory created, renamed or linked into it) once the
// directory is fsynced after it. At every publishing rename (a snapshift
// temporary renamed to its final name) nothing under the temporary may be
// unsafe, and at the end no published path, nothing under it, and no
// parent of one may be.
//
// What it cannot see: writes through a shared mmap (msync is not traced;
// bbolt and etcd write through pwrite/write, which are), io_uring, writes
// by other processes, whether the disk honours a flush (a volatile write
// cache without barriers), and the order in which a filesystem commits
// metadata (it assumes POSIX: nothing is durable until fsynced).

var auditedCalls = "openat,creat,write,pwrite64,writev,pwritev,ftruncate,fallocate,copy_file_range,fsync,fdatasync," +
	"rename,renameat,renameat2,mkdir,mkdirat,link,linkat,unlink,unlinkat,rmdir"

var (
	callRE    = regexp.MustCompile(`^(\w+)\((.*)\)\s+= (-?\d+)`)
	fdRE      = regexp.MustCompile(`^\d+<([^>]+)>(\(deleted\))?`)
	atPathRE  = regexp.MustCompile(`^(?:AT_FDCWD|\d+)<([^>]*)>, "([^"]*)"`)
	twoPathRE = regexp.MustCompile(`^(?:AT_FDCWD|\d+)<([^>]*)>, "([^"]*)", (?:AT_FDCWD|\d+)<([^>]*)>, "([^"]*)"`)
	cfrOutRE  = regexp.MustCompile(`^\d+<[^>]*>, [^,]+, \d+<([^>]+)>`)
	tempRE    = regexp.MustCompile(`^\.[^/]+\.snapshift-|/\.[^/]+\.snapshift-`)
)

type audit struct {
	root      string
	dirty     map[string]string // path -> what is not yet durable
	known     map[string]bool
	published []string
	problems  []string
	fsyncs    int
}

func (a *audit) under(p string) bool { return p == a.root || strings.HasPrefix(p, a.root+"/") }

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func (a *audit) mark(p, why string) {
	if a.under(p) {
		a.dirty[p] = why
	}
}

// within lists the tracked paths at or under p.
func (a *audit) within(p string) []string {
	var out []string
	for q := range a.dirty {
		if q == p || strings.HasPrefix(q, p+"/") {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

func (a *audit) rename(from, to string) {
	// Publishing: a temporary renamed to a final name outside any
	// temporary (a rename inside a temporary directory is part of
	// building it, checked when the directory is published).
	if tempRE.MatchString(filepath.Base(from)) && !tempRE.MatchString(to) && a.under(to) {
		for _, q := range a.within(from) {
			a.problems = append(a.problems, fmt.Sprintf("%s published as %s while %s (%s) was not fsynced", from, to, q, a.dirty[q]))
		}
		a.published = append(a.published, to)
	}
	for _, q := range a.within(from) {
		a.dirty[to+strings.TrimPrefix(q, from)] = a.dirty[q]
		delete(a.dirty, q)
	}
	a.mark(filepath.Dir(to), "an entry renamed in: "+filepath.Base(to))
}

func (a *audit) event(name, args, ret string) {
	if strings.HasPrefix(ret, "-") {
		return // failed: changed nothing
	}
	switch name {
	case "write", "pwrite64", "writev", "pwritev", "ftruncate", "fallocate":
		// An unlinked file (a spill file) is nobody's output.
		if m := fdRE.FindStringSubmatch(args); m != nil && m[2] == "" {
			a.mark(m[1], "written")
		}
	case "copy_file_range":
		if m := cfrOutRE.FindStringSubmatch(args); m != nil {
			a.mark(m[1], "written")
		}
	case "fsync", "fdatasync":
		if m := fdRE.FindStringSubmatch(args); m != nil {
			delete(a.dirty, m[1])
			a.fsyncs++
		}
	case "openat", "mkdirat":
		if m := atPathRE.FindStringSubmatch(args); m != nil {
			p := resolve(m[1], m[2])
			creates := name == "mkdirat" || strings.Contains(args, "O_CREAT") && !a.known[p]
			if creates {
				a.mark(filepath.Dir(p), "an entry created: "+filepath.Base(p))
			}
			if strings.Contains(args, "O_TRUNC") {
				a.mark(p, "truncated")
			}
			a.known[p] = true
		}
	case "renameat", "renameat2":
		if m := twoPathRE.FindStringSubmatch(args); m != nil {
			a.rename(resolve(m[1], m[2]), resolve(m[3], m[4]))
		}
	case "linkat":
		if m := twoPathRE.FindStringSubmatch(args); m != nil {
			p := resolve(m[3], m[4])
			a.mark(filepath.Dir(p), "an entry linked: "+filepath.Base(p))
			a.known[p] = true
		}
	case "unlinkat":
		if m := atPathRE.FindStringSubmatch(args); m != nil {
			p := resolve(m[1], m[2])
			for _, q := range a.within(p) {
				delete(a.dirty, q)
			}
			delete(a.known, p)
		}
	}
}

// finish checks what must be durable when the command has exited.
func (a *audit) finish() {
	for _, p := range a.published {
		for _, q := range a.within(p) {
			a.problems = append(a.problems, fmt.Sprintf("published %s: %s (%s) not fsynced at exit", p, q, a.dirty[q]))
		}
		if why, ok := a.dirty[filepath.Dir(p)]; ok {
			a.problems = append(a.problems, fmt.Sprintf("the parent of %s was not fsynced after %s", p, why))
		}
	}
}

// replay reads an strace -f -y log (joining unfinished calls).
func replay(t *testing.T, trace, root string) *audit {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := &audit{root: root, dirty: map[string]string{}, known: map[string]bool{}}
	pending := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		pid, line, _ := strings.Cut(sc.Text(), " ")
		line = strings.TrimSpace(line)
		if head, ok := strings.CutSuffix(line, " <unfinished ...>"); ok {
			pending[pid] = head
			continue
		}
		if strings.HasPrefix(line, "<... ") {
			_, rest, _ := strings.Cut(line, " resumed>")
			line = pending[pid] + rest
			delete(pending, pid)
		}
		if m := callRE.FindStringSubmatch(line); m != nil {
			a.event(m[1], m[2], m[3])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	a.finish()
	return a
}

// TestFsyncAudit runs every writing command under strace and replays its
// trace (see audit).
func TestFsyncAudit(t *testing.T) {
	needBinaries(t)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatal("strace is not installed (apt-get install strace)")
	}
	sample := input{name: "sample", path: samplePath}
	for _, s := range append(snapshotScenarios(t, sample), sampleScenarios(t)...) {
		t.Run(s.name, func(t *testing.T) {
			work := t.TempDir()
			copyTree(t, s.template, work)
			trace := filepath.Join(t.TempDir(), "trace")
			args := append([]string{"-f", "-y", "-qq", "-o", trace, "-e", "trace=" + auditedCalls, plainBin}, s.args...)
			if r := run(t, "strace", work, runOpts{}, args...); r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			a := replay(t, trace, work)
			if len(a.published) == 0 {
				t.Fatalf("nothing was published")
			}
			for _, p := range a.problems {
				t.Error(p)
			}
			t.Logf("%d published paths, %d fsyncs, %d problems", len(a.published), a.fsyncs, len(a.problems))
			record(row{scenario: "audit " + s.name, fault: "power loss (fsync audit)", reached: true,
				states: fmt.Sprintf("%d published", len(a.published)), clean: len(a.problems) == 0, rerun: "-", failed: t.Failed()})
		})
	}
}
