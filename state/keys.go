package state

import "strings"

// Well-known keys (kubeadm's names; flannel in either namespace).
const (
	KeyKubeadmConfig      = "/registry/configmaps/kube-system/kubeadm-config"
	KeyKubeletConfig      = "/registry/configmaps/kube-system/kubelet-config"
	KeyKubeProxy          = "/registry/configmaps/kube-system/kube-proxy"
	KeyServiceIPRange     = "/registry/ranges/serviceips"
	KeySecondaryIPRange   = "/registry/ranges/secondaryserviceips"
	KeyDefaultServiceCIDR = "/registry/servicecidrs/kubernetes"
	PrefixServiceCIDRs    = "/registry/servicecidrs/"
	PrefixNodes           = "/registry/minions/"
	PrefixServices        = "/registry/services/specs/"
	PrefixIPAddresses     = "/registry/ipaddresses/"
)

// AnnotationBridgeFor marks the DNS bridge Service snapshift creates; its
// value is the namespace/name of the DNS Service it bridges.
const AnnotationBridgeFor = "snapshift.io/bridge-for"

// FlannelConfigKeys are where kube-flannel-cfg lives (current and older manifests).
var FlannelConfigKeys = []string{
	"/registry/configmaps/kube-flannel/kube-flannel-cfg",
	"/registry/configmaps/kube-system/kube-flannel-cfg",
}

// Resource names the Kubernetes resource a key belongs to, from the
// apiserver's key layout: /registry/<resource>/..., with the built-in
// special cases (services/specs, services/endpoints, minions, controllers,
// ranges/*) and group/resource for custom and aggregated resources.
func Resource(key string) string {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return "(outside /registry)"
	}
	parts := strings.SplitN(rest, "/", 3)
	first := parts[0]
	switch first {
	case "services":
		if len(parts) > 1 && parts[1] == "endpoints" {
			return "endpoints"
		}
		return "services"
	case "minions":
		return "nodes"
	case "controllers":
		return "replicationcontrollers"
	case "ranges":
		if len(parts) > 1 {
			return "ranges/" + parts[1]
		}
	}
	if strings.Contains(first, ".") && len(parts) > 1 {
		return first + "/" + parts[1]
	}
	return first
}
