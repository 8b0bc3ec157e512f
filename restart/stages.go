package restart

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// Stage is one step of the restart: its actions run in order, each waited
// for, and the next stage starts only when all are done.
type Stage struct {
	// Name is the stage's short name (cni, kube-proxy, dns, node-local-dns,
	// webhook-backends, workloads, webhooks); Title says it in words.
	Name  string `json:"name"`
	Title string `json:"title"`
	// Notes are what the operator must know about it (no action).
	Notes   []string `json:"notes,omitempty"`
	Actions []Action `json:"actions"`
}

// The action types.
const (
	// ActRestart is `kubectl rollout restart` and `rollout status`: the
	// pod template's restartedAt annotation set, then the rollout waited
	// for.
	ActRestart = "restart"
	// ActDeletePods deletes pods no controller of the snapshot restarts.
	ActDeletePods = "delete-pods"
	// ActDNSHandover moves the cluster DNS Service to the bridge's address.
	ActDNSHandover = "dns-handover"
	// ActWebhookFail sets a webhook the rebuild set to Ignore back to Fail.
	ActWebhookFail = "webhook-fail"
	// ActOutOfService taints a Node that is down through the window with
	// node.kubernetes.io/out-of-service (Name: the Node).
	ActOutOfService = "out-of-service"
)

// OutOfServiceValue is the value ActOutOfService gives Kubernetes'
// out-of-service taint (node.kubernetes.io/out-of-service, NoExecute: the
// non-graceful node shutdown of Kubernetes' docs). With it on a NotReady
// Node, the pod garbage collector force-deletes the Node's terminating
// pods, so that a StatefulSet's pod or a volume held there can start
// elsewhere, and the pods that do not tolerate it are evicted.
const OutOfServiceValue = "nodeshutdown"

// OutOfServiceKey is the taint's key (core/v1's TaintNodeOutOfService).
const OutOfServiceKey = "node.kubernetes.io/out-of-service"

// OutOfServiceTaint is that taint as kubectl writes it.
const OutOfServiceTaint = OutOfServiceKey + "=" + OutOfServiceValue + ":NoExecute"

// DownStage is the stage `cluster restart --down` runs first: each Node
// that is down through the window gets the out-of-service taint, and no
// rollout after waits for it.
func DownStage(nodes []string) Stage {
	st := Stage{Name: "down", Title: "Nodes down through the window: out of service"}
	for _, n := range nodes {
		st.Actions = append(st.Actions, Action{Type: ActOutOfService, Name: n})
	}
	return st
}

// Action is one typed step of a stage.
type Action struct {
	Type string `json:"type"`
	// Restart: the controller. DeletePods: Namespace. Handover: the DNS
	// Service's namespace and name.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Selector  string `json:"selector,omitempty"`
	Role      string `json:"role,omitempty"`
	// Pods are the pods to delete (names in Namespace).
	Pods []string `json:"pods,omitempty"`
	// Why says why (delete-pods: whose pods they are).
	Why string `json:"why,omitempty"`
	// Handover: the bridge Service (namespace/name), the DNS Service's
	// old address and its final one (the bridge's, the kubelets'
	// clusterDNS).
	Bridge     string `json:"bridge,omitempty"`
	OldAddress string `json:"oldAddress,omitempty"`
	Address    string `json:"address,omitempty"`
	// Webhook: the webhook set back to Fail.
	Webhook *Webhook `json:"webhook,omitempty"`
}

// Ref is kubectl's name of a restart action's controller.
func (a Action) Ref() string {
	return Workload{Kind: a.Kind, Name: a.Name}.Ref()
}

