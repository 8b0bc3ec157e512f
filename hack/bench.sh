#!/usr/bin/env bash
# Benchmarks snapshift on generated etcd snapshots against the floor (a plain copy through the same writer) and
# etcdutl's own restore: `make bench` runs this. Extra arguments go to snapbench, e.g.
#
#   hack/bench.sh --sizes small --runs 1      # smoke, under a minute
#   hack/bench.sh --keep                      # keep every output in the cache's work dir
#
# Environment: SIZES (default small,medium,large; xlarge is 1M keys, over 3 GiB), PROFILES (default
# basic,churn,services: the generator's profiles), RUNS (default 3), BENCH_CACHE (default .bench;
# generated snapshots are kept there and reused), BENCH_OUT (default $BENCH_CACHE/results.json),
# ORDER_SEED (the cases' random order; default from the clock, printed), COLD (default true: as
# root, also measure every case with the page cache dropped before it; false: warm only), CGROUP
# (default false; true: as root on cgroup v1, also run snapshift's cases and etcd's restore, cold,
# inside a 1 GiB memory cgroup), CASES (default all; e.g. floor-bbolt,cp+sha256sum,plan-migrate,
# restore-migrate,etcdutl-restore), SHARED_CACHE (default ~/.cache/snapshift-bench: where the ~8 GiB
# xxlarge input is generated once and kept, outside the clone), KEEP_FREE_GIB (default 1: refuse a
# size that would leave less free disk; a size keeps its input and two outputs at a time), SNAPSHIFT
# (the snapshift binary to measure; make bench gives its stamped bin/snapshift; default: snapbench
# builds an unstamped copy into the cache, never into bin/).
#
#   SIZES=xxlarge CGROUP=true bash hack/bench.sh   # etcd's 8 GiB ceiling, warm, cold and in 1 GiB
# The table goes to stdout, progress to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${BENCH_CACHE:-.bench}
exec go run ./cmd/snapbench --sizes "${SIZES:-small,medium,large}" --profiles "${PROFILES:-basic,churn,services}" --runs "${RUNS:-3}" \
  --cache "$cache" --out "${BENCH_OUT:-$cache/results.json}" --cold="${COLD:-true}" --cgroup="${CGROUP:-false}" \
  --keep-free-gib "${KEEP_FREE_GIB:-1}" ${CASES:+--cases "$CASES"} ${SNAPSHIFT:+--snapshift "$SNAPSHIFT"} ${SHARED_CACHE:+--shared-cache "$SHARED_CACHE"} ${ORDER_SEED:+--order-seed "$ORDER_SEED"} "$@"
