package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Leftover is a temporary file or directory a snapshift run left behind.
type Leftover struct {
	Path string `json:"path"`
	// Target is the output it was written for (a path beside it).
	Target string `json:"target"`
	PID    int    `json:"pid"`
	// Live: its writer still runs; it is left alone.
	Live  bool  `json:"live,omitempty"`
	Dir   bool  `json:"dir,omitempty"`
	Bytes int64 `json:"bytes"`
	// HalfPublished: a directory published as the first of a pair (a WAL
	// dir) whose second (the data dir) never followed; it is removed whole.
	HalfPublished bool `json:"halfPublished,omitempty"`
	// Removed is set by a clean that removed it.
	Removed bool `json:"removed,omitempty"`
}

// pendingBase is the target name of the marker a half-published pair holds.
const pendingBase = "pending"

// FindLeftovers lists the temporaries in dir written for target (a base
// name; "" for every target) that are ours: named by a snapshift run,
// owned by this user, a regular file or a directory not writable by
// others. Markers of half-published pairs in dir's subdirectories are
// listed too (as their directory).
func FindLeftovers(dir, target string) ([]Leftover, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil // nothing can be there; the command says why
	}
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		o, ok := parseTemp(e.Name())
		if ok && o.target == pendingBase {
			continue // a pair's marker: listed from the directory above
		}
		if ok && (target == "" || o.target == target) && ours(p) {
			l := Leftover{Path: p, Target: filepath.Join(dir, o.target), PID: o.pid, Live: o.live(), Dir: e.IsDir()}
			l.Bytes = sizeOf(p)
			out = append(out, l)
			continue
		}
		if e.IsDir() && (target == "" || e.Name() == target) && ours(p) {
			if l, ok := halfPublished(p); ok {
				out = append(out, l)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// ours says whether path is a file or directory this user could have
// written as a temporary: owned by us, not a symlink, not writable by
// group or others.
func ours(path string) bool {
	st, err := os.Lstat(path)
	if err != nil || !(st.Mode().IsRegular() || st.IsDir()) || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

func sizeOf(path string) int64 {
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// MarkPending writes a marker into dir, the first of a pair published by
// two renames, naming second, the path the second rename publishes. Until
// ClearPending removes it, a clean after this run died removes dir when
// second is missing or empty (the pair was half published), or just the
// marker when second is there.
func MarkPending(dir, second string) (string, error) {
	abs, err := filepath.Abs(second)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(TempName(filepath.Join(dir, pendingBase), ""), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(abs + "\n")
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), SyncDir(dir)
}

// ClearPending removes a marker MarkPending wrote, once the pair is whole.
func ClearPending(marker string) error {
	if err := os.Remove(marker); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(marker))
}

// halfPublished reports dir as a leftover when it holds a pending marker
// of a dead run.
func halfPublished(dir string) (Leftover, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Leftover{}, false
	}
	for _, e := range entries {
		o, ok := parseTemp(e.Name())
		p := filepath.Join(dir, e.Name())
		if !ok || o.target != pendingBase || e.IsDir() || !ours(p) {
			continue
		}
		l := Leftover{Path: p, Target: dir, PID: o.pid, Live: o.live(), Bytes: sizeOf(p)}
		if empty, _ := IsEmptyOrMissingDir(secondOf(p)); empty {
			l.Path, l.Dir, l.HalfPublished, l.Bytes = dir, true, true, sizeOf(dir)
		}
		return l, true
	}
	return Leftover{}, false
}

func secondOf(marker string) string {
	b, err := os.ReadFile(marker)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// RemoveLeftovers removes the leftovers of dead runs among ls (a live
// writer's are kept) and marks them Removed. It fsyncs the directories it
// removed from.
func RemoveLeftovers(ls []Leftover) error {
	dirs := map[string]bool{}
	for i := range ls {
		l := &ls[i]
		if l.Live {
			continue
		}
		if err := os.RemoveAll(l.Path); err != nil {
			return fmt.Errorf("removing %s: %w", l.Path, err)
		}
		l.Removed = true
		dirs[filepath.Dir(l.Path)] = true
	}
	for d := range dirs {
		if err := SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// CleanFor removes the leftovers of dead runs written for path (beside it,
// and a half-published pair at path itself) and returns every leftover
// found, removed or (a live writer's) kept.
func CleanFor(path string) ([]Leftover, error) {
	path = filepath.Clean(path)
	ls, err := FindLeftovers(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return nil, err
	}
	return ls, RemoveLeftovers(ls)
}

// Summary is one line about leftovers for a user: what was removed, and
// what is kept because its writer still runs. "" when ls is empty.
func Summary(ls []Leftover) string {
	var removed, live []string
	var bytes int64
	for _, l := range ls {
		name := l.Path
		if l.HalfPublished {
			name += " (half published)"
		}
		if l.Removed {
			removed = append(removed, name)
			bytes += l.Bytes
		} else if l.Live {
			live = append(live, fmt.Sprintf("%s (pid %d)", name, l.PID))
		}
	}
	var parts []string
	if len(removed) > 0 {
		parts = append(parts, fmt.Sprintf("removed %d leftover(s) of a killed run (%s): %s", len(removed), FormatSize(bytes), strings.Join(removed, ", ")))
	}
	if len(live) > 0 {
		parts = append(parts, fmt.Sprintf("left alone, a running snapshift is writing them: %s", strings.Join(live, ", ")))
	}
	return strings.Join(parts, "; ")
}

// FindLeftoversUnder lists the leftovers in root and every directory
// under it (not inside the leftovers themselves), as FindLeftovers.
func FindLeftoversUnder(root string) ([]Leftover, error) {
	var out []Leftover
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != root && errors.Is(err, fs.ErrPermission) {
				return fs.SkipDir // not ours to clean
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if _, ok := parseTemp(d.Name()); ok && p != root {
			return fs.SkipDir
		}
		ls, err := FindLeftovers(p, "")
		if err != nil {
			return err
		}
		out = append(out, ls...)
		return nil
	})
	return out, err
}
