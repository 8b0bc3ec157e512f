package nodeops

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/fsutil"
	"github.com/snapshift/snapshift/internal/parseerr"
)

// How a path was backed up.
const (
	// Copied: a copy is in the backup; the path itself was then changed.
	Copied = "copied"
	// Moved: the path was renamed into the backup (the etcd data dir).
	Moved = "moved"
	// MovedContents: the path is a mount point (a dedicated etcd disk),
	// which cannot be renamed: its entries were moved into the backup
	// directory named Backup and the path itself stays. Rollback empties
	// it and copies the entries back (the backup keeps them).
	MovedContents = "moved-contents"
	// Absent: the path did not exist; rollback removes it.
	Absent = "absent"
)

// Entry is one backed-up host path.
type Entry struct {
	// Path is the host path (without the root).
	Path string `json:"path"`
	How  string `json:"how"`
	// Backup is where it is, relative to the backup directory ("" when Absent).
	Backup string `json:"backup,omitempty"`
	Bytes  int64  `json:"bytes"`
}

// Record is backup.json: what apply replaced and how far apply and
// rollback got. It is published (temporary file, fsync, rename, directory
// fsync) after every step, so a run killed at any point is resumed by the
// next one, which never backs up the new files over the old ones.
type Record struct {
	Node         string    `json:"node"`
	Bundle       string    `json:"bundle"`
	ReportSHA256 string    `json:"reportSHA256"`
	Created      time.Time `json:"created"`
	Entries      []Entry   `json:"entries"`
	// Steps are apply's steps finished, in the order they finished.
	Steps []Step `json:"steps"`
	// Restored is how many entries rollback has put back (the last
	// entry first).
	Restored int `json:"restored,omitempty"`
	// RolledBack is set once rollback has put every entry back.
	RolledBack bool `json:"rolledBack,omitempty"`
	// Applied is when apply first finished its last step.
	Applied *time.Time `json:"applied,omitempty"`
	// RollbackDeadline is when the node rolls itself back unless
	// confirmed (node apply --rollback-after).
	RollbackDeadline *time.Time `json:"rollbackDeadline,omitempty"`
	// RollbackUnit is the systemd timer that does it, while it is armed
	// (confirm and rollback remove it, then clear this).
	RollbackUnit string `json:"rollbackUnit,omitempty"`
	// Confirmed is when `snapshift node confirm` recorded the migration
	// checked healthy: the deadline no longer rolls back.
	Confirmed *time.Time `json:"confirmed,omitempty"`
}

// RecordFile is the backup's record, in the backup directory.
const RecordFile = "backup.json"

// done says whether step s is recorded as finished.
func (r *Record) done(s Step) bool { return r != nil && slices.Contains(r.Steps, s) }

// finish records step s as finished.
func (r *Record) finish(s Step) {
	if !r.done(s) {
		r.Steps = append(r.Steps, s)
	}
}

// backupDir is the bundle's backup directory on this node (host path):
// one per node and bundle, so a second bundle never mixes with the first.
func backupDir(node, reportSum string) string { return bundle.BackupDir(node, reportSum) }

