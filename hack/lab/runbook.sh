# The runbook, executed as written (issue 33 item 5, issue 46; sourced by
# hack/lab/lab.sh after lib.sh): the bundle's runbook.json, RUNBOOK.md's one
# source, gives each step and block an ID and says where a block runs; each
# block runs, unchanged, there: a line ending in "# on NODE" on that node
# (the worker blocks' "B=... # on w1" lines pick each worker's own line, the
# rest of the block runs on every worker), the rest where the block says
# (the operator's machine, the workers, the control-plane nodes, or where
# block kubectl.export set KUBECONFIG). A line that fails
# fails the lab. The only things the lab provides are the operator's tools:
# ssh and scp that reach a node's namespaces, and a systemctl for the kubelet.

# rb_parse RUNBOOK_JSON DIR: the bundle's runbook.json (RUNBOOK.md's one
# source) as files: DIR/steps ("ID<TAB>title" per step), DIR/blocks
# ("ID<TAB>where" per block, in order) and DIR/ID.sh, each block's lines;
# a step's gate is block "<step>.gate", its command.
# The lab finds every step and block by its ID, never by a title.
rb_parse() {
  rm -rf "$2"; mkdir -p "$2"
  python3 - "$1" "$2" <<'PY'
import json, os, sys
rb, out = json.load(open(sys.argv[1])), sys.argv[2]
assert rb["kind"] == "Runbook", rb["kind"]
with open(os.path.join(out, "steps"), "w") as steps, open(os.path.join(out, "blocks"), "w") as blocks:
    for s in rb["steps"]:
        steps.write("%s\t%s\n" % (s["id"], s["title"]))
        for it in s["items"]:
            b = it.get("block")
            if b:
                blocks.write("%s\t%s\n" % (b["id"], b["where"]))
                open(os.path.join(out, b["id"] + ".sh"), "w").write("".join(l["text"] + "\n" for l in b["lines"]))
        # A step's gate (what must hold before the next step) runs as
        # block "<step>.gate", where the gate says.
        # Section "When something goes wrong": DIR/faults, "ID<TAB>endsIn<TAB>blocks".
        for f in s.get("faults", []):
            open(os.path.join(out, "faults"), "a").write("%s\t%s\t%s\n" % (f["id"], f["endsIn"], " ".join(f.get("run", []))))
        g = s.get("gate")
        if g:
            blocks.write("%s.gate\t%s\n" % (s["id"], g["where"]))
            open(os.path.join(out, s["id"] + ".gate.sh"), "w").write(g["command"] + "\n")
PY
}

# rb_fault DIR ID: the fault's end state and blocks ("new|old<TAB>ID ID..."),
# from section "When something goes wrong"; fails when it has no such fault.
rb_fault() { awk -F'\t' -v id="$2" '$1 == id {print $2 "\t" $3; f=1} END {exit !f}' "$1/faults"; }
# rb_has DIR ID: the runbook has block ID.
rb_has() { awk -F'\t' -v id="$2" '$1 == id {f=1} END {exit !f}' "$1/blocks"; }
# rb_where DIR ID: where block ID runs.
rb_where() { awk -F'\t' -v id="$2" '$1 == id {print $2}' "$1/blocks"; }
# rb_targets FILE: the nodes the block's "# on NODE" comments name.
rb_targets() { { grep -oE '# on [A-Za-z0-9.-]+' "$1" || true; } | awk '{print $3}' | awk '!seen[$0]++'; }
# rb_lines_for NODE FILE: the block as NODE runs it: its lines without
# "# on", and those "# on NODE".
rb_lines_for() {
  awk -v n="$1" '{ if (match($0, /# on [A-Za-z0-9.-]+/)) { w = substr($0, RSTART + 5, RLENGTH - 5); if (w == n) print } else print }' "$2"
}

# rb_on NODE|admin|kubectl SCRIPT: runs SCRIPT there, logged to the lab log.
rb_on() {
  local where=$1 script=$2
  case $where in
    kubectl) where=$RB_KUBECTL; script="$RB_KUBECTL_ENV
$script" ;;
  esac
  log "runbook on $where:"
  sed 's/^/    | /' <<< "$2"
  if [ "$where" = admin ]; then adminsh "$script"; else nodesh "$where" "$script"; fi
}

# rb_script FILE: the block as the lab runs it where kubectl points or on
# the operator's machine: with RB_ONLY (a late worker), only the lines
# without "# on" and those "# on RB_ONLY"; with LAB_DOWN (the workers off
# through the window, fault worker-down), snapshift cluster restart and
# check get --down and a gate names the nodes that are up, as the
# runbook's worker-down says.
rb_script() {
  local s
  if [ -n "${RB_ONLY:-}" ]; then s=$(rb_lines_for "$RB_ONLY" "$1"); else s=$(cat "$1"); fi
  if [ -n "${LAB_DOWN:-}" ]; then
    # and a gate waits for the nodes that are up, not --all (the runbook's
    # worker-down says so).
    local up; up=$(up_nodes | sed 's#^#node/#' | tr '\n' ' ')
    s=$(sed -E -e "s#^(snapshift cluster (restart|check) --bundle [^ ]+)#\1 --down $(tr ' ' ',' <<< "$LAB_DOWN")#" \
      -e "s#^kubectl wait node --all #kubectl wait ${up}#" <<< "$s")
  fi
  printf '%s\n' "$s"
}