// Plan is the staged restart of a cluster, from what its bundle knows.
// Stages without actions are left out, but a CNI the snapshot shows with
// nothing to restart is said in a note.
func Plan(in Input) []Stage {
	byStage := map[int][]Workload{}
	for _, w := range in.Workloads {
		s := StageOf(w.Role)
		if s == StageRest && len(w.Backs) > 0 {
			s = stageBackends
		}
		byStage[s] = append(byStage[s], w)
	}
	for s := range byStage {
		sortWorkloads(byStage[s])
	}
	pods := podsByStage(in)
	var out []Stage
	add := func(st Stage) {
		if len(st.Actions) > 0 || len(st.Notes) > 0 {
			out = append(out, st)
		}
	}
	cni := Stage{Name: "cni", Title: "the CNI, in its documented order"}
	for _, s := range []int{StageCNIOperator, StageCNIAgent, StageCNIControl} {
		cni.Actions = append(cni.Actions, restarts(byStage[s])...)
		cni.Actions = append(cni.Actions, pods[s]...)
	}
	if len(cni.Actions) == 0 && len(in.CNI) > 0 {
		cni.Notes = append(cni.Notes, fmt.Sprintf("the snapshot shows %s but holds no DaemonSet, Deployment or pod of it that snapshift recognises: restart its agents by hand first", strings.Join(in.CNI, ", ")))
	}
	add(cni)
	add(Stage{Name: "kube-proxy", Title: "kube-proxy", Actions: append(restarts(byStage[StageKubeProxy]), pods[StageKubeProxy]...)})
	add(dnsStage(in, byStage[StageDNS], pods[StageDNS]))
	nld := Stage{Name: "node-local-dns", Title: "NodeLocal DNSCache (its Corefile and args name the cluster DNS address)",
		Actions: append(restarts(byStage[StageNodeLocal]), pods[StageNodeLocal]...)}
	// With a DNS bridge, the node-local-dns rule named the bridge's
	// address (kube-dns's after the handover) in its ConfigMap and
	// DaemonSet, never the kept one the handover releases: nothing to say.
	add(nld)
	add(backendStage(in, byStage[stageBackends], pods[stageBackends]))
	rest := Stage{Name: "workloads", Title: "every other workload: the pods no controller restarts first, then each controller"}
	rest.Actions = append(pods[StageRest], restarts(byStage[StageRest])...)
	add(rest)
	add(webhookStage(in))
	return out
}

// stageBackends groups the webhooks' backends (the stage between NodeLocal
// DNS and the rest; not a role's stage).
const stageBackends = 100

func sortWorkloads(ws []Workload) {
	sort.SliceStable(ws, func(i, j int) bool {
		if ws[i].Namespace != ws[j].Namespace {
			return ws[i].Namespace < ws[j].Namespace
		}
		return ws[i].Ref() < ws[j].Ref()
	})
}

func restarts(ws []Workload) []Action {
	var out []Action
	for _, w := range ws {
		out = append(out, Action{Type: ActRestart, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Selector: w.Selector, Role: w.Role})
	}
	return out
}

// podsByStage groups the pods to delete by stage, then by namespace and
// owner: pods with a role always (their controller is missing), the others
// only when on an old pod address (every one when the pod range does not
// move: their environment names the old Services).
func podsByStage(in Input) map[int][]Action {
	var old []netip.Prefix
	for _, s := range in.Pod.Old {
		if p, err := netip.ParsePrefix(s); err == nil {
			old = append(old, p)
		}
	}
	type group struct {
		stage     int
		ns, owner string
		role, why string
	}
	groups := map[group][]string{}
	for _, p := range in.Pods {
		if p.Role == "" && len(old) > 0 && !onOld(p.IPs, old) {
			continue
		}
		g := group{stage: StageOf(p.Role), ns: p.Namespace, owner: p.Owner, role: p.Role}
		if g.stage == StageRest && len(p.Backs) > 0 {
			g.stage = stageBackends
		}
		groups[g] = append(groups[g], p.Name)
	}
	keys := make([]group, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.ns != b.ns {
			return a.ns < b.ns
		}
		return a.owner < b.owner
	})
	out := map[int][]Action{}
	for _, g := range keys {
		names := groups[g]
		sort.Strings(names)
		out[g.stage] = append(out[g.stage], Action{Type: ActDeletePods, Namespace: g.ns, Role: g.role, Pods: names, Why: podsWhy(g.owner, g.role)})
	}
	return out
}

