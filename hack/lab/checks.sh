# The lab's checks from inside the cluster (issue 33, items 4 and 6), each a
# named assertion; sourced by hack/lab/lab.sh (check, kc from there).

in_cidr() { # ADDR CIDR (IPv4)
  python3 - "$1" "$2" <<'PY'
import ipaddress, sys
sys.exit(0 if ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]) else 1)
PY
}
# probe_exec ARGS...: the probe pod's checks (it runs on w1).
probe_exec() { kc cp1 -n prod exec probe -- /usr/local/bin/probe "$@"; }

c_nodes_cidr() { # every Node Ready with its podCIDR in the range
  local cidr=$1 line
  while read -r line; do
    set -- $line
    [ "$2" = True ] || { echo "node $1 not Ready"; return 1; }
    in_cidr "${3%/*}" "$cidr" || { echo "node $1 podCIDR $3 is not in $cidr"; return 1; }
  done < <(kc cp1 get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.spec.podCIDR}{"\n"}{end}')
}
c_pod_ips() { # every non-host-network pod's IP in the range
  local cidr=$1 line n=0
  while read -r line; do
    set -- $line
    [ "$2" = hostNetwork=true ] && continue
    [ -n "${3:-}" ] || { echo "pod $1 has no IP"; return 1; }
    in_cidr "$3" "$cidr" || { echo "pod $1 has $3, not in $cidr"; return 1; }
    n=$((n + 1))
  done < <(kc cp1 get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} hostNetwork={.spec.hostNetwork} {.status.podIP}{"\n"}{end}')
  echo "$n pods"
}
c_svc_ip() { # NAMESPACE NAME WANT
  local got; got=$(kc cp1 -n "$1" get svc "$2" -o jsonpath='{.spec.clusterIP}')
  [ "$got" = "$3" ] || { echo "service $1/$2 is at $got, want $3"; return 1; }
}
c_dns_web() { # DNS answers web.prod.svc.cluster.local with its VIP
  local vip got; vip=$(kc cp1 -n prod get svc web -o jsonpath='{.spec.clusterIP}')
  got=$(probe_exec dns web.prod.svc.cluster.local) || return 1
  [ "$got" = "$vip" ] || { echo "web.prod.svc.cluster.local is $got, want $vip"; return 1; }
}
c_http_vip() {
  local vip; vip=$(kc cp1 -n prod get svc web -o jsonpath='{.spec.clusterIP}')
  probe_exec http "http://$vip/" && probe_exec http http://web.prod.svc.cluster.local/
}
c_http_nodeport() { probe_exec http "http://$(nodeip "$1"):30080/"; }
c_pod_to_pod() { # from w1's probe to a web pod on another node
  local ip; ip=$(kc cp1 -n prod get pods -l app=web -o jsonpath='{range .items[?(@.spec.nodeName!="w1")]}{.status.podIP}{"\n"}{end}' | head -1)
  if [ -z "$ip" ]; then
    # Both on w1 (the control plane is tainted, and a worker that was down
    # through the window had its pods moved there): a web pod of the
    # check's own on the other worker.
    local other; other=$(for w in $WORKERS; do [ "$w" = w1 ] || echo "$w"; done | head -1)
    kc cp1 -n prod delete pod lab-p2p --ignore-not-found --wait=true >/dev/null
    kc cp1 -n prod run lab-p2p --image="$WEB_IMAGE" --restart=Never --overrides="{\"spec\":{\"nodeName\":\"$other\"}}" >/dev/null || return 1
    kc cp1 -n prod wait pod/lab-p2p --for=condition=Ready --timeout=90s >/dev/null || { echo "no web pod off w1, and pod lab-p2p on $other not Ready"; return 1; }
    ip=$(kc cp1 -n prod get pod lab-p2p -o jsonpath='{.status.podIP}')
    probe_exec http "http://$ip:8080/"; local rc=$?
    kc cp1 -n prod delete pod lab-p2p --grace-period=0 --wait=false >/dev/null
    return $rc
  fi
  probe_exec http "http://$ip:8080/"
}

