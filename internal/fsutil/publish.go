package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrNotDurable is wrapped when an output was renamed into place but the
// fsync of its directory failed: it is there now, but a power loss may
// take the rename back.
var ErrNotDurable = errors.New("published, but not durable")

// NotDurableError says which output is in place but not durable.
type NotDurableError struct {
	Path string
	Err  error
}

func (e *NotDurableError) Error() string {
	return fmt.Sprintf("%s is in place, but the fsync of its directory failed (%v): it may not survive a power loss; run sync and check the disk", e.Path, e.Err)
}

func (e *NotDurableError) Unwrap() []error { return []error{ErrNotDurable, e.Err} }

// dirSyncer fsyncs a directory; tests replace it to make an fsync fail.
var dirSyncer = SyncDir

// Publish renames the fully written and fsynced file tmp to path, then
// fsyncs the directory. Without force it never replaces an existing path,
// not even one created by another run since a check
// (renameat2(RENAME_NOREPLACE); where the file system lacks it, link and
// unlink). A failed directory fsync after the rename is a
// *NotDurableError: the output is in place.
func Publish(tmp, path string, force bool) error {
	failpointBeforeRename()
	if err := rename(tmp, path, force, false); err != nil {
		return err
	}
	return syncParent(path)
}

// PublishDir renames the finished directory tmp to path: first every file
// and directory under tmp is fsynced (SyncTree), then tmp is renamed,
// never over an existing path but an empty directory (which is removed
// first), then the parent is fsynced.
func PublishDir(tmp, path string) error {
	if err := SyncTree(tmp); err != nil {
		return err
	}
	if empty, err := IsEmptyOrMissingDir(path); err == nil && empty {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	failpointBeforeRename()
	if err := rename(tmp, path, false, true); err != nil {
		return err
	}
	return syncParent(path)
}

// syncParent fsyncs path's directory after a rename into it.
func syncParent(path string) error {
	return syncPublished(filepath.Dir(filepath.Clean(path)), path)
}

// syncPublished fsyncs dir after what was renamed into it.
func syncPublished(dir, what string) error {
	failpointBeforeParentSync()
	if err := dirSyncer(dir); err != nil {
		return &NotDurableError{Path: what, Err: err}
	}
	failpointAfterParentSync()
	return nil
}

// rename renames from to to; without force it fails with ErrExists when
// to exists.
func rename(from, to string, force, dir bool) error {
	if force {
		return os.Rename(from, to)
	}
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return fmt.Errorf("%s %w (created by another run meanwhile? use --force to replace it)", to, ErrExists)
	case !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS):
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	// No RENAME_NOREPLACE here: a link fails on an existing name.
	if dir {
		if _, err := os.Lstat(to); err == nil {
			return fmt.Errorf("%s %w", to, ErrExists)
		}
		return os.Rename(from, to)
	}
	if err := os.Link(from, to); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w (use --force to replace it)", to, ErrExists)
		}
		return err
	}
	return os.Remove(from)
}

// SyncFile fsyncs the file at path.
func SyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	FailpointBeforeFsync()
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	FailpointAfterFsync()
	return nil
}

// SyncTree fsyncs every regular file and directory under root (root
// included), each directory after everything in it: what a rename of root
// into place publishes is then on disk.
func SyncTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			return SyncFile(p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		FailpointBeforeFsync()
		if err := SyncDir(dirs[i]); err != nil {
			return fmt.Errorf("fsync %s: %w", dirs[i], err)
		}
		FailpointAfterFsync()
	}
	return nil
}

// SyncDir fsyncs a directory so that a rename in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
