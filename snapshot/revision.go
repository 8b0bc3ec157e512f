package snapshot

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/etcd/server/v3/storage/mvcc"
)

// Revision is an etcd revision: main revision and sub-revision.
type Revision = mvcc.Revision

// Revision key lengths in the `key` bucket: 8-byte big-endian main, '_',
// 8-byte big-endian sub, and an optional 't' tombstone mark.
const (
	revKeyLen       = 17
	markedRevKeyLen = 18
)

// ParseRevisionKey parses a `key` bucket key without panicking (mvcc's own
// parser panics on malformed input; a snapshot file is untrusted input).
func ParseRevisionKey(b []byte) (rev Revision, tombstone bool, err error) {
	switch {
	case len(b) != revKeyLen && len(b) != markedRevKeyLen:
		return rev, false, fmt.Errorf("malformed revision key %x: length %d, want 17 or 18", b, len(b))
	case b[8] != '_':
		return rev, false, fmt.Errorf("malformed revision key %x: no '_' separator", b)
	case len(b) == markedRevKeyLen && b[17] != 't':
		return rev, false, fmt.Errorf("malformed revision key %x: unknown mark %q", b, b[17])
	}
	// mvcc's parser panics on negative numbers: check them first.
	if int64(binary.BigEndian.Uint64(b[0:8])) < 0 || int64(binary.BigEndian.Uint64(b[9:17])) < 0 {
		return rev, false, fmt.Errorf("malformed revision key %x: negative revision", b)
	}
	bk := mvcc.BytesToBucketKey(b)
	if bk.Main == 0 {
		return rev, false, fmt.Errorf("malformed revision key %x: main revision 0", b)
	}
	return bk.Revision, mvcc.IsTombstone(b), nil
}

// RevisionKey returns the 17-byte `key` bucket key of rev.
func RevisionKey(rev Revision) []byte {
	return mvcc.RevToBytes(rev, mvcc.NewRevBytes())
}

// RevisionString formats a revision the way errors in this project show it.
func RevisionString(rev Revision) string {
	return fmt.Sprintf("%d_%d", rev.Main, rev.Sub)
}

// TombstoneKey returns the 18-byte `key` bucket key of a deletion at rev:
// the revision key and etcd's 't' mark.
func TombstoneKey(rev Revision) []byte {
	return append(RevisionKey(rev), 't')
}
