package nodeops

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// copyTree copies src (a file, a symlink or a directory) to dst, which
// must not exist, keeping every file's bytes, mode, owner and modification
// time and every symlink's target: what rollback puts back is what was
// there.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case info.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(p, target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is neither a file, a directory nor a symlink", p)
		}
		return keepMeta(target, info)
	})
}

// keepMeta gives target the owner, mode and times of info (the mode and
// times of a symlink are its target's: left alone).
func keepMeta(target string, info fs.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	if err := os.Chmod(target, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	return os.Chtimes(target, info.ModTime(), info.ModTime())
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// moveTree renames src to dst, or copies and removes it when they are on
// different file systems.
func moveTree(src, dst string) error {
	err := os.Rename(src, dst)
	var le *os.LinkError
	if err == nil || !errors.As(err, &le) || !errors.Is(le.Err, syscall.EXDEV) {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		return err
	}
	return os.RemoveAll(src)
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
	tmp := dst + ".snapshift-new"
	os.Remove(tmp)
	if err := copyFile(src, tmp, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := os.Lchown(tmp, 0, 0); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
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
