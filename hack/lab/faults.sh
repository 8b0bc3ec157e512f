# The window's faults (issue 51; sourced by hack/lab/lab.sh after
# runbook.sh): each makes one case of the runbook's section "When something
# goes wrong" happen on the real cluster, by its runbook.json fault ID, and
# the scenario then does what that section says (hack/lab/migrate.sh,
# hack/lab/ansible.sh). Every helper leaves a mark under $LAB_ROOT that
# proves the fault happened: a scenario whose fault did not happen fails.

# The steps node apply records in backup.json, in order (bundle.ApplySteps
# without the last, healthy: killed after it, apply is done), and preflight
# (killed at its first line, before backup.json exists): the seed picks one.
FAULT_KILL_STEPS="preflight backup static-pods-stopped etcd-moved etcd-installed installed cni-cleaned peers-checked kubelet-started"

# fault_pick_kill: FAULT_NODE and FAULT_STEP for apply-killed, from
# LAB_SEED (default: the time), printed so that a run can be repeated.
fault_pick_kill() {
  local seed=${LAB_SEED:-$(date +%s)} steps nodes
  read -r -a steps <<< "$FAULT_KILL_STEPS"
  read -r -a nodes <<< "$CPS"
  FAULT_STEP=${steps[$(( seed % ${#steps[@]} ))]}
  # One of the control-plane nodes other than cp1 (where kubectl points
  # with the old CA): the seed picks it too.
  FAULT_NODE=${nodes[$(( 1 + (seed / ${#steps[@]}) % (${#nodes[@]} - 1) ))]}
  log "[fault apply-killed] LAB_SEED=$seed: SIGKILL to $FAULT_NODE's node apply after its step $FAULT_STEP"
}

# backup_json NODE LABEL: the node's backup.json path on the host, for
# the bundle of LABEL (bundle.BackupDir: /var/lib/snapshift/backup/NODE-<the
# first 12 hex digits of report.json's sha256>).
backup_json() {
  local tag
  tag=$(sha256sum "$LAB_ROOT/admin/$2/bundle/report.json" | cut -c1-12)
  echo "$(nodedir "$1")/root/var/lib/snapshift/backup/$1-$tag/backup.json"
}

# recorded_steps FILE: the steps backup.json records, space-separated.
recorded_steps() { tr -d ' \n' < "$1" 2>/dev/null | grep -o '"steps":\[[^]]*\]' | tr -d '"[]' | sed 's/^steps://; s/,/ /g'; }

# fault_kill_at NODE STEP LOG: SIGKILL to NODE's `snapshift node apply` once
# backup.json records STEP (preflight: at its first line in LOG), then
# $LAB_ROOT/fault-killed says where it was. Runs beside the block (rb_run).
fault_kill_at() {
  local n=$1 step=$2 logf=$3 f pid i
  f=$(backup_json "$n" "$FAULT_LABEL")
  for i in $(seq 12000); do   # 20 min at 0.1 s: the block's own timeouts end it first
    if { [ "$step" = preflight ] && grep -q '^\[preflight\] ' "$logf" 2>/dev/null; } ||
       { [ "$step" != preflight ] && recorded_steps "$f" | tr ' ' '\n' | grep -qx "$step"; }; then
      pid=$(pgrep -f -- "^[^ ]*snapshift node apply --bundle [^ ]+ --node $n( |\$)" | head -1) || true   # snapshift itself, not the shell running its line
      [ -n "$pid" ] || return 0   # it ended before the kill: nothing to kill
      kill -KILL "$pid"
      echo "$n after $step (pid $pid; backup.json then recorded: $(recorded_steps "$f" | tr -s ' ' ','))" > "$LAB_ROOT/fault-killed"
      log "[fault apply-killed] SIGKILL to $n's node apply (pid $pid) after its step $step"
      return 0
    fi
    sleep 0.1
  done
}

# fault_check_killed LABEL: the kill happened, the node's second apply
# finished, and its backup still holds the old etcd data dir, moved, until
# node confirm (nothing lost).
fault_check_killed() {
  [ -e "$LAB_ROOT/fault-killed" ] || die "[fault apply-killed] $FAULT_NODE's node apply was never killed (step $FAULT_STEP not seen)"
  local f; f=$(backup_json "$FAULT_NODE" "$1")
  python3 - "$f" <<'PY' || die "[fault apply-killed] $FAULT_NODE's backup does not hold the old etcd data dir ($f)"
import json, os, sys
f = sys.argv[1]
r = json.load(open(f))
assert "healthy" in r["steps"], "apply did not finish: %s" % r["steps"]
e = [e for e in r["entries"] if e["how"] in ("moved", "moved-contents") and e["path"].rstrip("/").endswith("etcd")]
assert e, "no moved etcd data dir in %s" % r["entries"]
db = os.path.join(os.path.dirname(f), e[0]["backup"], "member", "snap", "db")
assert os.path.getsize(db) > 0, db
print("%s: the old etcd data dir is in the backup (%s, %d bytes)" % (r["node"], db, os.path.getsize(db)))
PY
  checks+=("PASS  [$1] fault apply-killed: $(cat "$LAB_ROOT/fault-killed"); run again, it finished; the old etcd data dir kept in the backup")
}

# fault_port_hold NODE PORT: something else listens on every address of
# NODE at PORT (accepts, never answers): the new kube-apiserver cannot bind.
fault_port_hold() {
  lab_start "$1" "port-$2" python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(64); time.sleep(86400)' "$2"
  wait_for "[fault] $1: port $2 taken" 10 nodeexec "$1" bash -c "exec 3<>/dev/tcp/$(nodeip "$1")/$2"
}
fault_port_release() { lab_stop "$1" "port-$2"; log "[fault] $1: port $2 free again"; }

# fault_wait_rolled_back LABEL SECS: every control-plane node's deadline
# timer fired and rolled it back (backup.json rolledBack, its service ended
# with status 0).
fault_wait_rolled_back() {
  local n f
  for n in $CPS; do
    f=$(backup_json "$n" "$1")
    wait_for "[$1] $n: the --rollback-after timer rolled it back" "$2" grep -q '"rolledBack": *true' "$f"
    wait_for "[$1] $n: snapshift-rollback-$n.service ended" 120 fault_service_done "$n"
    cat "$LAB_ROOT/logs/$n-snapshift-rollback-$n.timer.log"
  done
}
fault_service_done() {
  local s=$LAB_ROOT/units/$1/snapshift-rollback-$1.service
  [ ! -e "$s" ] && return 0
  [ "$(cat "$s")" = failed ] && die "snapshift-rollback-$1.service failed: $(tail -5 "$LAB_ROOT/logs/$1-snapshift-rollback-$1.timer.log")"
  return 1
}

# fault_change_after_backup NODE LABEL: once NODE's apply has made its
# backup (the first phase, past preflight), a file of its part of the
# bundle on the node changes (someone edits it, the disk rots): the second
# phase's preflight refuses the node. $LAB_ROOT/fault-changed names it.
fault_change_after_backup() {
  local n=$1 f i m
  f=$(backup_json "$n" "$2")
  for i in $(seq 6000); do
    if [ -s "$f" ]; then
      m=$(find "$(nodedir "$n")/root/root/snapshift-bundle/kubernetes" -path '*/manifests/kube-apiserver.yaml' | head -1)
      [ -n "$m" ] || { log "[fault] $n: no kube-apiserver.yaml in its bundle"; return 1; }
      echo "# changed on the node during the window (the lab's fault apply-failed)" >> "$m"
      echo "$n: ${m#"$(nodedir "$n")/root"}" > "$LAB_ROOT/fault-changed"
      log "[fault apply-failed] $n's backup is made: its bundle's ${m#"$(nodedir "$n")/root"} changed"
      return 0
    fi
    sleep 0.1
  done
}

# fault_disk_full NODE LABEL: NODE's etcd data dir, emptied into the backup
# by apply's first phase, becomes a disk too small for the new member (a
# 16 MiB tmpfs over it in the node's mount namespace; the member's WAL
# alone is 64 MiB). Its backup.json then is kept in $LAB_ROOT/fault-disk-full.
fault_disk_full() {
  local f; f=$(backup_json "$1" "$2")
  [ -s "$f" ] || die "[fault disk-full] $1 has no backup.json after apply's first phase ($f)"
  nodeexec "$1" mount -t tmpfs -o size=16m,mode=0700 snapshift-lab-small-disk /var/lib/etcd
  cp "$f" "$LAB_ROOT/fault-disk-full"
  log "[fault disk-full] $1: /var/lib/etcd is now a 16 MiB disk"
}

# fault_disk_room NODE LABEL: the refused apply named the data dir's file
# system and changed nothing (backup.json as before, the disk empty); then
# the operator makes room: the small disk goes (the larger one is there
# again).
fault_disk_room() {
  local n=$1 label=$2 logf=$LAB_ROOT/logs/runbook-apply.start-$1.log
  grep -qx apply.start "$LAB_ROOT/fault-failed-$n" 2>/dev/null || die "[fault disk-full] $n's apply passed with its etcd disk too small"
  grep -q 'free on the file system of /var/lib/etcd, the new etcd member needs' "$logf" ||
    die "[fault disk-full] $n's apply failed, but not by preflight's refusal of the etcd disk: $(tail -3 "$logf")"
  cmp -s "$LAB_ROOT/fault-disk-full" "$(backup_json "$n" "$label")" || die "[fault disk-full] the refused apply changed $n's backup.json"
  [ -z "$(nodeexec "$n" ls -A /var/lib/etcd)" ] || die "[fault disk-full] the refused apply wrote into $n's /var/lib/etcd"
  checks+=("PASS  [$label] fault disk-full: $n's apply refused by preflight ($(grep -o '[^:]*free on the file system of /var/lib/etcd[^:]*' "$logf" | head -1 | sed 's/^ *//')), nothing changed")
  nodeexec "$n" umount /var/lib/etcd
  log "[fault disk-full] $n: room made (the small disk removed); its apply line again"
}

# fault_reset: forget the marks of the previous scenario's fault.
fault_reset() { rm -f "$LAB_ROOT"/fault-*; }

# fault_partition NODE on|off: NODE's own packet filter drops everything
# to and from the control-plane nodes (a table of the lab's, beside
# kube-proxy's and flannel's): a partition between them, its other links
# up.
fault_partition() {
  local n=$1 cps=() c
  for c in $CPS; do cps+=("$(nodeip "$c")"); done
  local set; set=$(IFS=,; echo "${cps[*]}")
  if [ "$2" = on ]; then
    nodeexec "$n" nft -f - <<NFT
table inet lab-partition {
  chain p_in { type filter hook input priority -300; policy accept; ip saddr { $set } drop; }
  chain p_out { type filter hook output priority -300; policy accept; ip daddr { $set } drop; }
  chain p_fwd { type filter hook forward priority -300; policy accept; ip saddr { $set } drop; ip daddr { $set } drop; }
}
NFT
    echo "$n" > "$LAB_ROOT/fault-partitioned"
    log "[fault restart-stuck] $n cut off from the control plane ($set)"
  else
    nodeexec "$n" nft delete table inet lab-partition
    log "[fault restart-stuck] $n reaches the control plane again"
  fi
}

# fault_restart_stuck LABEL RB: what section "When something goes wrong"
# says for restart-stuck, on the real cluster. The last worker is cut off
# from the control plane before block restart.run: the restart stops at a
# stage within its --timeout (window.restartTimeout) and says which in one
# line (exit non-zero). The partition heals; the block again finishes
# (what was restarted is only waited for); a third run skips every
# restart.
fault_restart_stuck() {
  local label=$1 rb=$2 w t0 took limit line
  w=${WORKERS##* }
  fault_partition "$w" on
  t0=$(date +%s)
  RB_EXPECT_FAIL=kubectl rb_run "$rb" restart.run
  took=$(( $(date +%s) - t0 ))
  grep -qx restart.run "$LAB_ROOT/fault-failed-kubectl" 2>/dev/null || { fault_partition "$w" off; die "[fault restart-stuck] cluster restart finished with $w cut off from the control plane"; }
  line=$(grep '^snapshift: ' "$LAB_ROOT/logs/runbook-restart.run-kubectl.log" | tail -1)
  [ "$(grep -c '^snapshift: ' "$LAB_ROOT/logs/runbook-restart.run-kubectl.log")" = 1 ] && grep -q 'not done within --timeout' <<< "$line" && grep -q 'stage' <<< "$line" ||
    { fault_partition "$w" off; die "[fault restart-stuck] the restart's failure is not one line naming the stage and the timeout: $line"; }
  # The timeout bounds each action; the dry run and the stages done before
  # add a little.
  limit=$(( $(python3 -c 'import re,sys; m=re.fullmatch(r"(\d+)([sm])", sys.argv[1]); print(int(m[1]) * (60 if m[2] == "m" else 1))' "$SC_RESTART_TIMEOUT") + 120 ))
  [ "$took" -le "$limit" ] || { fault_partition "$w" off; die "[fault restart-stuck] the restart took ${took}s to fail, more than its --timeout $SC_RESTART_TIMEOUT allows"; }
  checks+=("PASS  [$label] fault restart-stuck: with $w cut off, cluster restart stopped in ${took}s saying: ${line#snapshift: }")
  fault_partition "$w" off
  wait_for "[$label] $w: node Ready after the partition" 180 node_ready "$w"
  rb_run "$rb" restart.run
  rb_run "$rb" restart.run
  # The third run did nothing again: every action skipped (a rollout only
  # waited for, the pods gone already, the handover done).
  local third=$LAB_ROOT/logs/runbook-restart.run-kubectl.log
  if grep -qE '^\[stage [0-9]+ [^]]*\] (done|failed)' "$third" || ! grep -qE '^\[stage [0-9]+ [^]]*\] skipped' "$third"; then
    die "[fault restart-stuck] a third cluster restart did something again: $(grep -E '^\[stage [0-9]+ [^]]*\] (done|failed)' "$third" | head -5)"
  fi
  checks+=("PASS  [$label] fault restart-stuck: after the partition healed, the restart again finished; a third run skipped what was done")
}

# fault_worker_off NODE: NODE is off, as a machine whose power failed stays
# for the window: its kubelet, its pods' containers and containerd
# stopped, what a reboot clears gone, its link down (no address of it
# answers). Its sshd (the Ansible cells') stays, unreachable.
# $LAB_ROOT/fault-down names it.
fault_worker_off() {
  local n=$1 p keep
  lab_stop "$n" kubelet
  nodesh "$n" 'crictl pods -q | xargs -r crictl stopp' > "$LAB_ROOT/logs/$n-off.log" 2>&1 || true
  lab_stop "$n" containerd
  keep=$(cat "$LAB_ROOT/pids/$n-sshd" 2>/dev/null || true)
  for p in $(lab_node_pids "$n" | sort -u); do
    [ "$p" = "$keep" ] || kill -KILL "$p" 2>/dev/null || true
  done
  # What the power cut clears: /run's tmpfs (flannel's subnet.env; the
  # lab's /run/flannel is a mount point, its contents go), the
  # kernel's links and packet filter (cni0, flannel.1, kube-proxy's table).
  nodesh "$n" 'find /run/flannel -mindepth 1 -delete; for l in cni0 flannel.1; do ip link del "$l" 2>/dev/null || true; done; nft flush ruleset' >> "$LAB_ROOT/logs/$n-off.log" 2>&1
  ip -n "$LAB_NODE_PREFIX$n" link set eth0 down
  echo "$n" >> "$LAB_ROOT/fault-down"
  log "[fault worker-down] $n is off: kubelet, containers and containerd stopped, its link down"
}

# fault_worker_boot NODE: NODE comes back as a machine boots: its link up,
# containerd and then its kubelet started with the configuration it had
# before the window (the runbook's late-node steps come after).
fault_worker_boot() {
  local n=$1
  ip -n "$LAB_NODE_PREFIX$n" link set eth0 up
  ip -n "$LAB_NODE_PREFIX$n" route replace default via 10.0.0.1 dev eth0
  lab_containerd "$n"
  lab_kubelet "$n"
  log "[fault worker-down] $n is back: its link up, containerd and its kubelet started as at boot"
}

# fault_worker_down_window LABEL RB: what the runbook's worker-down says,
# once the window is done with the worker off: the restart tainted it out
# of service, the check passed without it; then it is back, its worker
# steps and its late-node line run on it alone (the blocks of the fault's
# entry), and the taint is off.
fault_worker_down_window() {
  local label=$1 rb=$2 n id
  for n in $LAB_DOWN; do
    [ "$(kc cp1 get node "$n" -o jsonpath='{.spec.taints[?(@.key=="node.kubernetes.io/out-of-service")].effect}')" = NoExecute ] ||
      die "[fault worker-down] $n has no out-of-service taint after cluster restart --down $n"
    checks+=("PASS  [$label] fault worker-down: $n off through the window: cluster restart and check passed with --down $n, the node tainted out of service")
  done
  local down=$LAB_DOWN
  LAB_DOWN=
  for n in $down; do
    fault_worker_boot "$n"
    # shellcheck disable=SC2086
    for id in $DOWN_RUN; do RB_ONLY=$n rb_run "$rb" "$id"; done
    wait_for "[$label] $n: node Ready, its taint off" 180 node_ready_untainted "$n"
  done
}

# node_ready_untainted NODE: Ready, without the out-of-service taint.
node_ready_untainted() {
  node_ready "$1" && [ -z "$(kc cp1 get node "$1" -o jsonpath='{.spec.taints[?(@.key=="node.kubernetes.io/out-of-service")].key}')" ]
}

# fault_lose_control_plane LABEL: every control-plane node loses
# /etc/kubernetes (every CA, certificate, kubeconfig, sa.key and static-pod
# manifest: its contents, the lab's directory is a mount point): the kubelet
# stops the static pods whose manifests went; the etcd data survives.
# $LAB_ROOT/fault-lost names the nodes.
fault_lose_control_plane() {
  local label=$1 n
  # Not the lab's lab-resolv.conf: it stands for the host's /etc/resolv.conf
  # (the kubelet's resolvConf), which such a loss leaves.
  for n in $CPS; do
    nodeexec "$n" find /etc/kubernetes -mindepth 1 ! -path /etc/kubernetes/lab-resolv.conf -delete
    echo "$n" >> "$LAB_ROOT/fault-lost"
  done
  log "[fault control-plane-lost] /etc/kubernetes lost on $CPS"
  for n in $CPS; do wait_for "[$label] $n: etcd and kube-apiserver stopped (their manifests lost)" 180 control_plane_gone "$n"; done
  for n in $CPS; do
    [ -z "$(nodeexec "$n" find /etc/kubernetes -mindepth 1 ! -path /etc/kubernetes/lab-resolv.conf)" ] || die "[fault control-plane-lost] $n's /etc/kubernetes is not empty"
    [ -s "$(nodedir "$n")/root/var/lib/etcd/member/snap/db" ] || die "[fault control-plane-lost] $n's etcd data did not survive"
  done
  checks+=("PASS  [$label] recovery: /etc/kubernetes lost on $CPS, their etcd and kube-apiserver stopped, the etcd data kept")
}

# control_plane_gone NODE: no etcd or kube-apiserver container runs there.
control_plane_gone() { [ -z "$(nodesh "$1" 'crictl ps -q --name "^(etcd|kube-apiserver)$"')" ]; }
