#!/usr/bin/env bash
# make install-check: what `go install github.com/snapshift/snapshift/cmd/snapshift@<version>` gives a
# user, from a clean module cache. The committed tree (git archive HEAD) is served as version
# $VERSION (default v0.0.0-installcheck) by a local file:// module proxy, the dependencies by the
# machine's module download cache (then proxy.golang.org); the module cache, GOPATH and GOBIN are new
# and empty. The installed binary's `snapshift version -o json` must say $VERSION and name the
# etcd, bbolt and Kubernetes library versions of go.mod. Compiles every package again (its paths
# are new): several minutes on 2 cores, so it is not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
V=${VERSION:-v0.0.0-installcheck}
MOD=github.com/snapshift/snapshift
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

proxy=$work/proxy/$MOD/@v
mkdir -p "$proxy" "$work/src"
git archive --format=tar --prefix="$MOD@$V/" HEAD | tar -x -C "$work/src"
(cd "$work/src" && zip -qrX "$proxy/$V.zip" "$MOD@$V")
git show HEAD:go.mod >"$proxy/$V.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$V" "$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd)" >"$proxy/$V.info"
echo "$V" >"$proxy/list"

deps="file://$($GO env GOMODCACHE)/cache/download"
echo "[install-check] go install $MOD/cmd/snapshift@$V (clean module cache in $work)"
env GOMODCACHE="$work/modcache" GOPATH="$work/gopath" GOBIN="$work/bin" GOFLAGS= \
  GOPROXY="file://$work/proxy,$deps,https://proxy.golang.org" GONOSUMDB=$MOD GONOSUMCHECK=1 \
  $GO install "$MOD/cmd/snapshift@$V"

"$work/bin/snapshift" version -o json >"$work/version.json"
cat "$work/version.json"
grep -q "\"version\": \"$V\"" "$work/version.json" || { echo "[install-check] the version is not $V" >&2; exit 1; }
for m in go.etcd.io/etcd/server/v3 go.etcd.io/bbolt k8s.io/api k8s.io/apimachinery k8s.io/client-go; do
  v=$(GOFLAGS= $GO list -m -f '{{.Version}}' "$m")
  grep -q "\"$m\": \"$v\"" "$work/version.json" || { echo "[install-check] $m is not $v" >&2; exit 1; }
done
echo "[install-check] ok: $V, with go.mod's etcd, bbolt and Kubernetes versions"
