package nodeops

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// How a path was backed up.
const (
	// Copied: a copy is in the backup; the path itself was then changed.
	Copied = "copied"
	// Moved: the path was renamed into the backup (the etcd data dir).
	Moved = "moved"
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

// Record is backup.json: what apply replaced and how far it got. It is
// written after every step, so a second run resumes and never backs up
// the new files over the old ones.
type Record struct {
	Node         string    `json:"node"`
	Bundle       string    `json:"bundle"`
	ReportSHA256 string    `json:"reportSHA256"`
	Created      time.Time `json:"created"`
	Entries      []Entry   `json:"entries"`
	// Done are the steps finished, by name.
	Done map[string]bool `json:"done"`
}

// RecordFile is the backup's record, in the backup directory.
const RecordFile = "backup.json"

// backupDir is the bundle's backup directory on this node (host path):
// one per node and bundle, so a second bundle never mixes with the first.
func backupDir(node, reportSum string) string {
	return filepath.Join(BackupRoot, node+"-"+reportSum[:12])
}

// loadRecord reads backup.json; nil when there is none.
func (h *host) loadRecord(dir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(h.path(dir), RecordFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	if r.Done == nil {
		r.Done = map[string]bool{}
	}
	return &r, nil
}

// saveRecord writes backup.json through a temporary file.
func (h *host) saveRecord(dir string, r *Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	p := filepath.Join(h.path(dir), RecordFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
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
	os.RemoveAll(dst) // a copy a dead run left half done
	if err := copyTree(h.path(p), dst); err != nil {
		return fmt.Errorf("backing up %s: %w", p, err)
	}
	n, err := treeSize(dst)
	if err != nil {
		return err
	}
	r.Entries = append(r.Entries, Entry{Path: p, How: Copied, Backup: name, Bytes: n})
	h.logf("backup", "copied %s to %s (%d bytes)", p, filepath.Join(dir, name), n)
	return nil
}

// backupMove moves host path p into the backup directory and records it.
func (h *host) backupMove(dir string, r *Record, p string) error {
	if absent, err := h.recordAbsent(r, p); absent || err != nil {
		return err
	}
	n, err := treeSize(h.path(p))
	if err != nil {
		return err
	}
	name := backupName(p)
	if err := moveTree(h.path(p), filepath.Join(h.path(dir), name)); err != nil {
		return fmt.Errorf("moving %s aside: %w", p, err)
	}
	r.Entries = append(r.Entries, Entry{Path: p, How: Moved, Backup: name, Bytes: n})
	h.logf("backup", "moved %s to %s (%d bytes)", p, filepath.Join(dir, name), n)
	return nil
}
