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
# root, also measure every case with the page cache dropped before it; false: warm only).
# The table goes to stdout, progress to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${BENCH_CACHE:-.bench}
exec go run ./cmd/snapbench --sizes "${SIZES:-small,medium,large}" --profiles "${PROFILES:-basic,churn,services}" --runs "${RUNS:-3}" \
  --cache "$cache" --out "${BENCH_OUT:-$cache/results.json}" --cold="${COLD:-true}" ${ORDER_SEED:+--order-seed "$ORDER_SEED"} "$@"
