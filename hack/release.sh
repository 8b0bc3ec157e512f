#!/usr/bin/env bash
# make release: reproducible release archives of snapshift.
#
#   dist/snapshift_<version>_<os>_<arch>.tar.gz   the binary, README.md, snapshift.8 and docs/*.md (the
#                                                 docs README links to, CLI.md among them)
#   dist/snapshift_<version>_<os>_<arch>.cdx.json a CycloneDX SBOM of the module graph for that target
#   dist/SHA256SUMS                                for `sha256sum -c SHA256SUMS`
#
# Reproducible: -trimpath, an empty build ID, -buildvcs=false and the identity given with -ldflags -X
# (version from `git describe`, commit, date = the commit's time), CGO off; the archives are tar'd in
# name order with the commit's time as every mtime, owner 0:0 and fixed modes, and gzip -n (no name,
# no time). Two runs on one commit give identical bytes: hack/release.sh check (make release-check).
#
# Environment: OUT (default dist), PLATFORMS (default "linux/amd64 linux/arm64 darwin/amd64
# darwin/arm64"), VERSION, COMMIT, SOURCE_DATE_EPOCH (defaults from git).
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
OUT=${OUT:-dist}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"}
COMMIT=${COMMIT:-$(git rev-parse HEAD)}
if [ -z "${VERSION:-}" ]; then
  # The release tag; between tags, a pseudo-version-like name of the commit.
  VERSION=$(git describe --tags --dirty --match 'v*' 2>/dev/null) ||
    VERSION="v0.0.0-$(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)"
fi
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct "$COMMIT")}
DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
BI=github.com/snapshift/snapshift/internal/buildinfo
LDFLAGS="-s -w -buildid= -X $BI.version=$VERSION -X $BI.commit=$COMMIT -X $BI.date=$DATE"
export SOURCE_DATE_EPOCH

build() {
  local out=$1
  local sbomtool # the version go.mod's tool directive pins
  sbomtool=$($GO tool -n cyclonedx-gomod)
  rm -rf "$out" && mkdir -p "$out"
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  for p in $PLATFORMS; do
    local os=${p%/*} arch=${p#*/}
    local name="snapshift_${VERSION#v}_${os}_${arch}"
    mkdir -p "$stage/$name"
    echo "[release] $name"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS= $GO build -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
      -o "$stage/$name/snapshift" ./cmd/snapshift
    mkdir -p "$stage/$name/docs"
    cp README.md docs/snapshift.8 "$stage/$name/"
    cp docs/*.md "$stage/$name/docs/"
    chmod 0755 "$stage/$name" "$stage/$name/snapshift" "$stage/$name/docs"
    chmod 0644 "$stage/$name/README.md" "$stage/$name/snapshift.8" "$stage/$name"/docs/*.md
    # Every docs/ page README.md links to is in the archive.
    local l
    for l in $(grep -o '](docs/[^)#]*' README.md | sed 's/^](//' | sort -u); do
      [ -e "$stage/$name/$l" ] || { echo "[release] README.md links to $l, which the archive lacks" >&2; return 1; }
    done
    tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=gnu \
      -C "$stage" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
    # The SBOM of exactly what this binary links (its embedded module list, as `go version -m`
    # shows it), without the serial number and timestamp that would make two runs differ.
    (cd "$stage" && "$sbomtool" bin -json -noserial -notimestamp \
      -version "$VERSION" -output "$name.cdx.json" "$name/snapshift")
    mv "$stage/$name.cdx.json" "$out/"
  done
  (cd "$out" && sha256sum -- *.tar.gz *.cdx.json >SHA256SUMS)
  check_sbom "$out"
}

# check_sbom: every SBOM lists etcd, bbolt and the Kubernetes libraries at the versions go.mod
# selects.
check_sbom() {
  local m v f
  for m in go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdutl/v3 go.etcd.io/bbolt k8s.io/api k8s.io/apimachinery k8s.io/client-go; do
    v=$(GOFLAGS= $GO list -m -f '{{.Version}}' "$m")
    for f in "$1"/*.cdx.json; do
      if ! grep -q "\"pkg:golang/$m@$v?" "$f"; then
        echo "[release] $f does not list $m $v" >&2
        exit 1
      fi
    done
  done
}

case "${1:-build}" in
build)
  build "$OUT"
  (cd "$OUT" && sha256sum -c --quiet SHA256SUMS)
  echo "[release] $VERSION ($COMMIT, $DATE) in $OUT:"
  cat "$OUT/SHA256SUMS"
  ;;
check)
  # Two builds into two directories, compared byte for byte. The second build gets a fresh
  # module-independent staging path; set RELEASE_CHECK_COLD=1 to also give it an empty build
  # cache (every package compiled again, not only linked: several minutes per platform).
  build "$OUT/check-a"
  if [ "${RELEASE_CHECK_COLD:-}" = 1 ]; then
    cache=$(mktemp -d)
    GOCACHE=$cache build "$OUT/check-b"
    rm -rf "$cache"
  else
    build "$OUT/check-b"
  fi
  if cmp -s "$OUT/check-a/SHA256SUMS" "$OUT/check-b/SHA256SUMS" && diff -r "$OUT/check-a" "$OUT/check-b" >/dev/null; then
    echo "[release-check] two builds are byte-identical:"
    cat "$OUT/check-a/SHA256SUMS"
  else
    echo "[release-check] the two builds differ:" >&2
    diff "$OUT/check-a/SHA256SUMS" "$OUT/check-b/SHA256SUMS" >&2 || true
    exit 1
  fi
  ;;
*)
  echo "usage: hack/release.sh [build|check]" >&2
  exit 2
  ;;
esac
