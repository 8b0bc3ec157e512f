package snapshot

// failpointTxCommitted runs after each bounded write transaction of the
// snapshot writer and of a fused restore's edits (etcd's gofail; compiled
// in only by `make failpoints`). Trigger the N-th with
// GOFAIL_FAILPOINTS='snapshotTxCommitted=N*off->panic("crash")'.
func failpointTxCommitted() {
	// gofail: var snapshotTxCommitted struct{}
}