c_proxy_rules() { # every node's kube-proxy ruleset: each Service VIP, no address of OLD_SVC
  local old=$1 n vips v rules bad
  vips=$(kc cp1 get svc -A -o jsonpath='{range .items[*]}{.spec.clusterIP}{"\n"}{end}' | grep -v None)
  for n in $CPS $WORKERS; do
    rules=$(nodeexec "$n" nft list table ip kube-proxy) || { echo "$n: no nft table ip kube-proxy"; return 1; }
    for v in $vips; do grep -qF "$v" <<< "$rules" || { echo "$n: kube-proxy has no rule for $v"; return 1; }; done
    bad=$(grep -oE '([0-9]+\.){3}[0-9]+' <<< "$rules" | sort -u | while read -r a; do if in_cidr "$a" "$old"; then echo "$a"; fi; done)
    [ -z "$bad" ] || { echo "$n: kube-proxy still has $(echo $bad) of $old"; return 1; }
  done
  echo "$(wc -w <<< "$vips") VIPs on $(wc -w <<< "$CPS $WORKERS") nodes"
}
c_cni_addrs() { # every node's flannel.1 and cni0 hold addresses of POD_CIDR only
  local pods=$1 n dev a
  for n in $CPS $WORKERS; do
    for dev in flannel.1 cni0; do
      for a in $(nodeexec "$n" ip -4 -o addr show dev "$dev" | awk '{print $4}'); do
        in_cidr "${a%/*}" "$pods" || { echo "$n: $dev has $a, not in $pods"; return 1; }
      done
    done
  done
}
# c_no_ip_events: no ClusterIPOutOfRange / ClusterIPNotAllocated event made
# since EVENTS_SINCE (RFC 3339, UTC): since the old cluster was up, or since
# the migration or rollback began, as snapshift cluster check counts them
# ("since the bundle was made"). Events live an hour and a snapshot carries
# them: the three-apiserver lab's bootstrap race ("Cluster IP 192.168.0.1 is
# not allocated; repairing", from one apiserver's repair controller) came back
# with the restored etcd and is no finding about the migration.
EVENTS_SINCE=${EVENTS_SINCE:-$(date -u +%FT%TZ)}
c_no_ip_events() {
  local e
  e=$(kc cp1 get events -A -o jsonpath='{range .items[*]}{.metadata.creationTimestamp} {.reason} {.involvedObject.namespace}/{.involvedObject.name}{"\n"}{end}' |
    awk -v since="$EVENTS_SINCE" '$1 >= since && $2 ~ /^ClusterIP(OutOfRange|NotAllocated)$/ {print $2, $3}') || true
  [ -z "$e" ] || { echo "events since $EVENTS_SINCE: $(echo $e)"; return 1; }
}
c_new_objects() { # a Service and a pod created now get addresses in the ranges
  local svcs=$1 pods=$2 ip pip
  kc cp1 -n prod delete svc lab-new pod lab-new --ignore-not-found --wait=true >/dev/null
  kc cp1 -n prod create service clusterip lab-new --tcp=80:8080 >/dev/null || return 1
  ip=$(kc cp1 -n prod get svc lab-new -o jsonpath='{.spec.clusterIP}')
  LAB_NEW_IP=$ip
  in_cidr "$ip" "$svcs" || { echo "new Service at $ip, not in $svcs"; return 1; }
  kc cp1 -n prod run lab-new --image="$WEB_IMAGE" --restart=Never >/dev/null || return 1
  kc cp1 -n prod wait pod/lab-new --for=condition=Ready --timeout=90s >/dev/null || { echo "pod lab-new not Ready"; return 1; }
  pip=$(kc cp1 -n prod get pod lab-new -o jsonpath='{.status.podIP}')
  in_cidr "$pip" "$pods" || { echo "new pod at $pip, not in $pods"; return 1; }
  kc cp1 -n prod delete svc lab-new --wait=false >/dev/null; kc cp1 -n prod delete pod lab-new --grace-period=0 --wait=false >/dev/null
  echo "Service $ip, pod $pip"
}

