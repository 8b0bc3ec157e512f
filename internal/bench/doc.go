// Package bench measures snapshift against the floor of what any offline snapshot rewrite must
// cost, on generated snapshots (internal/gen) of named sizes.
//
// For each size, every case runs as a child process, in rounds (each round runs every case once,
// so that drift of the machine over time hits all cases alike), in a random order shuffled anew for
// every round (Config.OrderSeed, printed, repeats it), warm (the case's input read just before it)
// and, where the page cache can be dropped (root), cold (dropped just before it):
//
//	floor              a plain copy of every bucket through snapshot.Writer (FloorCopy): the `key`
//	                   bucket's pages laid out in key order, the other buckets in one bbolt
//	                   transaction, one fsync at the end, sha256 trailer
//	transform          snapshift transform without rules
//	transform-migrate  snapshift transform with the seed migration (service and pod CIDR)
//	plan-migrate       snapshift plan of the same
//	restore            snapshift restore of transform-migrate's output (default revision bump)
//	etcdutl-restore    etcd's own restore (etcdutl/v3/snapshot) of the same file, same settings
//	floor-bbolt        the independent floor: the same copy through bbolt's own Put in 16 MiB
//	                   transactions, no snapshift code (BboltFloorCopy)
//	cp+sha256sum       the physical limit: cp of the input, fsync of the copy, sha256sum of the input
//
// Config.Cases runs a subset. Config.Cgroup adds a third mode, cgroup: snapshift's cases and
// etcd's restore, cold, each inside a fresh cgroup v1 memory cgroup of Config.CgroupLimit (1 GiB),
// reported as succeeded, OOM-killed, mmap failure or not finished in Config.CgroupTimeout. Inputs
// of SharedFromKeys keys and more (xxlarge, ~8 GiB) are generated into Config.SharedCache, outside
// the clone, once; a size that would leave less than Config.KeepFree free is refused.
//
// Per case and mode it reports the median wall time, the median over rounds of the ratio to the
// floor of the same round and mode, throughput, the child's user and sys time and major faults
// (getrusage), its peak RSS and its peak RssAnon (sampled from /proc/<pid>/status every 50 ms;
// unlike RSS it leaves out the mapped file pages that bbolt's mmap brings in, which the kernel can
// drop at will). Issues 28's and 39's targets are printed met or NOT met per mode, each ratio
// taken against the baseline measured in the same round and mode.
package bench
