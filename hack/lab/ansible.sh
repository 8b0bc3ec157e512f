# The window driven by the bundle's Ansible playbooks (issue 46; sourced by
# hack/lab/lab.sh after lib.sh and migrate.sh): the real ansible-playbook
# (Debian's ansible-core) on the operator's machine, over real SSH (Debian's
# openssh-server, one sshd in each node's namespaces, listening on the
# node's address only), with keys the lab makes, host keys pinned in a
# known_hosts file and no password. The inventory is the operator's own,
# kubespray-shaped: kube_control_plane, etcd, kube_node (listing the
# control-plane nodes too, as kubespray's do) and k8s_cluster.

LAB_SSH=$LAB_ROOT/ssh

# lab_ssh_keys: the operator's key, and the Ansible configuration that pins
# the nodes' host keys (known_hosts, filled by lab_sshd).
lab_ssh_keys() {
  command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || die "sshd is missing: apt-get install -y openssh-server (the lab's Ansible runs log in over SSH)"
  command -v ansible-playbook >/dev/null || die "ansible-playbook is missing: apt-get install -y --no-install-recommends ansible-core"
  mkdir -p "$LAB_SSH" "$LAB_ROOT/ansible"
  chmod 0700 "$LAB_SSH"
  [ -f "$LAB_SSH/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C snapshift-lab-operator -f "$LAB_SSH/id_ed25519"
  cp "$LAB_SSH/id_ed25519.pub" "$LAB_SSH/authorized_keys"
  chmod 0600 "$LAB_SSH/authorized_keys"
  : > "$LAB_SSH/known_hosts"
  mkdir -p "$LAB_ROOT/bin/ansible"
  local c
  for c in ssh scp sftp; do ln -sf "/usr/bin/$c" "$LAB_ROOT/bin/ansible/$c"; done
  cat > "$LAB_ROOT/ansible/ansible.cfg" <<EOF
[defaults]
private_key_file = $LAB_SSH/id_ed25519
host_key_checking = True
interpreter_python = /usr/bin/python3
local_tmp = $LAB_ROOT/ansible/tmp
remote_tmp = /tmp/.snapshift-lab-ansible
forks = 10
nocolor = True
retry_files_enabled = False
[ssh_connection]
ssh_executable = /usr/bin/ssh
transfer_method = sftp
ssh_args = -o UserKnownHostsFile=$LAB_SSH/known_hosts -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes -o BatchMode=yes -o ControlMaster=auto -o ControlPersist=60s
control_path_dir = $LAB_ROOT/ansible/cp
pipelining = True
EOF
}

# lab_sshd NODE: an sshd in NODE's namespaces, on its address, its own host
# key (pinned in known_hosts), root by the operator's key only; a session
# has the PATH and environment the node's tools need, as nodesh gives.
lab_sshd() {
  local n=$1 d=$LAB_SSH/$1 ip
  ip=$(nodeip "$n")
  mkdir -p "$d"
  [ -f "$d/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "$n" -f "$d/host_ed25519"
  cat > "$d/sshd_config" <<EOF
ListenAddress $ip
HostKey $d/host_ed25519
PidFile none
AuthorizedKeysFile $LAB_SSH/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
SetEnv PATH=/usr/local/bin:$LAB_ROOT/bin/node:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin LAB_NODE=$n LAB_ROOT=$LAB_ROOT CRI_CONFIG_FILE=$LAB_ROOT/bin/node/crictl.yaml
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
  nodeexec "$n" mkdir -p -m 0755 /run/sshd
  lab_start "$n" sshd /usr/sbin/sshd -D -e -f "$d/sshd_config"
  echo "$ip $(cut -d' ' -f1,2 "$d/host_ed25519.pub")" >> "$LAB_SSH/known_hosts"
  wait_for "$n: sshd answers" 30 adminsh "/usr/bin/ssh -F none -i $LAB_SSH/id_ed25519 -o UserKnownHostsFile=$LAB_SSH/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes root@$ip true"
}

# lab_inventory FILE: the operator's inventory, as kubespray writes one.
lab_inventory() {
  local n
  {
    echo "[kube_control_plane]"
    for n in $CPS; do echo "$n ansible_host=$(nodeip "$n")"; done
    echo; echo "[etcd]"
    for n in $CPS; do echo "$n"; done
    echo; echo "[kube_node]"
    for n in $CPS; do echo "$n"; done
    for n in $WORKERS; do echo "$n ansible_host=$(nodeip "$n")"; done
    echo; echo "[k8s_cluster:children]"; echo kube_control_plane; echo kube_node
    echo; echo "[all:vars]"; echo "ansible_user=root"
  } > "$1"
}

# lab_playbook LABEL PLAYBOOK: runs the bundle's PLAYBOOK with the lab's
# inventory from the operator's machine; its output in the lab log.
lab_playbook() {
  local label=$1 pb=$2 a=$LAB_ROOT/admin/$1 log=$LAB_ROOT/logs/$1-ansible-${2%.yml}.log rc=0 t
  lab_inventory "$a/inventory.ini"
  log "[$label] ansible-playbook -i inventory.ini $pb (the bundle's ansible/, over SSH)"
  t=$(date +%s)
  lab_phase "ansible:$pb" start
  # bin/ansible first: the real ssh, scp and sftp, not the operator
  # machine's stand-ins that the runbook-driven scenarios use. Its log
  # file (ANSIBLE_LOG_PATH) stamps each task: the window's phases.
  adminsh "export ANSIBLE_CONFIG=$LAB_ROOT/ansible/ansible.cfg ANSIBLE_HOME=$LAB_ROOT/ansible PATH=$LAB_ROOT/bin/ansible:\$PATH ANSIBLE_LOG_PATH=$log.stamped
cd '$a/bundle/ansible' && ansible-playbook -i '$a/inventory.ini' -e snapshift_binary='$repo/bin/snapshift' $pb" > "$log" 2>&1 || rc=$?
  lab_phase "ansible:$pb" end
  lab_ansible_phases "$log.stamped" >> "$LAB_ROOT/logs/probes/phases.jsonl" || true
  sed -n '/^PLAY RECAP/,$p' "$log"
  if [ "${LAB_PLAYBOOK_FAILS:-}" = 1 ]; then
    # A fault scenario: the playbook must fail (and say why).
    [ $rc != 0 ] || die "[$label] ansible-playbook $pb passed, and the scenario's fault should have failed it"
    log "[$label] $pb failed (exit $rc), as the fault makes it, in $(( $(date +%s) - t ))s"
    return 0
  fi
  [ $rc = 0 ] || { tail -40 "$log"; die "[$label] ansible-playbook $pb failed (exit $rc; log: $log)"; }
  log "[$label] $pb passed in $(( $(date +%s) - t ))s"
}

# lab_window_ansible LABEL: the window by migrate.yml, then what the lab
# does as the bare pods' owner (it creates them again), then the lab waits.
lab_window_ansible() {
  local label=$1 w
  if [ "${SC_FAULT:-}" = apply-failed ]; then
    # cp3's part of the bundle changes once its first phase has made its
    # backup: its second phase's preflight refuses it; migrate.yml rolls
    # every control-plane node back and fails. Then what the fault says:
    # its blocks (rollback.control-plane, rollback.workers, rollback.pods:
    # rollback.yml).
    fault_change_after_backup cp3 "$label" & w=$!
    LAB_PLAYBOOK_FAILS=1 lab_playbook "$label" migrate.yml
    kill "$w" 2>/dev/null || true; wait "$w" 2>/dev/null || true
    [ -e "$LAB_ROOT/fault-changed" ] || die "[fault apply-failed] cp3's bundle never changed: the fault did not happen"
    local m=$LAB_ROOT/logs/$label-ansible-migrate.log
    grep -q "rollback.control-plane: one of the applies failed" "$m" && grep -q "every control-plane node was rolled back" "$m" ||
      die "[fault apply-failed] migrate.yml failed without rolling every control-plane node back (log: $m)"
    checks+=("PASS  [$label] fault apply-failed: $(cat "$LAB_ROOT/fault-changed") changed after its backup; migrate.yml refused it and rolled every control-plane node back")
    log "[$label] the fault's blocks ($FAULT_RUN): rollback.yml"
    lab_playbook "$label" rollback.yml
    lab_apply hack/lab/manifests/workloads.yaml >/dev/null
    lab_wait_workloads "$label, rolled back"
    return
  fi
  lab_playbook "$label" migrate.yml
  lab_apply hack/lab/manifests/workloads.yaml >/dev/null
  lab_wait_workloads "$label"
}

# lab_rollback_ansible LABEL: section "Rollback" by rollback.yml.
lab_rollback_ansible() {
  local label=$1
  EVENTS_SINCE=$(date -u +%FT%TZ)
  lab_playbook "$label" rollback.yml
  lab_apply hack/lab/manifests/workloads.yaml >/dev/null
  lab_wait_workloads "$label rollback"
}

# lab_ansible_phases LOG: the tasks of an ansible-playbook log file (its
# lines stamped "YYYY-mm-dd HH:MM:SS,mmm p=PID u=USER n=ansible | ..."), as
# the window's phases: "task:<block ID>" from its TASK line to the next.
lab_ansible_phases() {
  python3 - "$1" <<'PY'
import json, re, sys, time
cur = None
def stamp(l):
    m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})", l)
    return int(time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) * 1000) + int(m.group(2)) if m else None
for line in open(sys.argv[1], errors="replace"):
    t = stamp(line)
    if t is None:
        continue
    m = re.search(r"\| (TASK \[([^\]:]+)|PLAY )", line)
    if not m:
        continue
    if cur:
        print(json.dumps({"t": t, "phase": cur, "event": "end"}))
        cur = None
    if m.group(2) and not m.group(2).startswith("guard"):
        cur = "task:" + m.group(2)
        print(json.dumps({"t": t, "phase": cur, "event": "start"}))
PY
}
