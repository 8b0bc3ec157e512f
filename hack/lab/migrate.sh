# The migration and the rollback, by the operator's own steps (issue 33 items
# 5 and 7; sourced by hack/lab/lab.sh after lib.sh, node.sh and runbook.sh).
# What the runbook says is run from the bundle's runbook.json, by block ID
# (hack/lab/runbook.sh);
# what comes before the runbook exists (the snapshot) follows its header.

NEW_POD_CIDR=10.55.0.0/16
NEW_SVC_CIDR=172.24.0.0/16

# The commands the runbook's header gives for before the snapshot, run on
# every control-plane node; lab_migrate checks the runbook still says them.
PRE_SNAPSHOT='[ -e /etc/kubernetes/manifests.before-snapshift ] || cp -a /etc/kubernetes/manifests /etc/kubernetes/manifests.before-snapshift   # a copy from an earlier attempt is kept
rm -f /etc/kubernetes/manifests/kube-apiserver.yaml   # its copy is in manifests.before-snapshift
while [ -n "$(crictl ps --name kube-apiserver -q)" ]; do sleep 2; done'
# A recovery's (matrix.json's recovery): the surviving member's database,
# copied once its etcd is gone; lab_migrate checks the runbook's block
# header.recover-db says the same.
RECOVER_DB='while [ -n "$(crictl ps --name etcd -q)" ]; do sleep 2; done   # no etcd runs from /var/lib/etcd
mkdir -p /backup && cp /var/lib/etcd/member/snap/db /backup/etcd.db   # on cp1'
SNAPSHOT_SAVE='etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt --cert /etc/kubernetes/pki/etcd/server.crt --key /etc/kubernetes/pki/etcd/server.key snapshot save /backup/etcd.db'

# fromnode NODE PATH DEST: copies PATH (file or directory) out of NODE, as an
# operator's scp from that node would.
fromnode() {
  mkdir -p "$3"
  nodeexec "$1" tar -C "$(dirname "$2")" -cf - "$(basename "$2")" | tar -C "$3" -xpf -
}