# c_control_plane: every control-plane node's kube-apiserver ready at its own
# address; etcd has one started member per control-plane node, every one
# healthy, and all of them the same hash of the keyspace at one revision.
ETCDCTL_LAB='etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key'
c_control_plane() {
  local n members rev hashes
  for n in $CPS; do
    kc cp1 --server "https://$(nodeip "$n"):6443" get --raw /readyz >/dev/null || { echo "$n: kube-apiserver not ready"; return 1; }
  done
  members=$(nodesh cp1 "$ETCDCTL_LAB member list -w simple" | awk -F', ' '$2 == "started" {print $3}' | sort | tr '\n' ' ')
  [ "$members" = "$(tr ' ' '\n' <<< "$CPS" | sort | tr '\n' ' ')" ] || { echo "etcd members started: $members, want $CPS"; return 1; }
  nodesh cp1 "$ETCDCTL_LAB endpoint health --cluster" >/dev/null || { echo "etcd: a member is unhealthy"; return 1; }
  rev=$(nodesh cp1 "$ETCDCTL_LAB endpoint status -w json" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
  hashes=$(nodesh cp1 "$ETCDCTL_LAB endpoint hashkv --cluster --rev $rev -w json" |
    python3 -c 'import json,sys; h=[e["HashKV"]["hash"] for e in json.load(sys.stdin)]; print(len(h), *sorted(set(h)))')
  [ "$(wc -w <<< "$hashes")" = 2 ] && [ "${hashes%% *}" = "$(wc -w <<< "$CPS")" ] ||
    { echo "etcd at revision $rev: members and their hashes: $hashes"; return 1; }
  echo "$(wc -w <<< "$CPS") apiservers ready; etcd members $members healthy, one hash at revision $rev"
}

# etcd_cluster_id NODE: the cluster ID of NODE's etcd member, in etcd's hex
# form (as report.json and etcd's log write it).
etcd_cluster_id() {
  nodesh "$1" "$ETCDCTL_LAB endpoint status -w json" |
    python3 -c 'import json,sys; print("%x" % json.load(sys.stdin)[0]["Status"]["header"]["cluster_id"])'
}
# c_etcd_cluster WANT NOT: every control-plane node's etcd member is in
# cluster WANT (empty: any) and not in cluster NOT (issue 45: a restored
# member that joined the old cluster has the old cluster's ID).
c_etcd_cluster() {
  local n id ids=""
  for n in $CPS; do
    id=$(etcd_cluster_id "$n") || { echo "$n: etcd endpoint status failed"; return 1; }
    [ -z "$1" ] || [ "$id" = "$1" ] || { echo "$n: etcd cluster $id, want $1"; return 1; }
    [ "$id" != "$2" ] || { echo "$n: etcd cluster $id is the other cluster's"; return 1; }
    ids="$ids $n=$id"
  done
  echo "etcd cluster IDs:$ids (not $2)"
}
# c_no_lab_new: the Service prod/lab-new that the last state's checks made
# and deleted before the snapshot is not there (issue 45: it came back,
# with its old uid and address, when a restored member took the old
# cluster's log), nor an IPAddress of its old address.
c_no_lab_new() {
  local out
  out=$(kc cp1 -n prod get svc lab-new -o jsonpath='{.metadata.uid} {.spec.clusterIP}' 2>&1) &&
    { echo "Service prod/lab-new is back: $out"; return 1; }
  grep -q NotFound <<< "$out" || { echo "$out"; return 1; }
  if [ -n "${LAB_NEW_IP:-}" ] && kc cp1 get ipaddresses.networking.k8s.io "$LAB_NEW_IP" >/dev/null 2>&1; then
    echo "IPAddress $LAB_NEW_IP of the deleted lab-new is back"; return 1
  fi
  echo "absent${LAB_NEW_IP:+ (and no IPAddress $LAB_NEW_IP)}"
}

# retry CMD...: CMD, up to 4 times 5 s apart: a data-plane path converges
# (endpoints, kube-proxy's next sync) within seconds of a restart.
retry() {
  local i
  for i in 1 2 3; do "$@" && return 0; sleep 5; done
  "$@"
}

# checks_cluster LABEL POD_CIDR SVC_CIDR API_IP DNS_IP [OLD_SVC_CIDR]
# (ETCD_WANT, ETCD_NOT: the etcd cluster ID the state must have and must
# not have; empty for the old cluster before any migration)
checks_cluster() {
  local l=$1 pods=$2 svcs=$3 api=$4 dns=$5
  check "$l: nodes Ready, podCIDR in $pods" c_nodes_cidr "$pods"
  [ "$CPS" = cp1 ] || check "$l: every apiserver ready, etcd members healthy and equal" retry c_control_plane
  [ -z "${ETCD_NOT:-}" ] || check "$l: etcd cluster ${ETCD_WANT:-any}, not ${ETCD_NOT}" c_etcd_cluster "${ETCD_WANT:-}" "$ETCD_NOT"
  [ -z "${ETCD_NOT:-}" ] || check "$l: the Service deleted before the snapshot (prod/lab-new) stays deleted" c_no_lab_new
  check "$l: pod IPs in $pods" c_pod_ips "$pods"
  check "$l: kubernetes.default at $api" c_svc_ip default kubernetes "$api"
  check "$l: kube-dns at $dns" c_svc_ip kube-system kube-dns "$dns"
  check "$l: DNS web.prod from the probe (w1)" retry c_dns_web
  check "$l: HTTP through the web VIP" retry c_http_vip
  check "$l: HTTP through the NodePort on w2" retry c_http_nodeport w2
  check "$l: pod to pod across nodes" retry c_pod_to_pod
  check "$l: flannel.1 and cni0 on every node only in $pods" c_cni_addrs "$pods"
  [ -n "${6:-}" ] && check "$l: kube-proxy has every VIP, none of $6" c_proxy_rules "$6"
  check "$l: no new ClusterIPOutOfRange/NotAllocated events" c_no_ip_events
  check "$l: a new Service and pod get addresses in $svcs, $pods" c_new_objects "$svcs" "$pods"
}
