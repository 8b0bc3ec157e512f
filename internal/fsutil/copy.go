package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CopyOptions say what Copy keeps and how it writes. The zero value
// copies the bytes and the permission bits of regular files and
// directories, refuses anything else, and refuses to write over anything.
type CopyOptions struct {
	// Symlinks copies a symbolic link as a link to the same target;
	// without it a symlink is refused (a tree that should hold only files).
	Symlinks bool
	// KeepOwner keeps every entry's owner and group (only when running as
	// root; otherwise the copy is the caller's).
	KeepOwner bool
	// KeepTimes keeps every file's and directory's modification time.
	KeepTimes bool
	// FileMode, when not zero, is every file's mode instead of the
	// source's; DirMode likewise for directories.
	FileMode, DirMode os.FileMode
	// Merge lets dst and its directories exist already (missing parents
	// of dst are made, DirMode or 0700) and replaces the files it copies;
	// without it dst must not exist and its parent must.
	Merge bool
	// Sync fsyncs every file written (not the directories: a caller that
	// publishes the copy fsyncs them then).
	Sync bool
	// Skip, when set, leaves out a file (not a directory) whose base name
	// it reports true for: a bundle's copy of a certificate directory
	// leaves out its backups.
	Skip func(name string) bool
}

// Copy copies src, a file, a symlink or a directory tree, to dst, as o
// says. What rollback restores and what a bundle holds are copied with
// it, so that one routine decides how a copy keeps what was there.
func Copy(src, dst string, o CopyOptions) error {
	if o.Merge {
		if err := os.MkdirAll(filepath.Dir(dst), o.dirMode(0o700)); err != nil {
			return err
		}
	}
	type dirTime struct {
		path string
		info fs.FileInfo
	}
	var dirs []dirTime // a directory's time is set after its entries are written
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
		if o.Skip != nil && !info.IsDir() && o.Skip(info.Name()) {
			return nil
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if !o.Symlinks {
				return fmt.Errorf("%s is a symlink: refused (only files and directories are copied)", p)
			}
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if o.Merge {
				os.Remove(target)
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case info.IsDir():
			err := os.Mkdir(target, o.dirMode(info.Mode().Perm()))
			if err != nil && !(o.Merge && errors.Is(err, fs.ErrExist)) {
				return err
			}
		case info.Mode().IsRegular():
			if err := o.copyFile(p, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is neither a file, a directory nor a symlink", p)
		}
		if info.IsDir() {
			dirs = append(dirs, dirTime{target, info})
		}
		return o.keep(target, info)
	})
	for i := len(dirs) - 1; i >= 0 && err == nil && o.KeepTimes; i-- {
		err = os.Chtimes(dirs[i].path, dirs[i].info.ModTime(), dirs[i].info.ModTime())
	}
	return err
}

func (o CopyOptions) dirMode(src os.FileMode) os.FileMode {
	if o.DirMode != 0 {
		return o.DirMode
	}
	return src
}

// copyFile writes src's bytes to a new file dst (replaced when merging).
func (o CopyOptions) copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if o.Merge {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	out, err := os.OpenFile(dst, flags, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if o.Sync {
		FailpointBeforeFsync()
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		FailpointAfterFsync()
	}
	return out.Close()
}

// keep gives target the mode, owner and time o asks for (a symlink's
// mode and times are its target's: left alone).
func (o CopyOptions) keep(target string, info fs.FileInfo) error {
	if st, ok := info.Sys().(*syscall.Stat_t); ok && o.KeepOwner && os.Geteuid() == 0 {
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	mode := info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	switch {
	case info.IsDir() && o.DirMode != 0:
		mode = o.DirMode
	case !info.IsDir() && o.FileMode != 0:
		mode = o.FileMode
	}
	if err := os.Chmod(target, mode); err != nil { // past the umask
		return err
	}
	if o.KeepTimes && !info.IsDir() {
		return os.Chtimes(target, info.ModTime(), info.ModTime())
	}
	return nil
}
