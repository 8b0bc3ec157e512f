package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/option"
)

// DirPerm is the mode of a manifest directory WriteWith creates (kubeadm's).
const DirPerm os.FileMode = 0o700

// WriteOptions says where and how WriteWith writes.
type WriteOptions struct {
	// Dir is the manifest directory to write. Required. Created (0700) when
	// missing.
	Dir string
	// Force replaces a file that differs from what was read: a manifest the
	// set did not read from this file (generated, or read elsewhere), or one
	// changed on disk since Read. Without it only a file still holding the
	// manifest's original bytes is replaced. Replaced files are kept as
	// backups either way.
	Force bool
	// BackupDir is where replaced files are kept, as <file>.bak, .bak.1, ...
	// Default: beside the file. kubelet loads every file of its static Pod
	// directory whose name does not start with a dot, backups included (the
	// later of two Pods with the same name is dropped with a warning event,
	// so the new manifest wins); a BackupDir outside the manifest directory
	// avoids that.
	BackupDir string
}

// WriteResult is what WriteWith did, for the report.
type WriteResult struct {
	Dir   string        `json:"dir"`
	Files []WrittenFile `json:"files"`
}

// Written lists the paths written.
func (r WriteResult) Written() []string {
	var out []string
	for _, f := range r.Files {
		if !f.Unchanged {
			out = append(out, f.Path)
		}
	}
	return out
}

// WrittenFile is one manifest WriteWith handled.
type WrittenFile struct {
	Component string `json:"component"`
	Path      string `json:"path"`
	// Unchanged: the file already held these bytes; nothing was written.
	Unchanged bool `json:"unchanged,omitempty"`
	// Backup is where the replaced file was kept; empty when the file is
	// new or unchanged.
	Backup string `json:"backup,omitempty"`
	// Mode is the permission bits written, "0600".
	Mode string `json:"mode,omitempty"`
	// Method and Reason are the manifest's Rendering's.
	Method RenderMethod `json:"method"`
	Reason string       `json:"reason,omitempty"`
}

// WriteWith writes every manifest of set into opts.Dir whose file does not
// already hold its bytes: atomically (temporary file, fsync, rename), mode
// 0600, keeping the replaced file as <file>.bak (.bak.1, ... — a backup is
// never overwritten). Everything is rendered and checked before the first
// file is written; on error the result lists what was written before it.
func WriteWith(set *Set, opts WriteOptions) (*WriteResult, error) {
	if opts.Dir == "" {
		return nil, errors.New("manifest directory is required")
	}
	res := &WriteResult{Dir: opts.Dir}
	var jobs []job
	for _, m := range set.Manifests {
		r, err := m.Render()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FileName(m.Component), err)
		}
		path := filepath.Join(opts.Dir, FileName(m.Component))
		cur, exist, err := readExisting(path)
		if err != nil {
			return nil, err
		}
		switch {
		case exist && bytes.Equal(cur, r.Data):
			jobs = append(jobs, job{m: m, path: path, r: r, unchanged: true})
			continue
		case exist && !opts.Force && m.Original == nil:
			return nil, option.Errorf("Force", "%s %w and was not read into this set (use {} to replace it; it is kept as a backup)", path, fsutil.ErrExists)
		case exist && !opts.Force && !bytes.Equal(cur, m.Original):
			return nil, option.Errorf("Force", "%s %w and differs from the manifest that was read (changed since, or another file; use {} to replace it)", path, fsutil.ErrExists)
		}
		jobs = append(jobs, job{m: m, path: path, r: r, exist: exist})
	}
	if slices.ContainsFunc(jobs, func(j job) bool { return !j.unchanged }) {
		if err := os.MkdirAll(opts.Dir, DirPerm); err != nil {
			return nil, fmt.Errorf("creating manifest directory: %w", err)
		}
		if opts.BackupDir != "" {
			if err := os.MkdirAll(opts.BackupDir, DirPerm); err != nil {
				return nil, fmt.Errorf("creating backup directory: %w", err)
			}
		}
	}
	return writeSet(res, jobs, opts)
}

// job is one manifest WriteWith writes, or leaves as it is.
type job struct {
	m         *Manifest
	path      string
	r         Rendering
	exist     bool
	unchanged bool
}

// writeSet writes the manifests of jobs that change as one staged set.
func writeSet(res *WriteResult, jobs []job, opts WriteOptions) (*WriteResult, error) {
	// One staged set: every manifest written whole under a temporary name,
	// then renamed back to back, kube-apiserver's last (its new flags are
	// what the others' follow; until it is renamed the old apiserver runs
	// with the old set's ranges). res lists the files in the set's order.
	var files []fsutil.SetFile
	var at []int // res.Files index of each file
	for _, j := range jobs {
		f := WrittenFile{Component: j.m.Component, Path: j.path, Unchanged: j.unchanged, Method: j.r.Method, Reason: j.r.Reason}
		if !j.unchanged {
			f.Mode = fmt.Sprintf("%04o", ManifestPerm)
			files = append(files, fsutil.SetFile{Path: j.path, Data: j.r.Data, Perm: ManifestPerm, BackupDir: opts.BackupDir})
			at = append(at, len(res.Files))
		}
		res.Files = append(res.Files, f)
	}
	if last := slices.IndexFunc(files, func(f fsutil.SetFile) bool { return filepath.Base(f.Path) == FileName(KubeAPIServer) }); last >= 0 {
		files = append(slices.Delete(slices.Clone(files), last, last+1), files[last])
		at = append(slices.Delete(slices.Clone(at), last, last+1), at[last])
	}
	n, err := fsutil.WriteSet(files)
	renamed := map[int]bool{}
	for i := range files[:n] {
		res.Files[at[i]].Backup = files[i].Backup
		renamed[at[i]] = true
	}
	if err != nil {
		// The result lists what is in place: the unchanged and renamed files.
		kept := res.Files[:0]
		for i, f := range res.Files {
			if f.Unchanged || renamed[i] {
				kept = append(kept, f)
			}
		}
		res.Files = kept
		return res, fmt.Errorf("writing %s: %w", opts.Dir, err)
	}
	return res, nil
}

// readExisting reads path when it exists; it fails when path is not a
// regular file.
func readExisting(path string) ([]byte, bool, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s exists and is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	return data, err == nil, err
}