# lab_migrate LABEL new|old runbook|ansible: the whole operation. LABEL
# names the bundle and the checks; "new" rebuilds with a new CA, "old"
# reissues from the old one; the window is then driven by runbook.json's
# blocks (lab_window_runbook) or by the bundle's playbooks
# (lab_window_ansible, hack/lab/ansible.sh).
lab_migrate() {
  local label=$1 ca=$2 driver=${3:-runbook} a=$LAB_ROOT/admin/$1 rb k
  EVENTS_SINCE=$(date -u +%FT%TZ)   # the checks count the events made from here on
  # The checks' lab-new Service, deleted: gone before the snapshot, so the
  # snapshot does not hold it (c_no_lab_new).
  wait_for "[$label] prod/lab-new deleted before the snapshot" 60 lab_new_gone
  OLD_ETCD=$(etcd_cluster_id cp1) || die "etcd endpoint status on cp1 failed"
  # Fault worker-down (matrix.json's down): off before the migration, back
  # once the window is done (fault_worker_down_window).
  for k in ${SC_DOWN:-}; do fault_worker_off "$k"; done
  if [ -n "${SC_RECOVERY:-}" ]; then
    lab_recovery_snapshot "$label"
  else
    lab_planned_snapshot "$label"
  fi
  # The operator copies the snapshot, the manifests and (old CA) the PKI to
  # the machine that runs snapshift rebuild.
  mkdir -p "$a"
  fromnode cp1 /backup/etcd.db "$a"
  local pki="" manifests="" recovery="" networking=""
  if [ -n "${SC_RECOVERY:-}" ]; then
    # The manifests are lost with /etc/kubernetes (rebuild generates them),
    # the ranges kept.
    recovery="skipHashCheck: true
recovery: true"
  else
    fromnode cp1 /etc/kubernetes/manifests.before-snapshift "$a"
    manifests="  source: manifests.before-snapshift"
    networking="networking:
  serviceSubnet: $NEW_SVC_CIDR
  podSubnet: $NEW_POD_CIDR"
  fi
  if [ "$ca" = old ]; then
    fromnode cp1 /etc/kubernetes/pki "$a"
    pki="pki:
  source: pki"
  fi
  cat > "$a/rebuild.yaml" <<EOF
apiVersion: snapshift.io/v1alpha1
kind: RebuildConfiguration
snapshot: etcd.db
$recovery
output: bundle
$networking
etcd:
  members:
$(for n in $CPS; do printf '  - name: %s\n    peerURL: https://%s:2380\n    clientURL: https://%s:2379\n' "$n" "$(nodeip "$n")" "$(nodeip "$n")"; done)
$pki
manifests:
$manifests
  kubernetesVersion: $K8S_VERSION
EOF
  # The scenario's window (matrix.json): node apply's --timeout and
  # --rollback-after in every apply line of the runbook.
  if [ -n "${SC_APPLY_TIMEOUT:-}${SC_ROLLBACK_AFTER:-}${SC_RESTART_TIMEOUT:-}" ]; then
    printf 'window:\n' >> "$a/rebuild.yaml"
    [ -z "${SC_APPLY_TIMEOUT:-}" ] || printf '  applyTimeout: %s\n' "$SC_APPLY_TIMEOUT" >> "$a/rebuild.yaml"
    [ -z "${SC_ROLLBACK_AFTER:-}" ] || printf '  rollbackAfter: %s\n' "$SC_ROLLBACK_AFTER" >> "$a/rebuild.yaml"
    [ -z "${SC_RESTART_TIMEOUT:-}" ] || printf '  restartTimeout: %s\n' "$SC_RESTART_TIMEOUT" >> "$a/rebuild.yaml"
  fi
  log "[$label] snapshift rebuild ($ca CA)"
  lab_phase rebuild start
  adminsh "snapshift rebuild --config '$a/rebuild.yaml'" > "$LAB_ROOT/logs/$label-rebuild.log" 2>&1 ||
    die "snapshift rebuild failed (log: $LAB_ROOT/logs/$label-rebuild.log)"
  lab_phase rebuild end
  NEW_ETCD=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["etcd"]["new"]["clusterID"])' "$a/bundle/report.json")
  log "[$label] etcd: the old cluster is $OLD_ETCD, the bundle's restored cluster $NEW_ETCD"
  rb=$LAB_ROOT/runbook-$label
  rb_parse "$a/bundle/runbook.json" "$rb"
  cp "$a/bundle/RUNBOOK.md" "$LAB_ROOT/logs/$label-RUNBOOK.md"
  cp "$a/bundle/runbook.json" "$LAB_ROOT/logs/$label-runbook.json"
  if [ -n "${SC_RECOVERY:-}" ]; then
    diff <(echo "$RECOVER_DB") "$rb/header.recover-db.sh" >/dev/null || die "runbook.json's block header.recover-db no longer says the lab's RECOVER_DB commands: update hack/lab/migrate.sh"
  else
    diff <(echo "$PRE_SNAPSHOT") "$rb/header.before-snapshot.sh" >/dev/null || die "runbook.json's block header.before-snapshot no longer says the lab's PRE_SNAPSHOT commands: update hack/lab/migrate.sh"
    grep -qF "$SNAPSHOT_SAVE" <(tr '\n' ' ' < "$a/bundle/RUNBOOK.md") || die "the runbook's header no longer gives the lab's SNAPSHOT_SAVE command"
  fi
  python3 - "$a/bundle/report.json" <<'PY' || die "report.json's restart does not restart flannel's DaemonSet: the rebuild did not recognise it"
