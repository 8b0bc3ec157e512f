// Package bench measures snapshift against the floor of what any offline snapshot rewrite must
// cost, on generated snapshots (internal/gen) of named sizes.
//
// For each size, every case runs as a child process, in rounds (each round runs every case once,
// so that drift of the machine over time hits all cases alike):
//
//	floor              a plain copy of every bucket through snapshot.Writer (FloorCopy): bounded
//	                   transactions of 32 MiB, NoSync, FillPercent 1.0 on `key`, one fsync at the
//	                   end, sha256 trailer
//	transform          snapshift transform without rules
//	transform-migrate  snapshift transform with the seed migration (service and pod CIDR)
//	plan-migrate       snapshift plan of the same
//	restore            snapshift restore of transform-migrate's output (default revision bump)
//	etcdutl-restore    etcd's own restore (etcdutl/v3/snapshot) of the same file, same settings
//
// Per case it reports the median wall time, the median over rounds of the ratio to the floor of
// the same round, throughput, the child's peak RSS (getrusage) and its peak RssAnon (sampled from
// /proc/<pid>/status every 50 ms; unlike RSS it leaves out the mapped file pages that bbolt's mmap
// brings in, which the kernel can drop at will).
//
// The page cache cannot be dropped without privileges, so each size's input is read once before
// the first timed run: every case starts with a warm input.
package bench
