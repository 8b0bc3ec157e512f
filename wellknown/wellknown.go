// Package wellknown holds the apiserver's key layout and the keys of the
// well-known objects snapshift reads and moves (kubeadm's ConfigMaps, the
// service allocator, the CNIs' configuration and IPAM state), in one place
// that every layer imports (etcd-io/auger's pkg/wellknown is the model).
// The CNIs' keys are derived from package cni's table; besides it, the
// package imports only internal/textdist (did-you-mean).
package wellknown

import (
	"strings"

	"github.com/snapshift/snapshift/cni"
)

// DefaultPrefix is where kube-apiserver keeps objects unless --etcd-prefix
// says otherwise (OpenShift uses /kubernetes.io/).
const DefaultPrefix = "/registry/"

// Well-known keys (kubeadm's names).
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
	PrefixEndpointSlices       = "/registry/endpointslices/"
	KeyClusterInfo             = "/registry/configmaps/kube-public/cluster-info"
	// PrefixConfigMaps holds every namespace's ConfigMaps; RootCAConfigMap
	// is the name of the one kube-controller-manager's root-ca publisher
	// keeps in each namespace (ca.crt: the cluster CA, which every pod's
	// service account volume projects).
	PrefixConfigMaps = "/registry/configmaps/"
	// Where the objects the rules and checks read by kind are kept.
	PrefixDaemonSets           = "/registry/daemonsets/"
	PrefixDeployments          = "/registry/deployments/"
	PrefixStatefulSets         = "/registry/statefulsets/"
	PrefixNetworkPolicies      = "/registry/networkpolicies/"
	PrefixPolicyNetworking     = "/registry/policy.networking.k8s.io/" // AdminNetworkPolicies and their kin
	PrefixValidatingWebhooks   = "/registry/validatingwebhookconfigurations/"
	PrefixMutatingWebhooks     = "/registry/mutatingwebhookconfigurations/"
	PrefixRanges               = "/registry/ranges/"
	PrefixKubeSystemConfigMaps = "/registry/configmaps/kube-system/"
	PrefixHelmCharts           = "/registry/helm.cattle.io/helmcharts/"       // helm-controller's (k3s, RKE2)
	PrefixHelmChartConfigs     = "/registry/helm.cattle.io/helmchartconfigs/" // helm-controller's (k3s, RKE2)
	PrefixK3sAddons            = "/registry/k3s.cattle.io/addons/"            // k3s's deploy controller's Addons
	RootCAConfigMap            = "kube-root-ca.crt"
	// AnnotationAPIServerEndpoint is kubeadm's
	// kube-apiserver.advertise-address.endpoint on the mirror Pods.
	AnnotationAPIServerEndpoint = "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"
)

// The keys of the CNIs' objects, from package cni's table: the
// ConfigMaps (FlannelConfigKeys in every namespace flannel's manifests have
// used, the first of the others the one the rules read), the node agents'
// DaemonSets in each install's namespace (flannel's and Calico's matched as
// prefixes) and the custom resources of their IPAM state.
var (
	FlannelConfigKeys = CNIKeys("configmaps", cni.MustLookup(cni.Flannel).ConfigMaps)
	FlannelDaemonSets = CNIKeys("daemonsets", cni.MustLookup(cni.Flannel).DaemonSets)
	CalicoConfigMaps  = CNIKeys("configmaps", cni.MustLookup(cni.Calico).ConfigMaps)
	CalicoDaemonSets  = CNIKeys("daemonsets", cni.MustLookup(cni.Calico).DaemonSets)

	KeyCanalConfig     = CNIKeys("configmaps", cni.MustLookup(cni.Canal).ConfigMaps)[0]
	KeyCalicoConfig    = CalicoConfigMaps[0]
	KeyCiliumConfig    = CNIKeys("configmaps", cni.MustLookup(cni.Cilium).ConfigMaps)[0]
	KeyWeaveDaemonSet  = CNIKeys("daemonsets", cni.MustLookup(cni.Weave).DaemonSets)[0]
	KeyCanalDaemonSet  = CNIKeys("daemonsets", cni.MustLookup(cni.Canal).DaemonSets)[0]
	KeyCiliumDaemonSet = CNIKeys("daemonsets", cni.MustLookup(cni.Cilium).DaemonSets)[0]

	PrefixCiliumNodes   = Prefix(cni.CiliumNodes)
	PrefixCiliumPools   = Prefix(cni.CiliumPodIPPools)
	PrefixCalicoPools   = Prefix(cni.CalicoIPPools)
	PrefixCalicoBlocks  = Prefix(cni.CalicoIPAMBlocks)
	PrefixCalicoAffs    = Prefix(cni.CalicoBlockAffinities)
	PrefixCalicoHandles = Prefix(cni.CalicoIPAMHandles)
	PrefixTigeraInstall = Prefix(cni.TigeraInstallations)
)

// cniKeys are the keys of a CNI's objects of one built-in resource.
func CNIKeys(resource string, objs []cni.Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, Prefix(resource)+o.Namespace+"/"+o.Name)
	}
	return out
}

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

// NodeLocal DNSCache's objects: the upstream addon
// (cluster/addons/dns/nodelocaldns) names its ConfigMap and DaemonSet
// node-local-dns; kubespray names both nodelocaldns (plus
// nodelocaldns-second for its secondary cache).
var (
	NodeLocalDNSConfigMaps = []string{PrefixKubeSystemConfigMaps + "node-local-dns", PrefixKubeSystemConfigMaps + "nodelocaldns"}
	NodeLocalDNSDaemonSets = []string{PrefixDaemonSets + "kube-system/node-local-dns", PrefixDaemonSets + "kube-system/nodelocaldns",
		PrefixDaemonSets + "kube-system/nodelocaldns-second"}
)
