#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager from the k8s.io/kubernetes
# module at version $1 (e.g. v1.36.3) into $CACHE/k8s-$1/, once. `go install`
# refuses k8s.io/kubernetes because of its replace directives, so this makes a
# small build module that requires it and replaces every staging module
# k8s.io/<name> with k8s.io/<name> v0.<minor>.<patch> from the module proxy.
set -euo pipefail
ver=${1:?usage: build-k8s.sh vX.Y.Z}
cache=${SNAPSHIFT_E2E_CACHE:-$HOME/.cache/snapshift-e2e}
out="$cache/k8s-$ver"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ]; then
  echo "[e2e] kubernetes $ver: cached in $out"
  exit 0
fi
staging=v0.${ver#v1.}
work=$(mktemp -d "$cache/.build-$ver.XXXX" 2>/dev/null || { mkdir -p "$cache"; mktemp -d "$cache/.build-$ver.XXXX"; })
trap 'rm -rf "$work"' EXIT
cd "$work"
gomod=$(go mod download -json "k8s.io/kubernetes@$ver" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
{
  echo "module snapshift.local/k8sbuild"
  echo
  sed -n 's/^go \(.*\)/go \1/p' "$gomod" | head -1
  echo
  echo "require k8s.io/kubernetes $ver"
  echo
  # every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.Y.Z"
  grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$gomod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
} > go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
echo "[e2e] kubernetes $ver: resolving modules"
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
GOFLAGS=-mod=mod go get "k8s.io/kubernetes@$ver" >/dev/null
mkdir -p "$out.tmp"
echo "[e2e] kubernetes $ver: building kube-apiserver and kube-controller-manager (about 10 minutes cold)"
GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$ver" \
  -o "$out.tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
rm -rf "$out" && mv "$out.tmp" "$out"
echo "[e2e] kubernetes $ver: built into $out"
