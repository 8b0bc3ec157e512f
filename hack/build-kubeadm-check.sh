#!/usr/bin/env bash
# Builds hack/kubeadmcheck (kubeadm's own join-time checks of existing
# certificates and kubeconfigs, run by e2e/kubeadm_oracle_test.go) from the
# k8s.io/kubernetes module at version $1 into $CACHE/k8s-$1/kubeadm-check,
# once, the way build-k8s.sh builds kubeadm (a build module that replaces
# every staging module with its v0.<minor>.<patch> from the module proxy).
set -euo pipefail
ver=${1:?usage: build-kubeadm-check.sh vX.Y.Z}
src=$(cd "$(dirname "$0")" && pwd)/kubeadmcheck/main.go
cache=${SNAPSHIFT_E2E_CACHE:-$HOME/.cache/snapshift-e2e}
out="$cache/k8s-$ver"
if [ -x "$out/kubeadm-check" ] && [ "$out/kubeadm-check" -nt "$src" ]; then
  echo "[e2e] kubeadm-check $ver: cached in $out"
  exit 0
fi
staging=v0.${ver#v1.}
mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-kubeadm-check-$ver.XXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
gomod=$(go mod download -json "k8s.io/kubernetes@$ver" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
{
  echo "module snapshift.local/kubeadmcheck"
  echo
  sed -n 's/^go \(.*\)/go \1/p' "$gomod" | head -1
  echo
  echo "require k8s.io/kubernetes $ver"
  echo
  grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$gomod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
} > go.mod
grep -v '^//go:build ignore' "$src" > main.go
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
GOFLAGS=-mod=mod go get "k8s.io/kubernetes@$ver" >/dev/null
mkdir -p "$out"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/kubeadm-check.tmp" .
mv -f "$out/kubeadm-check.tmp" "$out/kubeadm-check"
echo "[e2e] kubeadm-check $ver: built into $out"
