package nodeops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// copyExact copies src (a file, a symlink or a directory) to dst, which
// must not exist, keeping every file's bytes, mode, owner and modification
// time and every symlink's target, and makes the copy durable (every file
// and directory fsynced, then dst's parent) before it returns: what
// rollback puts back is what was there, and a record written after it
// never names a copy a power loss could take away.
func copyExact(src, dst string) error {
	if err := fsutil.Copy(src, dst, fsutil.CopyOptions{Symlinks: true, KeepOwner: true, KeepTimes: true}); err != nil {
		return err
	}
	if err := fsutil.SyncTree(dst); err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Dir(dst))
}

// moveTree renames src to dst, or copies and removes it when they are on
// different file systems, and makes the move durable (both parents
// fsynced).
func moveTree(src, dst string) error {
	err := os.Rename(src, dst)
	var le *os.LinkError
	if err != nil && errors.As(err, &le) && errors.Is(le.Err, syscall.EXDEV) {
		if err := copyExact(src, dst); err != nil {
			return err
		}
		err = os.RemoveAll(src)
	}
	if err != nil {
		return err
	}
	if err := fsutil.SyncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Dir(src))
}

// treeSize is the bytes of every regular file under p (0 if p is absent).
func treeSize(p string) (int64, error) {
	var n int64
	err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// exists reports whether p exists (a dangling symlink counts).
func exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// installFile writes src's bytes to dst through a temporary file in the
// same directory, with mode and, when running as root, owner root:root.
func installFile(src, dst string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if _, err := fsutil.CleanFor(dst); err != nil { // a killed run's temporary file
		return err
	}
	tmp := fsutil.TempName(dst, "")
	if err := fsutil.Copy(src, tmp, fsutil.CopyOptions{FileMode: mode, Sync: true}); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(tmp, 0, 0); err != nil {
			return err
		}
	}
	return fsutil.Publish(tmp, dst, true)
}

// freeBytes is the space available to root on the file system holding p
// (or its nearest existing parent).
func freeBytes(p string) (uint64, error) {
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(p, &st)
		if err == nil {
			return st.Bfree * uint64(st.Bsize), nil
		}
		if !errors.Is(err, syscall.ENOENT) || p == filepath.Dir(p) {
			return 0, err
		}
		p = filepath.Dir(p)
	}
}

// fileSystem is the file system a path is on: its device, the space free
// to root, and the mount point (mountinfo's) it is under: a rename works
// only within one mount, even of one device (a bind mount).
type fileSystem struct {
	dev   uint64
	free  uint64
	mount string
}

// fileSystemOf is the file system of p, or of its nearest existing parent.
func fileSystemOf(p string) (fileSystem, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return fileSystem{}, err
	}
	for {
		var st syscall.Stat_t
		err := syscall.Stat(p, &st)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ENOENT) || p == filepath.Dir(p) {
			return fileSystem{}, &fs.PathError{Op: "stat", Path: p, Err: err}
		}
		p = filepath.Dir(p)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return fileSystem{}, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	free, err := freeBytes(p)
	if err != nil {
		return fileSystem{}, err
	}
	return fileSystem{dev: uint64(st.Dev), free: free, mount: mountPointOf(p)}, nil
}

// mountPointOf is the deepest mount point mountinfo lists at or above p
// ("/" without /proc).
func mountPointOf(p string) string {
	best := "/"
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return best
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) <= 4 {
			continue
		}
		m := unescapeMount(f[4])
		if (p == m || strings.HasPrefix(p, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// isMountPoint says whether directory p is a mount point: it is on
// another device than its parent, or /proc/self/mountinfo lists it (a
// bind mount of the same file system).
func isMountPoint(p string) (bool, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return false, err
	}
	var st, parent syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return false, nil
	}
	if err := syscall.Lstat(filepath.Dir(p), &parent); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: filepath.Dir(p), Err: err}
	}
	if st.Dev != parent.Dev {
		return true, nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, nil // no /proc: the device test is all there is
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID parent major:minor root mount-point ...; octal escapes (\040).
		if f := strings.Fields(line); len(f) > 4 && unescapeMount(f[4]) == p {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// clearDir removes every entry of directory p and keeps p.
func clearDir(p string) error {
	ents, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(p, e.Name())); err != nil {
			return err
		}
	}
	return fsutil.SyncDir(p)
}
