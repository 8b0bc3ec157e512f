#!/usr/bin/env bash
# Builds Kubernetes components from the k8s.io/kubernetes module at version $1
# (e.g. v1.36.3) into $CACHE/k8s-$1/, once each: by default kube-apiserver and
# kube-controller-manager (the e2e); further arguments name other commands of
# k8s.io/kubernetes/cmd (the lab, hack/lab: kubelet kube-proxy kube-scheduler
# kubectl), or two of its tests' programs (the lab's conformance run,
# hack/lab/conformance.sh): e2e.test (`go test -c k8s.io/kubernetes/test/e2e`,
# the conformance suite) and agnhost (test/images/agnhost, the suite's
# test image). `go install` refuses k8s.io/kubernetes because of its replace
# directives, so this makes a small build module that requires it and replaces
# every staging module k8s.io/<name> with k8s.io/<name> v0.<minor>.<patch> from
# the module proxy. Only the missing binaries are built, in one `go build`.
set -euo pipefail
ver=${1:?usage: build-k8s.sh vX.Y.Z [command...]}
shift
cmds=("$@")
[ ${#cmds[@]} -gt 0 ] || cmds=(kube-apiserver kube-controller-manager)
cache=${SNAPSHIFT_E2E_CACHE:-$HOME/.cache/snapshift-e2e}
out="$cache/k8s-$ver"
missing=()
for c in "${cmds[@]}"; do
  [ -x "$out/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[e2e] kubernetes $ver: ${cmds[*]} cached in $out"
  exit 0
fi
staging=v0.${ver#v1.}
mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-$ver.XXXX")
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
pkgs=()
tests=()
pkgof() {
  case $1 in
    e2e.test) echo k8s.io/kubernetes/test/e2e ;;
    agnhost) echo k8s.io/kubernetes/test/images/agnhost ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}
{
  printf '//go:build tools\n\npackage tools\n\nimport (\n'
  for c in "${missing[@]}"; do
    printf '\t_ "%s"\n' "$(pkgof "$c")"
    if [ "$c" = e2e.test ]; then tests+=("$c"); else pkgs+=("$(pkgof "$c")"); fi
  done
  printf ')\n'
} > tools.go
echo "[e2e] kubernetes $ver: resolving modules"
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
GOFLAGS=-mod=mod go get "k8s.io/kubernetes@$ver" >/dev/null
mkdir -p bin
echo "[e2e] kubernetes $ver: building ${missing[*]} (about 10 minutes cold for two, more for more)"
start=$(date +%s)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$ver"
[ ${#pkgs[@]} -eq 0 ] || GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o bin/ "${pkgs[@]}"
# The suite's own test binary (its _test.go files hold the specs' imports).
[ ${#tests[@]} -eq 0 ] || GOFLAGS=-mod=mod CGO_ENABLED=0 go test -c -trimpath -ldflags "$ldflags" -o bin/e2e.test k8s.io/kubernetes/test/e2e
mkdir -p "$out"
for c in "${missing[@]}"; do
  mv -f "bin/$c" "$out/$c"
done
echo "[e2e] kubernetes $ver: built ${missing[*]} into $out in $(( $(date +%s) - start ))s"
