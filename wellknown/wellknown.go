// Package wellknown holds the apiserver's key layout and the keys of the
// well-known objects snapshift reads and moves (kubeadm's ConfigMaps, the
// service allocator, the CNIs' configuration and IPAM state), in one place
// that every layer imports (etcd-io/auger's pkg/wellknown is the model). It
// imports nothing.
package wellknown

import "strings"

// DefaultPrefix is where kube-apiserver keeps objects unless --etcd-prefix
// says otherwise (OpenShift uses /kubernetes.io/).
const DefaultPrefix = "/registry/"

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
	// PrefixNodeLeases holds the kubelets' heartbeat Leases, one per Node,
	// named after it (kubelet renews its Lease every 10 s by default,
	// pkg/kubelet/nodelease).
	PrefixNodeLeases = "/registry/leases/kube-node-lease/"
	// PrefixCRDs holds the CustomResourceDefinitions, named plural.group.
	PrefixCRDs = "/registry/apiextensions.k8s.io/customresourcedefinitions/"
)

// Where kubeadm's control plane and the objects read alongside it are kept.
const (
	PrefixSecrets              = "/registry/secrets/"
	PrefixPods                 = "/registry/pods/"
	PrefixMasterLeases         = "/registry/masterleases/"
	PrefixAPIServerPods        = "/registry/pods/kube-system/kube-apiserver-" // kubeadm's mirror Pods
	KeyKubernetesEndpoints     = "/registry/services/endpoints/default/kubernetes"
	KeyKubernetesEndpointSlice = "/registry/endpointslices/default/kubernetes"
	KeyClusterInfo             = "/registry/configmaps/kube-public/cluster-info"
	// AnnotationAPIServerEndpoint is kubeadm's
	// kube-apiserver.advertise-address.endpoint on the mirror Pods.
	AnnotationAPIServerEndpoint = "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"
)

// FlannelConfigKeys are where kube-flannel-cfg lives (current and older manifests).
var FlannelConfigKeys = []string{
	"/registry/configmaps/kube-flannel/kube-flannel-cfg",
	"/registry/configmaps/kube-system/kube-flannel-cfg",
}

// Where the CNIs keep their configuration and IPAM state. With the
// Kubernetes datastore every Calico object is a cluster-scoped custom
// resource of crd.projectcalico.org/v1, stored as JSON under its plural;
// the operator's Installation is operator.tigera.io/v1.
const (
	KeyCanalConfig      = "/registry/configmaps/kube-system/canal-config"
	KeyCalicoConfig     = "/registry/configmaps/kube-system/calico-config"
	KeyCiliumConfig     = "/registry/configmaps/kube-system/cilium-config"
	KeyWeaveDaemonSet   = "/registry/daemonsets/kube-system/weave-net"
	KeyCanalDaemonSet   = "/registry/daemonsets/kube-system/canal"
	KeyCiliumDaemonSet  = "/registry/daemonsets/kube-system/cilium"
	PrefixCiliumNodes   = "/registry/cilium.io/ciliumnodes/"
	PrefixCiliumPools   = "/registry/cilium.io/ciliumpodippools/"
	PrefixCalicoPools   = "/registry/crd.projectcalico.org/ippools/"
	PrefixCalicoBlocks  = "/registry/crd.projectcalico.org/ipamblocks/"
	PrefixCalicoAffs    = "/registry/crd.projectcalico.org/blockaffinities/"
	PrefixCalicoHandles = "/registry/crd.projectcalico.org/ipamhandles/"
	PrefixTigeraInstall = "/registry/operator.tigera.io/installations/"
)

// FlannelDaemonSets and CalicoDaemonSets are the CNIs' node agents, in
// each install's namespace; CalicoConfigMaps the manifest's calico-config.
var (
	FlannelDaemonSets = []string{"/registry/daemonsets/kube-flannel/kube-flannel-ds", "/registry/daemonsets/kube-system/kube-flannel-ds"}
	CalicoDaemonSets  = []string{"/registry/daemonsets/kube-system/calico-node", "/registry/daemonsets/calico-system/calico-node"}
	CalicoConfigMaps  = []string{KeyCalicoConfig}
)

// keyOf are the built-in resources the apiserver does not store under
// /registry/<resource>/ (Prefix, and Resource the other way).
var keyOf = map[string]string{
	"services":               "/registry/services/specs/",
	"endpoints":              "/registry/services/endpoints/",
	"nodes":                  "/registry/minions/",
	"replicationcontrollers": "/registry/controllers/",
	"ingresses":              "/registry/ingress/",
}

// Prefix is where the apiserver keeps the resource's objects:
// /registry/<resource>/ for built-in ones, /registry/<group>/<plural>/
// for custom and aggregated resources.
func Prefix(resource string) string {
	if p, ok := keyOf[resource]; ok {
		return p
	}
	if plural, group, ok := strings.Cut(resource, "."); ok {
		return "/registry/" + group + "/" + plural + "/"
	}
	return "/registry/" + resource + "/"
}

// Resource names the Kubernetes resource a key belongs to as `kubectl
// api-resources` prints it (plural, .group for non-core: "services",
// "deployments.apps", "ingresses.networking.k8s.io",
// "ippools.crd.projectcalico.org"), from the apiserver's key layout:
// /registry/<resource>/..., the built-in special cases of keyOf
// (services/specs, services/endpoints, minions, controllers, ingress), and
// /registry/<group>/<plural>/ for custom and aggregated resources. The
// allocators' ranges/* keys, which no API serves, keep their key's name.
func Resource(key string) string {
	rest, ok := strings.CutPrefix(key, DefaultPrefix)
	if !ok {
		return "(outside /registry)"
	}
	for res, p := range keyOf {
		seg := strings.TrimSuffix(strings.TrimPrefix(p, DefaultPrefix), "/")
		if rest == seg || strings.HasPrefix(rest, seg+"/") {
			return ResourceByStored(res)
		}
	}
	parts := strings.SplitN(rest, "/", 3)
	first := parts[0]
	switch first {
	case "services":
		return "services"
	case "ranges":
		if len(parts) > 1 {
			return "ranges/" + parts[1]
		}
	}
	if strings.Contains(first, ".") && len(parts) > 1 {
		return parts[1] + "." + first
	}
	return ResourceByStored(first)
}

// KubectlName is a key as kubectl names the object: RESOURCE/[NAMESPACE/]NAME
// with the resource's first short name, else its plural[.group]
// ("svc/prod/web", "deploy/kube-system/coredns", "no/cp1",
// "ippools.crd.projectcalico.org/default"). KeyOf reads it back. A key
// outside the layout (allocator ranges, /registry/masterleases/, another
// prefix) is returned as it is. A resource's prefix is "svc/".
func KubectlName(key string) string {
	res := Resource(key)
	if strings.HasPrefix(res, "(") || strings.HasPrefix(res, "ranges/") {
		return key
	}
	r, ok := LookupResource(res)
	stored := res
	if ok {
		stored = r.Stored()
	} else if !strings.Contains(res, ".") {
		return key
	}
	rest, ok := strings.CutPrefix(key, Prefix(stored))
	if !ok {
		return key
	}
	name := res
	if len(r.Short) > 0 {
		name = r.Short[0]
	}
	if back, err := KeyOf(name + "/" + rest); err != nil || back != key {
		return key
	}
	return name + "/" + rest
}
