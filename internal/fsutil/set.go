package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
)

// SetFile is one file of a set that must change together (a key and its
// certificate; the static-pod manifests of one control plane).
type SetFile struct {
	Path string
	Data []byte
	Perm os.FileMode
	// BackupDir is where an existing file is kept (see Backup); "" beside
	// it.
	BackupDir string
	// Backup is set by WriteSet: the replaced file's backup, "" if none.
	Backup string
}

// WriteSet writes a staged set: every file complete under a temporary name
// beside its path and fsynced, then each existing file kept as a backup,
// then the renames back to back in the order given (callers put last the
// file whose change the others depend on: kube-apiserver's manifest), then
// every directory fsynced. A run killed before the first rename leaves
// the old set and temporaries the next run removes; one killed during the
// renames leaves some files new and the old ones in their backups: running
// the same command again finishes it. It returns how many files were
// renamed into place; a failed directory fsync after them is an
// ErrNotDurable.
func WriteSet(files []SetFile) (int, error) {
	tmps := make([]string, len(files))
	defer func() {
		for _, t := range tmps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	for i, f := range files {
		tmp, err := writeTemp(f.Path, f.Data, f.Perm)
		if err != nil {
			return 0, fmt.Errorf("writing %s: %w", f.Path, err)
		}
		tmps[i] = tmp
	}
	for i := range files {
		bak, err := Backup(files[i].Path, files[i].BackupDir)
		if err != nil {
			return 0, fmt.Errorf("backing up %s: %w", files[i].Path, err)
		}
		files[i].Backup = bak
	}
	var dirs []string
	for i, f := range files {
		if i > 0 {
			FailpointBetweenRenames()
		}
		failpointBeforeRename()
		if err := os.Rename(tmps[i], f.Path); err != nil {
			return i, err
		}
		tmps[i] = ""
		if d := filepath.Dir(f.Path); len(dirs) == 0 || dirs[len(dirs)-1] != d {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if err := syncPublished(d, d); err != nil {
			return len(files), err
		}
	}
	return len(files), nil
}

// writeTemp writes data to a new temporary file beside path and fsyncs it.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := CreateTemp(path, perm)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		FailpointBeforeFsync()
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	FailpointAfterFsync()
	return f.Name(), nil
}