// loadRecord reads backup.json; nil when there is none.
func (h *host) loadRecord(dir string) (*Record, error) {
	p := filepath.Join(dir, RecordFile)
	if ok, err := exists(h.path(dir)); err != nil || !ok {
		return nil, err
	}
	// A run killed while publishing the record left its temporary file.
	if _, err := fsutil.CleanFor(h.path(p)); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(h.path(p))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r struct {
		Record
		// Done is the record of a snapshift before the steps were typed:
		// step names, "restored <path>" and "rolled-back".
		Done map[string]bool `json:"done"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", p, parseerr.Explain(err))
	}
	for k, v := range r.Done {
		switch {
		case !v:
		case k == "rolled-back":
			r.RolledBack = true
		case strings.HasPrefix(k, "restored "):
			r.Restored++
		default:
			r.finish(Step(k))
		}
	}
	return &r.Record, nil
}

// saveRecord publishes backup.json as every output is published.
func (h *host) saveRecord(dir string, r *Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFile(filepath.Join(h.path(dir), RecordFile), append(b, '\n'), 0o600, true)
}

// backupName is where host path p goes in the backup directory.
func backupName(p string) string {
	return strings.ReplaceAll(strings.Trim(p, "/"), "/", "_")
}

// recordAbsent records host path p as absent if it is, and says whether
// it was: there is nothing to back up then.
func (h *host) recordAbsent(r *Record, p string) (bool, error) {
	ok, err := exists(h.path(p))
	if err != nil {
		return false, err
	}
	if !ok {
		r.Entries = append(r.Entries, Entry{Path: p, How: Absent})
	}
	return !ok, nil
}

// backupCopy copies host path p into the backup directory and records it.
func (h *host) backupCopy(dir string, r *Record, p string) error {
	if absent, err := h.recordAbsent(r, p); absent || err != nil {
		return err
	}
	name := backupName(p)
	dst := filepath.Join(h.path(dir), name)
	if err := os.RemoveAll(dst); err != nil { // a copy a killed run left half done
		return err
	}
	if err := copyExact(h.path(p), dst); err != nil {
		return fmt.Errorf("backing up %s: %w", p, err)
	}
	n, err := treeSize(dst)
	if err != nil {
		return err
	}
	r.Entries = append(r.Entries, Entry{Path: p, How: Copied, Backup: name, Bytes: n})
	h.logf("backup", "copied %s to %s (%s)", p, filepath.Join(dir, name), fsutil.FormatSize(n))
	return nil
}

// backupMove moves host path p into the backup directory and records it.
// A run killed after the rename and before the record left p in the
// backup already: that is recorded as moved, not as absent. When p is a
// mount point its contents are moved instead (backupMoveContents).
func (h *host) backupMove(dir string, r *Record, p string) error {
	name := backupName(p)
	dst := filepath.Join(h.path(dir), name)
	there, err := exists(h.path(p))
	if err != nil {
		return err
	}
	if there {
		mount, err := isMountPoint(h.path(p))
		if err != nil {
			return err
		}
		if mount {
			return h.backupMoveContents(dir, r, p)
		}
	}
	if moved, err := exists(dst); err != nil || (moved && !there) {
		if err == nil {
			n, _ := treeSize(dst)
			r.Entries = append(r.Entries, Entry{Path: p, How: Moved, Backup: name, Bytes: n})
			h.logf("backup", "%s was moved to %s by an earlier run", p, filepath.Join(dir, name))
		}
		return err
	}
	if absent, err := h.recordAbsent(r, p); absent || err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil { // a copy to another file system a killed run left half done
		return err
	}
	n, err := treeSize(h.path(p))
	if err != nil {
		return err
	}
	if err := moveTree(h.path(p), dst); err != nil {
		return fmt.Errorf("moving %s aside: %w", p, err)
	}
	r.Entries = append(r.Entries, Entry{Path: p, How: Moved, Backup: name, Bytes: n})
	h.logf("backup", "moved %s to %s (%s)", p, filepath.Join(dir, name), fsutil.FormatSize(n))
	return nil
}

// backupMoveContents moves every entry of host path p, a mount point
// (renaming it fails with EBUSY), into the backup directory and records p
// as MovedContents. Each entry is copied (another file system), fsynced,
// then removed from p, so a run killed half way is resumed by the next
// one: what is still in p is moved, what is already in the backup stays.
func (h *host) backupMoveContents(dir string, r *Record, p string) error {
	name := backupName(p)
	dst := filepath.Join(h.path(dir), name)
	st, err := os.Stat(h.path(p))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dst, st.Mode().Perm()); err != nil { // p's mode, which rollback puts back
		return err
	}
	ents, err := os.ReadDir(h.path(p))
	if err != nil {
		return err
	}
	for _, e := range ents {
		to := filepath.Join(dst, e.Name())
		if err := os.RemoveAll(to); err != nil { // a copy a killed run left half done
			return err
		}
		if err := moveTree(filepath.Join(h.path(p), e.Name()), to); err != nil {
			return fmt.Errorf("moving %s aside: %w", filepath.Join(p, e.Name()), err)
		}
	}
	if err := fsutil.SyncDir(dst); err != nil {
		return err
	}
	n, err := treeSize(dst)
	if err != nil {
		return err
	}
	r.Entries = append(r.Entries, Entry{Path: p, How: MovedContents, Backup: name, Bytes: n})
	h.logf("backup", "%s is a mount point: moved its contents to %s (%d bytes)", p, filepath.Join(dir, name), n)
	return nil
}

// failpointStepDone runs after each step of apply, and each entry rollback
// puts back, before backup.json records it (etcd's gofail, compiled in
// only by `make failpoints`: the crash suite kills `node apply` and `node
// rollback` there; see fsutil.Crash).
func failpointStepDone() {
	// gofail: var nodeopsStepDone string
	// fsutil.Crash("nodeopsStepDone", nodeopsStepDone)
}
