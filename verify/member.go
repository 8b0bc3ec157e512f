package verify

import (
	"context"
	"fmt"

	"github.com/snapshift/snapshift/snapshot"
)

// MemberConfig configures Member.
type MemberConfig struct {
	// Config checks the member's database as a snapshot (Path is set to
	// it, SkipHashCheck and Structure on): the rules' invariants apply.
	Config
	// DataDir is the member data dir. Required.
	DataDir string
	// WALDir is a separate WAL dir (etcd's --wal-dir). Default
	// DataDir/member/wal.
	WALDir string
	// Input is the snapshot the member was restored from. Optional: with
	// it, the member's revision must be at least the input's.
	Input string
	// InputSkipHashCheck accepts an Input without a sha256 trailer.
	InputSkipHashCheck bool
}

// Member checks a restored member data dir the way a backup sidecar (etcd
// -backup-restore's data-dir validation) does before it lets etcd start:
// its layout, the WAL read through etcd's own wal package, the database's
// pages by bbolt's own Tx.Check, the consistent index etcd checks against
// the WAL's snapshot at boot, every check verify makes of a snapshot, and,
// given the input snapshot, a revision at least the input's (a restore
// never goes back in time). A member that cannot be read at all is an
// error (a directory that is missing or holds no member/: an
// snapshot.InputError); failed checks are in the report.
func Member(ctx context.Context, cfg MemberConfig) (*Report, error) {
	if err := snapshot.CheckMemberDataDir(cfg.DataDir); err != nil {
		return nil, err
	}
	c := &checker{r: &Report{Path: cfg.DataDir, OK: true}}
	walDir := snapshot.MemberWALDir(cfg.DataDir, cfg.WALDir)
	if probs := snapshot.CheckMemberDirs(cfg.DataDir, cfg.WALDir); len(probs) > 0 {
		c.add("data dir", probs, "")
		return c.r, nil
	}
	c.add("data dir", nil, "member/snap/db and the WAL in %s", walDir)
	w, err := snapshot.ReadMemberWAL(walDir)
	if err != nil {
		c.add("WAL", []string{err.Error()}, "")
	} else {
		c.add("WAL", nil, "read with etcd's wal package: snapshot at index %d term %d, %d entries after it, commit %d",
			w.SnapshotIndex, w.SnapshotTerm, w.Entries, w.Commit)
	}
	db := snapshot.MemberDB(cfg.DataDir)
	probs, err := snapshot.TxCheck(db, maxProblems)
	if err != nil {
		return nil, err
	}
	c.add("bbolt Tx.Check", probs, "every page of %s", db)
	if len(probs) > 0 {
		return c.r, nil
	}
	sc := cfg.Config
	sc.Path, sc.SkipHashCheck, sc.Structure, sc.JustWritten = db, true, true, false
	r, err := Run(ctx, sc)
	if err != nil {
		return nil, err
	}
	for _, ch := range r.Checks {
		c.add(ch.Name, ch.Problems, "%s", ch.Detail)
	}
	member, meta, err := currentRevision(ctx, db, true)
	if err != nil {
		return nil, err
	}
	if w != nil {
		var p []string
		if meta.ConsistentIndex < w.SnapshotIndex {
			p = append(p, fmt.Sprintf("the database's consistent index %d is below the WAL's snapshot index %d: etcd refuses to start", meta.ConsistentIndex, w.SnapshotIndex))
		}
		c.add("consistent index", p, "%d, the WAL's snapshot at %d", meta.ConsistentIndex, w.SnapshotIndex)
	}
	if cfg.Input != "" {
		in, _, err := currentRevision(ctx, cfg.Input, cfg.InputSkipHashCheck)
		if err != nil {
			return nil, err
		}
		var p []string
		if member < in {
			p = append(p, fmt.Sprintf("the member's revision %d is below the input's %d: clients would see the revision go back", member, in))
		}
		c.add("revision", p, "%d, the input's %d", member, in)
	}
	return c.r, nil
}

// currentRevision is the current revision of the snapshot or database at
// path (what etcd's restore and boot take as it), and its meta.
func currentRevision(ctx context.Context, path string, noTrailer bool) (int64, snapshot.Meta, error) {
	s, err := snapshot.Open(path, snapshot.OpenOptions{AllowNoTrailer: noTrailer})
	if err != nil {
		return 0, snapshot.Meta{}, err
	}
	defer s.Close()
	ix, err := s.Index(ctx, nil)
	if err != nil {
		return 0, snapshot.Meta{}, err
	}
	return ix.CurrentRevision, s.Meta, nil
}
