#!/usr/bin/env bash
# make lab-clean: removes what a killed `make lab` left: stops its daemons by
# their recorded PIDs, kills what remains of each node by PID, removes the
# cgroup roots, mounts, network namespaces and $LAB_ROOT.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/lab/lib.sh
lab_clean
rm -rf "$LAB_ROOT"
echo "[lab] clean"
