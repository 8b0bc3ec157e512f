#!/usr/bin/env bash
# Builds the etcd server and etcdutl at one version into $CACHE/etcd-<version>/,
# once: hack/build-etcd.sh [VERSION]. Without VERSION, the version go.mod
# requires (TestNodeApplyRollback and TestSeparateRestoresAgree start real etcd
# members from it); with one, e.g. v3.5.35, an older etcd of the version matrix
# (e2e/matrix_test.go: members snapshift restores boot and serve on every etcd
# a user runs, each with its own bbolt).
#
# The main packages are go.etcd.io/etcd/server/v3 (the server: a main package in
# 3.5, 3.6 and 3.7 alike; 3.5's go.etcd.io/etcd/v3 root module is not published
# past v3.5.11 and only wraps server/v3/etcdmain) and go.etcd.io/etcd/etcdutl/v3.
# go.sum lacks their command-line dependencies (cobra...), so they are built in
# a small module of their own, as build-k8s.sh does for kubernetes; a lock keeps
# two concurrent runs from building the same version twice.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:-$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)}
case $ver in v3.*) ;; *) echo "build-etcd.sh: $ver is not an etcd v3 version (e.g. v3.5.35)" >&2; exit 2 ;; esac
cache=${SNAPSHIFT_E2E_CACHE:-$HOME/.cache/snapshift-e2e}
out="$cache/etcd-$ver"
built() { [ -x "$out/etcd" ] && [ -x "$out/etcdutl" ]; }
if built; then
  echo "[e2e] etcd $ver: cached in $out"
  exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.build-etcd-$ver.lock"
if ! flock -n 9; then
  echo "[e2e] etcd $ver: another build is running; waiting for it"
  flock 9
fi
if built; then
  echo "[e2e] etcd $ver: cached in $out"
  exit 0
fi
work=$(mktemp -d "$cache/.build-etcd-$ver.XXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'module snapshift.local/etcdbuild\n\ngo 1.25\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 %s\n\tgo.etcd.io/etcd/etcdutl/v3 %s\n)\n' "$ver" "$ver" > go.mod
printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "go.etcd.io/etcd/etcdutl/v3"\n\t_ "go.etcd.io/etcd/server/v3"\n)\n' > tools.go
echo "[e2e] etcd $ver: building etcd and etcdutl"
start=$(date +%s)
go mod tidy >/dev/null
mkdir -p "$out"
for b in etcd:go.etcd.io/etcd/server/v3 etcdutl:go.etcd.io/etcd/etcdutl/v3; do
  name=${b%%:*}
  if [ ! -x "$out/$name" ]; then
    go build -o "$out/$name.tmp" "${b#*:}"
    mv "$out/$name.tmp" "$out/$name"
  fi
done
echo "[e2e] etcd $ver: built into $out in $(($(date +%s) - start)) s (bbolt $(go list -m -f '{{.Version}}' go.etcd.io/bbolt))"
