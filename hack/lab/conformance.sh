# Kubernetes' conformance suite in the lab (issue 49), sourced by
# hack/lab/build.sh (conformance_build) and hack/lab/lab.sh (conformance_run).
#
# The suite is test/e2e of the k8s.io/kubernetes module at the lab's version:
# e2e.test (`go test -c`, hack/build-k8s.sh), run by the ginkgo CLI of the
# version that module requires, from the operator's machine with the lab's
# admin kubeconfig and kubectl on PATH, --provider=skeleton. Its images are
# built here, never pulled, under the names e2e.test asks for
# (hack/lab/versions.sh): agnhost from the same module with the tools the
# suite runs inside it (Debian's dig, curl, nc, ip, ss, getent, bash), busybox
# from Debian's busybox-static, glibc-dns-testing from Debian's dig and getent,
# nginx from Debian's nginx, pause from the lab's own.

# The selections: the [Conformance] tests of [sig-network] (CI), or all of
# them (make lab-conformance).
CONF_FOCUS_NETWORK='\[sig-network\].*\[Conformance\]'
CONF_FOCUS_ALL='\[Conformance\]'
# The skip list: tests whose needs the lab cannot meet at all, one reason
# each (hack/lab/README.md lists them).
CONF_SKIP=(
)

# conf_files BIN...: -file arguments for BINs (at their own paths; a link's
# target's content) and the shared libraries they load (build.sh's libs).
conf_files() {
  local b
  for b in "$@"; do
    printf -- '-file\n%s=%s\n' "$b" "$(readlink -f "$b")"
    libs "$b"
  done | paste - - | sort -u | tr '\t' '\n'
}

