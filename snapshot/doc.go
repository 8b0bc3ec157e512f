// Package snapshot is the etcd side of snapshift: it opens an etcd v3
// snapshot file (the bbolt database that `etcdctl snapshot save` writes,
// followed by a 32-byte sha256 trailer) read-only, verifies it, streams the
// live state of its `key` bucket, writes new snapshot files, and restores a
// snapshot into member data directories with etcd's own restore code.
//
// It knows nothing of Kubernetes: values are opaque bytes here.
//
// The live state of a snapshot is, for every user key, the newest revision
// of that key, unless that revision is a tombstone. Open reads the file once
// to check the trailer; Index walks the `key` bucket once to find the newest
// revision of each key; Live walks it again and yields the live entries in
// revision order, without holding values in memory.
package snapshot
