package fsutil

// Failpoints (etcd's gofail): the comments below become code only in the
// binary `make failpoints` builds; in every other build these functions
// are empty. Each is triggered by name, e.g.
// GOFAIL_FAILPOINTS='fsutilBeforeRename=2*off->panic("crash")'.

// failpointTempCreated runs after each temporary file or directory is
// created.
func failpointTempCreated() {
	// gofail: var fsutilTempCreated struct{}
}

// failpointBeforeFsync and failpointAfterFsync run around each fsync of a
// file or directory about to be published.
func failpointBeforeFsync() {
	// gofail: var fsutilBeforeFsync struct{}
}

func failpointAfterFsync() {
	// gofail: var fsutilAfterFsync struct{}
}

// failpointBeforeRename runs before each publishing rename.
func failpointBeforeRename() {
	// gofail: var fsutilBeforeRename struct{}
}

// failpointBeforeParentSync and failpointAfterParentSync run around the
// fsync of a published path's parent, after the rename.
func failpointBeforeParentSync() {
	// gofail: var fsutilBeforeParentSync struct{}
}

func failpointAfterParentSync() {
	// gofail: var fsutilAfterParentSync struct{}
}

// FailpointBetweenRenames runs between two renames of a staged set
// (certificates, manifests, a WAL dir and its data dir).
func FailpointBetweenRenames() {
	// gofail: var fsutilBetweenRenames struct{}
}

// FailpointBetweenMembers runs between the publishing of two members of a
// multi-member restore (rebuild's data dirs).
func FailpointBetweenMembers() {
	// gofail: var fsutilBetweenMembers struct{}
}
