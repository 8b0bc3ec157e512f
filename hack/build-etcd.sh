#!/usr/bin/env bash
# Builds the etcd server binary at the version go.mod requires
# (go.etcd.io/etcd/server/v3's main package) into $CACHE/etcd-<version>/, once:
# TestNodeApplyRollback starts real etcd members from the command lines of the
# static-pod manifests `snapshift node apply` installs. go.sum lacks the
# server's command-line dependencies (cobra...), so it is built in a small
# module of its own, as build-k8s.sh does for kubernetes.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
cache=${SNAPSHIFT_E2E_CACHE:-$HOME/.cache/snapshift-e2e}
out="$cache/etcd-$ver"
if [ -x "$out/etcd" ]; then
  echo "[e2e] etcd $ver: cached in $out"
  exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-etcd-$ver.XXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'module snapshift.local/etcdbuild\n\ngo 1.25\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ver" > go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
echo "[e2e] etcd $ver: building"
go mod tidy >/dev/null
mkdir -p "$out"
go build -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$out/etcd.tmp" "$out/etcd"
echo "[e2e] etcd $ver: built into $out"