import json, sys
r = json.load(open(sys.argv[1]))["operation"].get("restart", [])
sys.exit(0 if any(w["kind"] == "DaemonSet" and w["name"] == "kube-flannel-ds" and w.get("role") for w in r) else 1)
PY
  # A fault scenario: the runbook's own entry for it in section "When
  # something goes wrong" (its end state and blocks) drives what follows.
  FAULT_ENDS=new FAULT_RUN= FAULT_LABEL=$label
  fault_reset
  if [ -n "${SC_FAULT:-}" ]; then
    local fl
    fl=$(rb_fault "$rb" "$SC_FAULT") || die "runbook.json has no fault $SC_FAULT in section \"When something goes wrong\""
    FAULT_ENDS=${fl%%$'\t'*} FAULT_RUN=${fl#*$'\t'}
    log "[$label] fault $SC_FAULT: the runbook says it ends in the $FAULT_ENDS cluster, by blocks $FAULT_RUN"
  fi
  # Workers off through the window (matrix.json's down: the runbook's
  # worker-down, beside the scenario's fault): the blocks that bring one in.
  LAB_DOWN= DOWN_RUN=
  if [ -n "${SC_DOWN:-}" ]; then
    local dl
    dl=$(rb_fault "$rb" worker-down) || die "runbook.json has no fault worker-down in section \"When something goes wrong\""
    [ "${dl%%$'\t'*}" = new ] || die "the runbook's worker-down ends in the ${dl%%$'\t'*} cluster, not the new one"
    DOWN_RUN=${dl#*$'\t'}
    log "[$label] fault worker-down ($SC_DOWN): the runbook brings a late worker in by blocks $DOWN_RUN"
  fi
  "lab_window_$driver" "$label"
}

# lab_planned_snapshot LABEL: a planned migration's snapshot, as the
# runbook's header says: the pre-snapshot block on every control-plane
# node, then etcdctl snapshot save on cp1.
lab_planned_snapshot() {
  local label=$1 pids=() p n
  log "[$label] before the snapshot (runbook header), on $CPS"
  lab_phase block:header.before-snapshot start
  # On every control-plane node at once, as the runbook's block runs (each
  # waits about 30 s for its kube-apiserver's grace period: one after the
  # other, three took 92 s and the window's measured lead with them).
  for n in $CPS; do nodesh "$n" "$PRE_SNAPSHOT" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || die "[$label] the runbook header's pre-snapshot block failed on a control-plane node"; done
  lab_phase block:header.before-snapshot end
  lab_phase snapshot start
  nodesh cp1 "mkdir -p /backup && rm -f /backup/etcd.db && $SNAPSHOT_SAVE" > "$LAB_ROOT/logs/$label-snapshot.log" 2>&1 ||
    die "etcdctl snapshot save failed (log: $LAB_ROOT/logs/$label-snapshot.log)"
  lab_phase snapshot end
}

# lab_recovery_snapshot LABEL: the control plane is lost (fault
# control-plane-lost), then the surviving member's database is copied, as
# a recovery's runbook header says (RECOVER_DB).
lab_recovery_snapshot() {
  local label=$1
  fault_lose_control_plane "$label"
  lab_phase snapshot start
  nodesh cp1 "rm -f /backup/etcd.db
$RECOVER_DB" > "$LAB_ROOT/logs/$label-snapshot.log" 2>&1 || die "copying cp1's member database failed (log: $LAB_ROOT/logs/$label-snapshot.log)"
  lab_phase snapshot end
}

# lab_window_runbook LABEL: the window, runbook.json's blocks by ID, each
# where it says.
lab_window_runbook() {
  local label=$1 rb=$LAB_ROOT/runbook-$1 n
  # Fault worker-down: the workers of SC_DOWN are off (since before the
  # snapshot) to the end of the window; their lines of the worker blocks
  # are skipped (rb_nodes), cluster restart and check get --down
  # (rb_script).
  LAB_DOWN=${SC_DOWN:-}
  rb_run "$rb" copy.bundle copy.preflight workers-stop.backup
  # apply.stop stops the old control plane on every node (--stop-only),
  # apply.start starts the restored members; apply.confirm comes after the
  # checks.
  case ${SC_FAULT:-} in
    apply-killed)
      # One node's apply killed at the seed's step, then its line again
      # (rb_run does what the fault says), and nothing lost.
      fault_pick_kill
      RB_KILL="$FAULT_NODE $FAULT_STEP" rb_run "$rb" apply.stop apply.start
      fault_check_killed "$label" ;;
    disk-full)
      # cp1's etcd disk, emptied into the backup by the first phase, is too
      # small for the new member: preflight refuses its second phase, which
      # changes nothing; room made, the same line again (as the runbook's
      # disk-full says).
      rb_run "$rb" apply.stop
      fault_disk_full cp1 "$label"
      RB_EXPECT_FAIL=cp1 rb_run "$rb" apply.start
      fault_disk_room cp1 "$label"
      rb_run "$rb" apply.start ;;
    deadline)
      # cp1's new kube-apiserver never becomes healthy (its port is taken
      # while its apply waits): its health gate fails; nobody confirms; every
      # node's --rollback-after timer rolls it back; then the fault's blocks
      # (the workers' rollback).
      rb_run "$rb" apply.stop
      fault_port_hold cp1 6443
      RB_EXPECT_FAIL=cp1 rb_run "$rb" apply.start
      fault_port_release cp1 6443
      grep -qx apply.start "$LAB_ROOT/fault-failed-cp1" 2>/dev/null || die "[fault deadline] cp1's apply passed its health gate with port 6443 taken"
      checks+=("PASS  [$label] fault deadline: cp1's health gate failed (port 6443 taken), as made")
      fault_wait_rolled_back "$label" 600
      checks+=("PASS  [$label] fault deadline: every control-plane node's --rollback-after timer rolled it back")
      RB_KUBECTL=cp1 RB_KUBECTL_ENV='export KUBECONFIG=/etc/kubernetes/admin.conf'
      for n in $CPS; do wait_for "[$label deadline] $n: node Ready" 240 node_ready "$n"; done
      # shellcheck disable=SC2086
      rb_run "$rb" $FAULT_RUN
      lab_apply hack/lab/manifests/workloads.yaml >/dev/null
      lab_wait_workloads "$label, rolled back by the deadline"
      return ;;
    *) rb_run "$rb" apply.stop apply.start ;;
  esac
  rb_kubectl "$rb"
  rb_run "$rb" kubectl.export
  if rb_has "$rb" workers-rejoin.join; then
    # workers-rejoin.wait waits (kubectl wait) until every worker is
    # NotReady: the node controller marks them so once their stopped
    # kubelets miss the grace period. workers-rejoin.kubeconfigs (for hosts
    # that run only kube-proxy or a CNI agent outside a pod): the lab has
    # none, its agents are DaemonSets.
    rb_run "$rb" workers-rejoin.wait workers-rejoin.join workers-rejoin.gate
  else
    rb_run "$rb" workers-start.kubelet workers-start.gate
  fi
  for n in $(up_nodes); do wait_for "[$label] $n: node Ready" 180 node_ready "$n"; done
  # A down worker's Node, Ready in the snapshot, turns NotReady once the
  # new node controller misses its heartbeat (cluster restart --down
  # refuses a Ready node).
  for n in $LAB_DOWN; do wait_for "[$label] $n (off): node NotReady" 240 node_not_ready "$n"; done
  if [ "${SC_FAULT:-}" = restart-stuck ]; then
    # The last worker cut off from the control plane through the restart:
    # the restart stops at a stage within its --timeout, saying which in
    # one line; the partition heals, the same block again finishes, and a
    # third run skips what is done.
    fault_restart_stuck "$label" "$rb"
  else
    rb_run "$rb" restart.run
  fi
  # The restart deletes bare pods ("the pods no controller restarts"): their
  # owner, here the lab, creates them again from its manifests.
  lab_apply hack/lab/manifests/workloads.yaml >/dev/null
  lab_wait_workloads "$label"
  rb_run "$rb" check.run apply.confirm   # node confirm, after the checks
  if [ -n "${SC_DOWN:-}" ]; then
    fault_worker_down_window "$label" "$rb"
    lab_apply hack/lab/manifests/workloads.yaml >/dev/null
    lab_wait_workloads "$label, $SC_DOWN back"
  fi
}

