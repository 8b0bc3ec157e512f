package restart

import "time"

// Input is what the bundle knows about the cluster for its restart
// (report.json's operation.cluster).
type Input struct {
	// Created is when the bundle was made: a rollout restarted after it was
	// restarted on the new cluster (the restore holds nothing newer).
	Created time.Time `json:"created"`
	// Service and Pod are the old and new ranges (CIDR text, per family);
	// empty when that range does not move.
	Service Ranges `json:"service"`
	Pod     Ranges `json:"pod"`
	// CNI names the CNIs the snapshot shows (state.DetectCNI's names).
	CNI []string `json:"cni,omitempty"`
	// Workloads are the DaemonSets, Deployments and StatefulSets of the
	// snapshot, each with its role (Classify).
	Workloads []Workload `json:"workloads,omitempty"`
	// Pods are the pods no controller of the snapshot restarts: bare pods,
	// Jobs' pods, pods whose controller the snapshot lacks. Host-network and
	// mirror pods are not listed.
	Pods []Pod `json:"pods,omitempty"`
	// DNS is the cluster DNS Service; nil when the snapshot has none.
	DNS *DNS `json:"dns,omitempty"`
	// Webhooks are the admission webhooks that fail closed.
	Webhooks []Webhook `json:"webhooks,omitempty"`
}

// Ranges are a range's old and new CIDRs.
type Ranges struct {
	Old []string `json:"old,omitempty"`
	New []string `json:"new,omitempty"`
}

// Workload is a controller the restart rolls.
type Workload struct {
	Kind      string `json:"kind"` // DaemonSet, Deployment or StatefulSet
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Selector is spec.selector.matchLabels as kubectl's -l (sorted).
	Selector string `json:"selector"`
	// Role is what it is (Classify): "cilium-operator", "calico-node",
	// "kube-proxy", "cluster DNS", "node-local-dns", "" for any other.
	Role string `json:"role,omitempty"`
	// Backs names the webhook configurations whose Service selects its
	// pods ("" for none).
	Backs []string `json:"backs,omitempty"`
}

// Ref is kubectl's name for it: ds/NAME, deploy/NAME, sts/NAME.
func (w Workload) Ref() string {
	switch w.Kind {
	case "DaemonSet":
		return "ds/" + w.Name
	case "StatefulSet":
		return "sts/" + w.Name
	}
	return "deploy/" + w.Name
}

// Pod is a pod no controller of the snapshot restarts.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// IPs are status.podIPs.
	IPs []string `json:"ips,omitempty"`
	// Owner is its controller ("Job/NAME", "DaemonSet/NAME" the snapshot
	// lacks, ...); "" for a bare pod.
	Owner string `json:"owner,omitempty"`
	// Role is Classify's role from its labels ("" for none).
	Role string `json:"role,omitempty"`
	// Backs names the webhook configurations whose Service selects it.
	Backs []string `json:"backs,omitempty"`
}

// DNS is the cluster DNS Service and, with the DNS bridge, its bridge.
type DNS struct {
	// Service is "namespace/name" (kube-system/kube-dns).
	Service string `json:"service"`
	// Address is its clusterIP in the bundle (the old one when kept).
	Address string `json:"address,omitempty"`
	// Kept is true when it keeps its old address (--keep-service-ip).
	Kept bool `json:"kept,omitempty"`
	// Bridge is the bridge Service "namespace/name" and BridgeAddress its
	// clusterIP, the kubelets' clusterDNS; empty without the bridge.
	Bridge        string `json:"bridge,omitempty"`
	BridgeAddress string `json:"bridgeAddress,omitempty"`
}

// Webhook is one admission webhook that fails closed.
type Webhook struct {
	// Kind is ValidatingWebhookConfiguration or MutatingWebhookConfiguration.
	Kind          string `json:"kind"`
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	// Index is its place in webhooks[].
	Index int `json:"index"`
	// Service is its backend Service "namespace/name" ("" for a URL).
	Service string `json:"service,omitempty"`
	// Ignored is true when the rebuild set it to Ignore (--webhooks ignore):
	// the last stage sets it back to Fail.
	Ignored bool `json:"ignored,omitempty"`
	// Deadlock is true when it intercepts pod creation.
	Deadlock bool `json:"deadlock,omitempty"`
}

// Resource is kubectl's resource name of its kind.
func (w Webhook) Resource() string {
	if w.Kind == "MutatingWebhookConfiguration" {
		return "mutatingwebhookconfiguration"
	}
	return "validatingwebhookconfiguration"
}
