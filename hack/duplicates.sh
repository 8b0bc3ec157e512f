#!/usr/bin/env bash
# Counts repeated code the way issue 21 does: the `duplicates` tool (the project's tool library)
# over the NON-TEST Go files only (tracked, and untracked but not ignored), copied into a
# temporary tree. Extra arguments go to duplicates (default: --most 200 --seconds 120).
#
#   hack/duplicates.sh | head -1     # the count
set -euo pipefail
cd "$(dirname "$0")/.."
command -v duplicates >/dev/null || { echo "duplicates is not on PATH (it comes with the project's tool library)" >&2; exit 2; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
{ git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'; } | grep -v '_test\.go$' | sort -u |
  while read -r f; do
    [ -f "$f" ] || continue
    mkdir -p "$tree/$(dirname "$f")"
    cp "$f" "$tree/$f"
  done
cd "$tree"
if [ $# -eq 0 ]; then set -- --most 200 --seconds 120; fi
duplicates "$@"
