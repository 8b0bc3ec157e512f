// Package fsutil holds the small file-system disciplines every snapshift
// output follows (DESIGN decision 23, the crash model): write to a
// temporary name in the target directory that says which process wrote it
// (temp.go), fsync everything, then rename (never over an existing output
// unless told to: RENAME_NOREPLACE) and fsync the parent (publish.go);
// write a set of files whole before renaming them back to back (set.go);
// find and remove what dead runs left (leftovers.go). The failpoints of
// the crash suite are in failpoints.go.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrExists is wrapped when an output exists and force was not given.
var ErrExists = errors.New("already exists")

// ErrOutputDir is wrapped when an output's directory does not exist, is
// not a directory or cannot be written: a path the user gave that cannot
// hold the output (the CLI's exit 2), found before any work.
var ErrOutputDir = errors.New("cannot hold the output")

// CheckNew fails when path exists and force is false. It also fails when
// path's directory does not exist or cannot be written (ErrOutputDir), so
// that a long run does not end with a rename into nowhere.
func CheckNew(path string, force bool) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return outputDirError{fmt.Errorf("output directory %s does not exist: create it first (mkdir -p %s)", dir, dir)}
	case err != nil:
		return outputDirError{fmt.Errorf("output directory %s: %w", dir, err)}
	case !st.IsDir():
		return outputDirError{fmt.Errorf("output directory %s is not a directory", dir)}
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return outputDirError{fmt.Errorf("output directory %s is not writable (%w): choose another, or run as a user who may write there", dir, err)}
	}
	if _, err := os.Lstat(path); err == nil {
		if !force {
			return fmt.Errorf("%s %w (use --force to replace it)", path, ErrExists)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// outputDirError is an ErrOutputDir with its own message.
type outputDirError struct{ error }

func (e outputDirError) Unwrap() error        { return e.error }
func (e outputDirError) Is(target error) bool { return target == ErrOutputDir }

// WriteFile writes data to path atomically (temp, fsync, rename) with perm.
func WriteFile(path string, data []byte, perm os.FileMode, force bool) error {
	if err := CheckNew(path, force); err != nil {
		return err
	}
	f, err := CreateTemp(path, perm)
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	FailpointBeforeFsync()
	if err := f.Sync(); err != nil {
		return err
	}
	FailpointAfterFsync()
	if err := f.Close(); err != nil {
		return err
	}
	if err := Publish(tmp, path, force); err != nil {
		return err
	}
	ok = true
	return nil
}

// IsEmptyOrMissingDir reports whether dir does not exist or is an empty directory.
func IsEmptyOrMissingDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(entries) == 0, nil
}

// maxBackups bounds the .bak, .bak.1, ... names tried.
const maxBackups = 1000

// IsDir reports whether path is a directory (false when it cannot be
// read): a message's way to tell "is a directory" from other read errors.
func IsDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// BackupName is the n-th backup name of path: path.bak, path.bak.1, ...
func BackupName(path string, n int) string {
	if n == 0 {
		return path + ".bak"
	}
	return path + ".bak." + strconv.Itoa(n)
}

// Backup keeps the current content of path under the first free backup
// name (in dir, or beside path when dir is empty) and returns that name;
// "" when path does not exist. A backup is never overwritten. It is a hard
// link (the old inode survives the replacing rename, with its mode and
// content); where links are not possible, an atomic copy with the same mode.
func Backup(path, dir string) (string, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if dir == "" {
		dir = filepath.Dir(path)
	}
	base := filepath.Join(dir, filepath.Base(path))
	for n := 0; n < maxBackups; n++ {
		bak := BackupName(base, n)
		err := os.Link(path, bak)
		if err == nil {
			return bak, SyncDir(dir)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if _, serr := os.Lstat(bak); serr == nil {
			continue
		}
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return "", rerr
		}
		if werr := WriteFile(bak, data, st.Mode().Perm(), false); werr != nil {
			if errors.Is(werr, ErrExists) {
				continue
			}
			return "", werr
		}
		return bak, nil
	}
	return "", fmt.Errorf("%s: %d backups exist already; remove old ones", base, maxBackups)
}
