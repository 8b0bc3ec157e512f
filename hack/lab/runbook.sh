# The runbook, executed as written (issue 33 item 5; sourced by
# hack/lab/lab.sh after lib.sh): RUNBOOK.md is split into its steps and their
# fenced sh blocks, and each block runs, unchanged, where the runbook says:
# a line ending in "# on NODE" on that node (the worker blocks' "B=... # on w1"
# lines pick each worker's own line, the rest of the block runs on every
# worker), a block without one where its step says (the operator's machine,
# the workers, or where "Point kubectl" set KUBECONFIG). A line that fails
# fails the lab. The only things the lab provides are the operator's tools:
# ssh and scp that reach a node's namespaces, and a systemctl for the kubelet.

# rb_parse RUNBOOK DIR: DIR/steps ("K<TAB>title" per step, the header is step
# 0) and DIR/K.B.sh, block B of step K.
rb_parse() {
  rm -rf "$2"; mkdir -p "$2"
  python3 - "$1" "$2" <<'PY'
import re, sys, os
src, out = sys.argv[1], sys.argv[2]
k, title, b, block, steps = 0, "header", 0, None, []
steps.append((0, "header"))
for line in open(src):
    line = line.rstrip("\n")
    if block is not None:
        if line == "```":
            b += 1
            open(os.path.join(out, "%d.%d.sh" % (k, b)), "w").write("\n".join(block) + "\n")
            block = None
        else:
            block.append(line)
        continue
    if line == "```sh":
        block = []
        continue
    m = re.match(r"^## (?:(\d+)\. )?(.*)$", line)
    if m:
        k, b = (int(m.group(1)) if m.group(1) else (100 + len(steps))), 0
        steps.append((k, m.group(2)))
with open(os.path.join(out, "steps"), "w") as f:
    for k, t in steps:
        f.write("%d\t%s\n" % (k, t))
PY
}

# rb_step DIR PATTERN: the number of the step whose title matches PATTERN
# (an extended regex); empty when the runbook has none.
rb_step() { awk -F'\t' -v p="$2" '$2 ~ p {print $1; exit}' "$1/steps"; }
# rb_blocks DIR K: step K's block files, in order.
rb_blocks() { ls "$1/$2".*.sh 2>/dev/null | sort -t. -k2,2n; }
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

# rb_run DIR K DEFAULT [BLOCK...]: runs step K's blocks (all, or those
# numbered BLOCK) on the nodes their "# on" lines name, or on DEFAULT
# (admin, kubectl, workers). Blocks naming several nodes run on them at once
# (the runbook's "all at once"), each node's output in the lab log.
rb_run() {
  local dir=$1 k=$2 def=$3 f nodes n pids rc
  shift 3
  local only=" $* "
  [ -n "$k" ] || die "the runbook has no such step"
  for f in $(rb_blocks "$dir" "$k"); do
    local bn=${f##*/}; bn=${bn#*.}; bn=${bn%.sh}
    [ "$only" = "  " ] || [[ $only == *" $bn "* ]] || continue
    nodes=$(rb_targets "$f")
    if [ -z "$nodes" ]; then
      case $def in
        workers) nodes=$WORKERS ;;
        *) rb_on "$def" "$(cat "$f")" || die "runbook step $k, block $bn failed on $def"; continue ;;
      esac
    fi
    pids=()
    for n in $nodes; do
      rb_on "$n" "$(rb_lines_for "$n" "$f")" > "$LAB_ROOT/logs/runbook-$k.$bn-$n.log" 2>&1 &
      pids+=($!)
    done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    for n in $nodes; do cat "$LAB_ROOT/logs/runbook-$k.$bn-$n.log"; done
    [ $rc = 0 ] || die "runbook step $k, block $bn failed (on $(echo $nodes))"
  done
}

# rb_kubectl DIR: where the runbook's kubectl runs, from "Point kubectl at the
# new control plane": its export line "# on NODE", or the operator's machine.
rb_kubectl() {
  local k f line
  k=$(rb_step "$1" '^Point kubectl')
  f=$(rb_blocks "$1" "$k" | sed -n 1p)
  line=$(grep '^export KUBECONFIG=' "$f") || die "runbook: no export KUBECONFIG in step $k"
  RB_KUBECTL_ENV=${line%%#*}
  RB_KUBECTL=$(rb_targets "$f" | sed -n 1p)
  RB_KUBECTL=${RB_KUBECTL:-admin}
}
