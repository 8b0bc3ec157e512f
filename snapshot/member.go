package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
)

// MemberDB is the database of the member data dir dataDir.
func MemberDB(dataDir string) string { return filepath.Join(dataDir, "member", "snap", "db") }

// MemberWALDir is the member's WAL dir: walDir if set, else the data dir's.
func MemberWALDir(dataDir, walDir string) string {
	if walDir != "" {
		return walDir
	}
	return filepath.Join(dataDir, "member", "wal")
}

// CheckMemberDataDir refuses a data dir that is missing, is no directory or
// holds no member/ directory: it is no member data dir at all, an
// InputError (ErrInvalidInput) as a file that is no snapshot is, where
// CheckMemberDirs's problems are those of a damaged member.
func CheckMemberDataDir(dataDir string) error {
	st, err := os.Stat(dataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &InputError{What: "data dir", Path: dataDir, Problem: "does not exist"}
	case err != nil:
		return fmt.Errorf("data dir %s: %w", dataDir, err)
	case !st.IsDir():
		return &InputError{What: "data dir", Path: dataDir, Problem: "is a file, not a member's data dir (a snapshot file is verify's argument, not --data-dir)"}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "member")); errors.Is(err, fs.ErrNotExist) {
		return &InputError{What: "data dir", Path: dataDir, Problem: "holds no member directory: it is no etcd data dir (give the directory etcd's --data-dir names)"}
	}
	return nil
}

// CheckMemberDirs checks a member data dir's layout as etcd expects it at
// boot: member/snap/db a regular file, the WAL dir holding .wal files. It
// returns what is missing or wrong, one sentence each.
func CheckMemberDirs(dataDir, walDir string) []string {
	var probs []string
	if st, err := os.Stat(MemberDB(dataDir)); errors.Is(err, fs.ErrNotExist) {
		probs = append(probs, fmt.Sprintf("no database %s", MemberDB(dataDir)))
	} else if err != nil {
		probs = append(probs, fmt.Sprintf("no database: %v", err))
	} else if !st.Mode().IsRegular() {
		probs = append(probs, fmt.Sprintf("%s is not a regular file", MemberDB(dataDir)))
	}
	dir := MemberWALDir(dataDir, walDir)
	if names, err := filepath.Glob(filepath.Join(dir, "*.wal")); err != nil || len(names) == 0 {
		probs = append(probs, fmt.Sprintf("no WAL file in %s", dir))
	}
	return probs
}

// MemberWAL is what a member's WAL holds after its newest snapshot entry.
type MemberWAL struct {
	// SnapshotIndex and SnapshotTerm are the newest snapshot entry's.
	SnapshotIndex uint64 `json:"snapshotIndex"`
	SnapshotTerm  uint64 `json:"snapshotTerm"`
	// Commit is the raft hard state's commit index; Entries the entries
	// after the snapshot.
	Commit  uint64 `json:"commit"`
	Entries int    `json:"entries"`
}

// ReadMemberWAL reads a WAL dir with etcd's own wal package, as etcd does
// at boot: its valid snapshot entries, then, from the newest, every record
// (CRCs and the metadata checked: wal.Verify), then the entries (ReadAll).
func ReadMemberWAL(walDir string) (*MemberWAL, error) {
	lg := zap.NewNop()
	snaps, err := wal.ValidSnapshotEntries(lg, walDir)
	if err != nil {
		return nil, fmt.Errorf("WAL %s: %w", walDir, err)
	}
	if len(snaps) == 0 {
		return nil, fmt.Errorf("WAL %s: no snapshot entry", walDir)
	}
	last := snaps[len(snaps)-1]
	if _, err := wal.Verify(lg, walDir, last); err != nil {
		return nil, fmt.Errorf("WAL %s: %w", walDir, err)
	}
	w, err := wal.OpenForRead(lg, walDir, last)
	if err != nil {
		return nil, fmt.Errorf("WAL %s: %w", walDir, err)
	}
	defer w.Close()
	_, hs, ents, err := w.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("WAL %s: %w", walDir, err)
	}
	return &MemberWAL{SnapshotIndex: last.GetIndex(), SnapshotTerm: last.GetTerm(), Commit: hs.GetCommit(), Entries: len(ents)}, nil
}

// TxCheck runs bbolt's own Tx.Check on the database at path (read-only),
// after CheckStructure's guarded walk of every page found nothing: Tx.Check
// walks the pages in a goroutine of its own, where a corrupt page would
// panic beyond recover. It returns at most max problems.
func TxCheck(path string, max int) (problems []string, err error) {
	s, err := Open(path, OpenOptions{AllowNoTrailer: true, Hash: HashTrailerOnly})
	if err != nil {
		return nil, err
	}
	probs, err := s.CheckStructure(max)
	s.Close()
	if err != nil || len(probs) > 0 {
		return probs, err
	}
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, &InputError{Path: path, Problem: "bbolt cannot open it", Err: err}
	}
	defer db.Close()
	defer guard(path, &err, debug.SetPanicOnFault(true))
	err = db.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			if len(problems) < max {
				problems = append(problems, cerr.Error())
			}
		}
		return nil
	})
	return problems, err
}