# conf_busybox [TOOL...]: -link arguments for every applet of Debian's
# busybox-static, at /bin/busybox, but those named as the image's own TOOLs
# (their paths). With TOOLs, /bin/sh is the image's bash: Debian builds
# busybox's sh to run its own applets before PATH's (nc -v, which the
# suite's service tests run, is OpenBSD's option, not busybox's).
conf_busybox() {
  local a d skip
  printf -- '-file\n/bin/busybox=/bin/busybox\n'
  [ $# = 0 ] || printf -- '-link\n/bin/sh=/usr/bin/bash\n'
  /bin/busybox --list-full | while read -r a; do
    skip=0
    for d in "$@" ${1:+/bin/sh}; do [ "$(basename "$a")" = "$(basename "$d")" ] && skip=1; done
    [ "/$a" = /bin/busybox ] || [ $skip = 1 ] || printf -- '-link\n/%s=/bin/busybox\n' "$a"
  done
}

conformance_build() {
  local t src etc
  t=$(date +%s)
  bash hack/build-k8s.sh "$K8S_VERSION" e2e.test agnhost
  gobuild ginkgo "github.com/onsi/ginkgo/v2@$GINKGO_VERSION" github.com/onsi/ginkgo/v2/ginkgo
  for b in dig nc nginx; do
    command -v "$b" >/dev/null || { echo "[lab] $b is missing: apt-get install -y bind9-dnsutils netcat-openbsd nginx-light" >&2; return 1; }
  done
  src=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  etc=$LAB_CACHE/conformance-etc
  mkdir -p "$CONF_IMAGES" "$etc"
  # The images' users and groups: agnhost's Dockerfile adds
  # user-defined-in-image (1000) in group-defined-in-image (50000).
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n' > "$etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' > "$etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$etc/nsswitch.conf"
  cat > "$etc/nginx.conf" <<'NGINX'
user nobody nogroup;
worker_processes 1;
daemon off;
pid /run/nginx.pid;
error_log /dev/stderr;
events { worker_connections 256; }
http {
  include /etc/nginx/mime.types;
  access_log /dev/stdout;
  client_body_temp_path /tmp/nginx-body;
  proxy_temp_path /tmp/nginx-proxy;
  fastcgi_temp_path /tmp/nginx-fastcgi;
  uwsgi_temp_path /tmp/nginx-uwsgi;
  scgi_temp_path /tmp/nginx-scgi;
  server {
    listen 80;
    root /usr/share/nginx/html;
  }
}
NGINX
  printf '<html><body>Welcome to nginx!</body></html>\n' > "$etc/index.html"
  local base=(-file "/etc/passwd=$etc/passwd" -file "/etc/group=$etc/group" -file "/etc/nsswitch.conf=$etc/nsswitch.conf")
  local tools=(/usr/bin/dig /usr/bin/curl /usr/bin/nc /usr/bin/ip /usr/bin/ss /usr/bin/getent /usr/bin/bash)
  local f
  cimg() { # FILE NAME mkimage-args...: rebuilt when missing, older than a file it packs, or made from other arguments
    local out="$CONF_IMAGES/$1.tar" name=$2 a stale=0 sum; shift 2
    for a in "$@"; do [[ $a == /*=/* ]] && [ "${a#*=}" -nt "$out" ] && stale=1; done
    sum=$(printf '%s\n' "$name" "$@" | sha256sum | cut -d' ' -f1)
    [ "$(cat "$out.args" 2>/dev/null)" = "$sum" ] || stale=1
    [ -s "$out" ] && [ $stale = 0 ] && return
    "$LAB_BIN/tools/mkimage" -o "$out" -name "$name" "$@"
    echo "$sum" > "$out.args"
  }
  mapfile -t f < <(conf_files "${tools[@]}"; conf_busybox "${tools[@]}")
  cimg agnhost "$CONF_AGNHOST_IMAGE" "${base[@]}" "${f[@]}" -file "/agnhost=$K8S_BIN/agnhost" -link /agnhost-2=agnhost \
    -file "/localhost.crt=$src/test/images/agnhost/porter/localhost.crt" -file "/localhost.key=$src/test/images/agnhost/porter/localhost.key" \
    -dir /uploads -entrypoint /agnhost -cmd pause
  mapfile -t f < <(conf_busybox)
  cimg busybox "$CONF_BUSYBOX_IMAGE" "${base[@]}" "${f[@]}" -cmd sh
  mapfile -t f < <(conf_files /usr/bin/dig /usr/bin/getent /usr/bin/bash; conf_busybox /usr/bin/dig /usr/bin/getent /usr/bin/bash)
  cimg glibc-dns-testing "$CONF_DNS_IMAGE" "${base[@]}" "${f[@]}" -cmd sh
  mapfile -t f < <(conf_files /usr/sbin/nginx)
  local n
  for n in nginx:"$CONF_NGINX_IMAGE" nginx-new:"$CONF_NGINX_NEW_IMAGE"; do
    cimg "${n%%:*}" "${n#*:}" "${base[@]}" "${f[@]}" -file "/etc/nginx/nginx.conf=$etc/nginx.conf" \
      -file /etc/nginx/mime.types=/etc/nginx/mime.types -file "/usr/share/nginx/html/index.html=$etc/index.html" \
      -entrypoint /usr/sbin/nginx
  done
  cimg pause "$CONF_PAUSE_IMAGE" -file /pause="$LAB_BIN/tools/pause" -entrypoint /pause
  ls -la "$CONF_IMAGES"
  echo "[lab] conformance suite and its images in $(( $(date +%s) - t ))s"
}

# conformance_selection: the focus of this run's selection, by
# LAB_CONFORMANCE_SELECTION (network: [sig-network]'s, all: every
# [Conformance] test).
conformance_focus() {
  case ${LAB_CONFORMANCE_SELECTION:-network} in
    network) echo "$CONF_FOCUS_NETWORK" ;;
    all) echo "$CONF_FOCUS_ALL" ;;
    *) die "LAB_CONFORMANCE_SELECTION=$LAB_CONFORMANCE_SELECTION: network or all" ;;
  esac
}

# conformance_run STATE: the suite against the cluster as it is now (STATE:
# baseline, or a scenario's migrated or rolled-back state), from the
# operator's machine with cp1's admin.conf of the moment; the JUnit file and
# the JSON report in logs/conformance/STATE/, the one-line summary (passed,
# failed, skipped) as a check. A test that failed on the baseline (a limit of
# the lab) is named but fails no later state; any other failure is a defect.
# A failed test is run once more (--flake-attempts=2; the summary names those
# that passed so): the EndpointSlice controller of v1.36.3 can leave a
# deleted slice unrecreated for minutes (kubernetes#141592, fixed after that
# release), which failed the lab's baseline once.
conformance_run() {
  local state=$1 dir ts rc=0 kcfg summary
  dir=$LAB_ROOT/logs/conformance/$state
  mkdir -p "$dir"
  kcfg=$LAB_ROOT/admin/conformance.kubeconfig
  cp "$(nodedir cp1)/root/etc/kubernetes/admin.conf" "$kcfg"
  ts=$(date +%s)
  log "[$state] conformance: $(conformance_focus) (${LAB_CONFORMANCE_PROCS:-4} in parallel, the [Serial] ones alone)"
  local skip
  skip=$(IFS='|'; echo "${CONF_SKIP[*]}")
  # No DNS lookup leaves the operator's machine: it has the underlay's route
  # only; the suite's own lookups are the cluster's (inside pods).
  adminsh "cd '$dir' && '$LAB_BIN/ginkgo-$GINKGO_VERSION' --procs='${LAB_CONFORMANCE_PROCS:-4}' --timeout=90m --no-color --flake-attempts=2 \
    --focus='$(conformance_focus)' ${skip:+--skip='$skip'} --json-report=report.json --junit-report=junit.xml --output-dir='$dir' \
    '$K8S_BIN/e2e.test' -- --provider=skeleton --kubeconfig='$kcfg' --report-dir='$dir' \
    --disable-log-dump --e2e-output-dir='$dir'" > "$dir/e2e.log" 2>&1 || rc=$?
  summary=$(python3 "$repo/hack/lab/conformance.py" summary "$dir/report.json" ${CONF_BASELINE:+"$CONF_BASELINE"}) ||
    summary="no report (e2e.test exit $rc; log: ${logs#$repo/}/conformance/$state/e2e.log)"
  log "[$state] conformance in $(( $(date +%s) - ts ))s: $summary"
  [ "$state" = baseline ] && CONF_BASELINE=$dir/report.json
  check "[$state] conformance ($(conformance_focus)): $summary" python3 "$repo/hack/lab/conformance.py" gate "$dir/report.json" ${CONF_BASELINE:+"$CONF_BASELINE"} "$state"
}
