package state

import (
	"fmt"
	"path"
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

// NormalizePrefix returns an --etcd-prefix value as kube-apiserver uses
// it: rooted, one trailing slash ("kubernetes.io" is "/kubernetes.io/").
// An empty value is the default.
func NormalizePrefix(p string) string {
	if p == "" {
		return DefaultPrefix
	}
	p = path.Join("/", p)
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// Canonical returns the key under DefaultPrefix of a key stored under
// prefix: every rule, check and report names objects as a default-prefix
// cluster stores them. ok is false for a key outside prefix.
func Canonical(prefix, stored string) (string, bool) {
	rest, ok := strings.CutPrefix(stored, prefix)
	if !ok {
		return "", false
	}
	if prefix == DefaultPrefix {
		return stored, true
	}
	return DefaultPrefix + rest, true
}

// Stored returns the key under prefix of a canonical key (one under
// DefaultPrefix); other keys are returned as they are.
func Stored(prefix, canonical string) string {
	if prefix == DefaultPrefix {
		return canonical
	}
	if rest, ok := strings.CutPrefix(canonical, DefaultPrefix); ok {
		return prefix + rest
	}
	return canonical
}

// DetectPrefix finds where the snapshot keeps the cluster's objects: the
// prefix of the kube-system Namespace's key, which every cluster has. ""
// when there is none. Under the default prefix it is one lookup; another
// prefix costs one walk of the index.
func DetectPrefix(ix *snapshot.Index) string {
	const ns = "namespaces/kube-system"
	if _, ok := ix.Lookup([]byte(DefaultPrefix + ns)); ok {
		return DefaultPrefix
	}
	for _, kr := range ix.LiveKeysWithPrefix("") {
		if p, ok := strings.CutSuffix(kr.Key, ns); ok && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
			return p
		}
	}
	return ""
}

// ResolvePrefix is the prefix a run reads: the given one (normalized), or
// the detected one, or the default when the snapshot holds no cluster.
func ResolvePrefix(ix *snapshot.Index, given string) string {
	if given != "" {
		return NormalizePrefix(given)
	}
	if p := DetectPrefix(ix); p != "" {
		return p
	}
	return DefaultPrefix
}

// MissingObjects explains why a rule found none of the objects it must see
// (what names them, e.g. "Services") under the canonical prefix of a
// snapshot read under used: the cluster's objects are under another
// --etcd-prefix, or there are none.
func MissingObjects(ix *snapshot.Index, what, prefix, used string) string {
	where := Stored(used, prefix)
	switch p := DetectPrefix(ix); {
	case p == "":
		return fmt.Sprintf("the snapshot holds no %s under %s and no kube-system Namespace at all: is it a Kubernetes etcd?", what, where)
	case p != used:
		return fmt.Sprintf("the snapshot keeps the cluster's objects under %q, not %q: give --etcd-prefix %s (kube-apiserver's --etcd-prefix)", p, used, strings.TrimSuffix(p, "/"))
	}
	return fmt.Sprintf("the snapshot holds no %s under %s: nothing would move", what, where)
}
