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
  [ -n "$ip" ] || { echo "no web pod off w1"; return 1; }
  probe_exec http "http://$ip:8080/"
}

# checks_cluster LABEL POD_CIDR SVC_CIDR API_IP DNS_IP
checks_cluster() {
  local l=$1 pods=$2 svcs=$3 api=$4 dns=$5
  check "$l: nodes Ready, podCIDR in $pods" c_nodes_cidr "$pods"
  check "$l: pod IPs in $pods" c_pod_ips "$pods"
  check "$l: kubernetes.default at $api" c_svc_ip default kubernetes "$api"
  check "$l: kube-dns at $dns" c_svc_ip kube-system kube-dns "$dns"
  check "$l: DNS web.prod from the probe (w1)" c_dns_web
  check "$l: HTTP through the web VIP" c_http_vip
  check "$l: HTTP through the NodePort on w2" c_http_nodeport w2
  check "$l: pod to pod across nodes" c_pod_to_pod
}