# lab_new_gone: the checks' Service prod/lab-new is not there.
# (Not a pipe into grep: under pipefail kubectl's exit 1 would fail it.)
lab_new_gone() { local out; if out=$(kc cp1 -n prod get svc lab-new 2>&1); then return 1; fi; grep -q NotFound <<< "$out"; }

# lab_rollback LABEL runbook|ansible: the runbook's section "Rollback", by
# the driver that migrated.
lab_rollback() { "lab_rollback_${2:-runbook}" "$1"; }

# lab_rollback_runbook LABEL: section "Rollback", every block.
lab_rollback_runbook() {
  local label=$1 rb=$LAB_ROOT/runbook-$1 n
  EVENTS_SINCE=$(date -u +%FT%TZ)
  rb_run "$rb" rollback.control-plane rollback.workers
  # "with the old cluster's kubeconfig, once the old control plane is back"
  RB_KUBECTL=cp1 RB_KUBECTL_ENV='export KUBECONFIG=/etc/kubernetes/admin.conf'
  for n in $CPS $WORKERS; do wait_for "[$label rollback] $n: node Ready" 180 node_ready "$n"; done
  rb_run "$rb" rollback.pods
  # The bare probe pod was deleted with the rest: its owner creates it again.
  lab_apply hack/lab/manifests/workloads.yaml >/dev/null
  lab_wait_workloads "$label rollback"
}

# lab_wait_workloads LABEL: every controller has all the pods it wants, Ready
# (ctl_pods_ready, not rollout status: after a restore or a pod deletion the
# controllers' status is stale for a while), the probe and every pod Ready.
lab_wait_workloads() {
  local n
  for n in $(up_nodes); do wait_for "[$1] $n: node Ready" 180 node_ready "$n"; done
  wait_for "[$1] kube-proxy on every node" 180 ctl_pods_ready kube-system ds/kube-proxy
  wait_for "[$1] kube-flannel on every node" 180 ctl_pods_ready kube-flannel ds/kube-flannel-ds
  wait_for "[$1] coredns available" 240 ctl_pods_ready kube-system deploy/coredns
  wait_for "[$1] web available" 180 ctl_pods_ready prod deploy/web
  wait_for "[$1] db available" 180 ctl_pods_ready prod sts/db
  wait_for "[$1] probe running" 120 kc cp1 -n prod wait pod/probe --for=condition=Ready --timeout=1s
  wait_for "[$1] every pod Ready" 120 all_pods_ready
}