func podsWhy(owner, role string) string {
	switch {
	case owner == "":
		return "bare pods"
	case strings.HasPrefix(owner, "Job/"):
		return "pods of " + owner
	case role != "":
		return fmt.Sprintf("%s pods; %s is not in the snapshot", role, owner)
	case strings.HasPrefix(owner, "DaemonSet/"), strings.HasPrefix(owner, "Deployment/"), strings.HasPrefix(owner, "StatefulSet/"):
		return fmt.Sprintf("pods of %s, which is not in the snapshot", owner)
	}
	return "pods of " + owner + ", which no rollout restarts"
}

func onOld(ips []string, old []netip.Prefix) bool {
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		for _, p := range old {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
	}
	return false
}

// dnsStage restarts the cluster DNS and, with the DNS bridge, hands the
// kubelets' clusterDNS address over to the DNS Service.
func dnsStage(in Input, ws []Workload, pods []Action) Stage {
	st := Stage{Name: "dns", Title: "the cluster DNS", Actions: append(restarts(ws), pods...)}
	d := in.DNS
	if d == nil || d.Bridge == "" || d.BridgeAddress == "" {
		return st
	}
	ns, name, _ := strings.Cut(d.Service, "/")
	st.Actions = append(st.Actions, Action{Type: ActDNSHandover, Namespace: ns, Name: name, Bridge: d.Bridge, OldAddress: d.Address, Address: d.BridgeAddress})
	st.Notes = append(st.Notes, fmt.Sprintf("the kubelets' clusterDNS is the bridge's address %s, which %s cannot take while %s holds it: "+
		"%s is recreated at %s right after the bridge is deleted. Lookups to %s fail for that gap (the create, then kube-proxy's next sync: about a second); "+
		"pods not yet restarted, whose resolv.conf names %s, lose DNS until the next stages restart them",
		d.BridgeAddress, d.Service, d.Bridge, d.Service, d.BridgeAddress, d.BridgeAddress, orOld(d.Address)))
	return st
}

func orOld(a string) string {
	if a == "" {
		return "the old address"
	}
	return a
}

// backendStage restarts the workloads behind the webhooks that fail
// closed, and says which webhooks have none in the snapshot.
func backendStage(in Input, ws []Workload, pods []Action) Stage {
	st := Stage{Name: "webhook-backends", Title: "the backends of the admission webhooks that fail closed", Actions: append(pods, restarts(ws)...)}
	backed := map[string]bool{}
	for _, w := range in.Workloads {
		for _, b := range w.Backs {
			backed[b] = true
		}
	}
	for _, p := range in.Pods {
		for _, b := range p.Backs {
			backed[b] = true
		}
	}
	for _, w := range in.Webhooks {
		switch {
		case w.Deadlock && !w.Ignored:
			st.Notes = append(st.Notes, fmt.Sprintf("webhook %s (%s %s) intercepts pod creation and still fails closed: its backend's pods cannot be created until it answers; "+
				"set it to Ignore first (kubectl patch %s %s --type=json -p '[{\"op\":\"replace\",\"path\":\"/webhooks/%d/failurePolicy\",\"value\":\"Ignore\"}]')",
				w.Webhook, w.Kind, w.Configuration, w.Resource(), w.Configuration, w.Index))
		case w.Service != "" && !backed[w.Configuration]:
			st.Notes = append(st.Notes, fmt.Sprintf("webhook %s (%s %s): no controller of the snapshot runs the pods of Service %s; restart them by hand here", w.Webhook, w.Kind, w.Configuration, w.Service))
		}
	}
	return st
}

// webhookStage sets back to Fail what the rebuild set to Ignore.
func webhookStage(in Input) Stage {
	st := Stage{Name: "webhooks", Title: "the admission webhooks set back to Fail"}
	for _, w := range in.Webhooks {
		if w.Ignored {
			w := w
			st.Actions = append(st.Actions, Action{Type: ActWebhookFail, Name: w.Configuration, Webhook: &w})
		}
	}
	return st
}
