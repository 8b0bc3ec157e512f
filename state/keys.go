package state

import (
	"fmt"
	"strings"

	"github.com/snapshift/snapshift/snapshot"
)

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

// DefaultPrefix is where kube-apiserver keeps objects unless --etcd-prefix
// says otherwise (OpenShift uses /kubernetes.io/).
const DefaultPrefix = "/registry/"

// DetectPrefix finds where the snapshot keeps the cluster's objects: the
// prefix of the kube-system Namespace's key, which every cluster has. ""
// when there is none. Reading every key, it is meant for the path that
// refuses, once the default prefix was found empty.
func DetectPrefix(ix *snapshot.Index) string {
	const ns = "namespaces/kube-system"
	if _, ok := ix.Lookup([]byte(DefaultPrefix + ns)); ok {
		return DefaultPrefix
	}
	for _, kr := range ix.LiveKeysWithPrefix("") {
		if p, ok := strings.CutSuffix(kr.Key, ns); ok {
			return p
		}
	}
	return ""
}

// MissingObjects explains why a rule found none of the objects it must see
// (what names them, e.g. "Services"): the snapshot keeps them under another
// --etcd-prefix, or holds none.
func MissingObjects(ix *snapshot.Index, what, prefix string) string {
	switch p := DetectPrefix(ix); {
	case p == "":
		return fmt.Sprintf("the snapshot holds no %s under %s and no kube-system Namespace at all: is it a Kubernetes etcd?", what, prefix)
	case p != DefaultPrefix:
		return fmt.Sprintf("the snapshot keeps the cluster's objects under %q, not %q (kube-apiserver --etcd-prefix): snapshift reads only the default prefix, so it would move nothing", p, DefaultPrefix)
	}
	return fmt.Sprintf("the snapshot holds no %s under %s: nothing would move", what, prefix)
}
