#!/usr/bin/env bash
# make lab-window (issue 48): the downtime window's table and timelines again,
# from the probes a lab run kept (out/lab-<cell>/logs/probes; LAB_CELL, else
# every cell that has them), without running the lab. Writes
# out/lab-<cell>/logs/window/ (window.json, window.md, one SVG and PNG per
# migration and rollback) and prints the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
. hack/lab/versions.sh
mkdir -p "$LAB_BIN/tools"
(cd hack/lab/tools && CGO_ENABLED=0 go build -trimpath -o "$LAB_BIN/tools/" ./window)
found=0
for d in out/lab-${LAB_CELL:-*}/logs/probes; do
  [ -f "$d/phases.jsonl" ] || continue
  found=1
  echo "== ${d%/logs/probes}"
  "$LAB_BIN/tools/window" -dir "$d" -out "$(dirname "$d")/window"
done
[ $found = 1 ] || { echo "no lab run has left probes in out/lab-*/logs/probes: run make lab first" >&2; exit 1; }