# rb_nodes NODES: the nodes a node block runs on: with RB_ONLY that one (if
# among them), else those not in LAB_DOWN.
rb_nodes() {
  local n
  for n in $1; do
    if [ -n "${RB_ONLY:-}" ]; then
      if [ "$n" = "$RB_ONLY" ]; then echo "$n"; fi
    elif ! is_down "$n"; then
      echo "$n"
    fi
  done
}

# rb_run DIR ID...: runs each block, in the order given, where runbook.json
# says: the operator's machine, where kubectl points, or on nodes (the
# control-plane nodes or the workers: those its "# on" lines name, else
# all of them; see rb_nodes), each node its own lines, all at once, each
# node's output in the lab log.
rb_run() {
  local dir=$1 id f where nodes n pids rc
  shift
  for id in "$@"; do
    f=$dir/$id.sh
    [ -f "$f" ] || die "runbook.json has no block $id"
    where=$(rb_where "$dir" "$id")
    lab_phase "block:$id" start
    case $where in
      operator) rb_on admin "$(rb_script "$f")" || die "runbook block $id failed on the operator's machine"; lab_phase "block:$id" end; continue ;;
      kubectl)
        if rb_on kubectl "$(rb_script "$f")" > "$LAB_ROOT/logs/runbook-$id-kubectl.log" 2>&1; then
          cat "$LAB_ROOT/logs/runbook-$id-kubectl.log"
        elif [ "${RB_EXPECT_FAIL:-}" = kubectl ]; then
          cat "$LAB_ROOT/logs/runbook-$id-kubectl.log"
          log "[fault] block $id failed where kubectl points, as the scenario made it"
          echo "$id" >> "$LAB_ROOT/fault-failed-kubectl"
        else
          cat "$LAB_ROOT/logs/runbook-$id-kubectl.log"; die "runbook block $id failed where kubectl points ($RB_KUBECTL)"
        fi
        lab_phase "block:$id" end; continue ;;
      control-plane) nodes=$(rb_targets "$f"); nodes=${nodes:-$CPS} ;;
      workers) nodes=$(rb_targets "$f"); nodes=${nodes:-$WORKERS} ;;
      *) die "runbook block $id runs at '$where', which the lab cannot run" ;;
    esac
    nodes=$(rb_nodes "$nodes")
    [ -n "$nodes" ] || { log "runbook block $id: none of its nodes is up (${LAB_DOWN:+down: $LAB_DOWN}${RB_ONLY:+only $RB_ONLY}): skipped"; lab_phase "block:$id" end; continue; }
    pids=() killer=
    for n in $nodes; do
      rb_on "$n" "$(rb_lines_for "$n" "$f")" > "$LAB_ROOT/logs/runbook-$id-$n.log" 2>&1 &
      pids+=($!)
      # Fault apply-killed (hack/lab/faults.sh): SIGKILL to this node's
      # node apply at the step the seed chose, once.
      if [ -n "${RB_KILL:-}" ] && [ "$n" = "${RB_KILL%% *}" ] && [ ! -e "$LAB_ROOT/fault-killed" ]; then
        fault_kill_at "$n" "${RB_KILL#* }" "$LAB_ROOT/logs/runbook-$id-$n.log" & killer=$!
      fi
    done
    local failed=() i=0
    for p in "${pids[@]}"; do wait "$p" || failed+=("$(echo $nodes | cut -d' ' -f$((i + 1)))"); i=$((i + 1)); done
    [ -z "$killer" ] || { kill "$killer" 2>/dev/null || true; wait "$killer" 2>/dev/null || true; }
    for n in $nodes; do cat "$LAB_ROOT/logs/runbook-$id-$n.log"; done
    for n in "${failed[@]}"; do
      if [ -e "$LAB_ROOT/fault-killed" ] && [ "$(cut -d' ' -f1 "$LAB_ROOT/fault-killed")" = "$n" ] && [ ! -e "$LAB_ROOT/fault-rerun" ]; then
        # What section "When something goes wrong" says for apply-killed:
        # the same line again, on that node.
        touch "$LAB_ROOT/fault-rerun"
        log "[fault apply-killed] $n's node apply was killed ($(cat "$LAB_ROOT/fault-killed")): its line of block $id again, as the runbook says"
        rb_on "$n" "$(rb_lines_for "$n" "$f")" > "$LAB_ROOT/logs/runbook-$id-$n-again.log" 2>&1 || { cat "$LAB_ROOT/logs/runbook-$id-$n-again.log"; die "runbook block $id failed again on $n after the kill"; }
        cat "$LAB_ROOT/logs/runbook-$id-$n-again.log"
      elif [ "$n" = "${RB_EXPECT_FAIL:-}" ]; then
        log "[fault] block $id failed on $n, as the scenario made it"
        echo "$id" >> "$LAB_ROOT/fault-failed-$n"
      else
        die "runbook block $id failed (on ${failed[*]})"
      fi
    done
    lab_phase "block:$id" end
  done
}

# rb_kubectl DIR: where the runbook's kubectl runs, from block kubectl.export:
# its export line, on the node its "# on" names or the operator's machine.
rb_kubectl() {
  local f=$1/kubectl.export.sh line
  line=$(grep '^export KUBECONFIG=' "$f") || die "runbook: no export KUBECONFIG in block kubectl.export"
  RB_KUBECTL_ENV=${line%%#*}
  RB_KUBECTL=$(rb_targets "$f" | sed -n 1p)
  RB_KUBECTL=${RB_KUBECTL:-admin}
}
