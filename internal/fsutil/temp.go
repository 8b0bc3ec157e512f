package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Temporary names. Every file or directory snapshift writes before
// publishing it is named
//
//	.<base>.snapshift-<pid>-<start>-<boot>-<random><suffix>
//
// beside its final path: <base> is the final name, <pid> the writing
// process, <start> its start time (clock ticks since boot, /proc/<pid>/stat
// field 22), <boot> the first 8 hex digits of the kernel's boot id. A
// temporary is a live writer's while a process with that pid and start time
// runs in this boot; otherwise its writer is dead (killed, crashed, or the
// machine restarted) and it is a leftover that the next run for the same
// output removes. The name alone says so: no lock file, no fd held, and it
// works for directories that etcd's restore creates itself (an flock would
// need an open fd for the whole write and says nothing once the file is
// copied elsewhere). A pid reused by another process has another start
// time; a reboot changes the boot id.

// ProcessTag identifies this process in temporary names: "<pid>-<start>-<boot>".
func ProcessTag() string {
	tagOnce.Do(func() { tag = makeTag() })
	return tag
}

var (
	tagOnce sync.Once
	tag     string
)

func makeTag() string {
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		start = 0 // no /proc: the pid alone (a live pid is then taken as live)
	}
	return fmt.Sprintf("%d-%d-%s", pid, start, bootID())
}

// startTime is field 22 of /proc/<pid>/stat.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, errors.New("malformed stat")
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 is the 20th after ')'
}

// bootID is the first 8 hex digits of the kernel's boot id ("00000000"
// where there is none).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
	if err != nil || len(id) < 8 {
		return "00000000"
	}
	return id[:8]
}

// TempName is a new temporary name for path, beside it, ending in suffix.
func TempName(path, suffix string) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".snapshift-"+ProcessTag()+"-"+hex.EncodeToString(r[:])+suffix)
}

// CreateTemp creates a hidden temporary file beside path (same directory, so
// the final rename is atomic) with mode perm.
func CreateTemp(path string, perm os.FileMode) (*os.File, error) {
	for range 100 {
		f, err := os.OpenFile(TempName(path, ".tmp"), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrNotExist) {
			dir := filepath.Dir(path)
			cause := err
			var pe *fs.PathError
			if errors.As(err, &pe) {
				cause = pe.Err // the temporary name says nothing to the user
			}
			if errors.Is(err, fs.ErrNotExist) { // a directory that takes no new files (/proc), or one removed meanwhile
				return nil, outputDirError{fmt.Errorf("output directory %s takes no new file (%w): choose another", dir, cause)}
			}
			return nil, outputDirError{fmt.Errorf("output directory %s is not writable (%w): choose another, or run as a user who may write there", dir, cause)}
		}
		if err != nil {
			return nil, err
		}
		// The umask may have taken bits away: set exactly perm.
		if err := f.Chmod(perm); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		failpointTempCreated()
		return f, nil
	}
	return nil, fmt.Errorf("creating a temporary file beside %s: too many collisions", path)
}

// MkdirTemp creates a hidden temporary directory (mode 0700) beside path,
// named for it, ending in suffix.
func MkdirTemp(path, suffix string) (string, error) {
	for range 100 {
		name := TempName(path, suffix)
		err := os.Mkdir(name, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		failpointTempCreated()
		return name, nil
	}
	return "", fmt.Errorf("creating a temporary directory beside %s: too many collisions", path)
}

// tempRE parses a temporary name: target base, pid, start, boot.
var tempRE = regexp.MustCompile(`^\.(.+)\.snapshift-([0-9]+)-([0-9]+)-([0-9a-f]{8})-[0-9a-f]{8}(\.[a-z]+)?$`)

// tempOwner is what a temporary name says about its writer.
type tempOwner struct {
	target string // the final path's base name
	pid    int
	start  uint64
	boot   string
}

func parseTemp(name string) (tempOwner, bool) {
	m := tempRE.FindStringSubmatch(name)
	if m == nil {
		return tempOwner{}, false
	}
	pid, err1 := strconv.Atoi(m[2])
	start, err2 := strconv.ParseUint(m[3], 10, 64)
	if err1 != nil || err2 != nil {
		return tempOwner{}, false
	}
	return tempOwner{target: m[1], pid: pid, start: start, boot: m[4]}, true
}

// live says whether the writer named by o may still run: false only when
// it cannot (another boot, no such process, or another process with its
// pid).
func (o tempOwner) live() bool {
	if o.boot != bootID() {
		return false // written before a reboot
	}
	st, err := startTime(o.pid)
	if errors.Is(err, fs.ErrNotExist) {
		_, serr := os.Stat("/proc/self/stat")
		return serr != nil // no /proc at all: cannot tell, so live
	}
	if err != nil {
		return true // cannot tell
	}
	return o.start == 0 || st == o.start
}
