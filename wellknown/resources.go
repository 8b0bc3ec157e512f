package wellknown

import (
	"fmt"
	"github.com/snapshift/snapshift/internal/textdist"
	"slices"
	"sort"
	"strings"
)

// APIResource is a built-in resource as `kubectl api-resources` prints it.
type APIResource struct {
	// Name is plural[.group], the NAME column with the group of the
	// APIVERSION column: "configmaps", "deployments.apps".
	Name     string
	Singular string
	Short    []string
	Kind     string
	// KeyGroup: the apiserver keeps the objects under
	// /registry/<group>/<plural>/ (kube-aggregator's and
	// apiextensions-apiserver's), not /registry/<plural>/.
	KeyGroup bool
}

// BuiltinResources are the stored built-in resources of kube-apiserver
// (1.30–1.34) and their kubectl short names (the ShortNames its discovery
// serves).
var BuiltinResources = []APIResource{
	{Name: "configmaps", Singular: "configmap", Short: []string{"cm"}, Kind: "ConfigMap"},
	{Name: "endpoints", Singular: "endpoints", Short: []string{"ep"}, Kind: "Endpoints"},
	{Name: "events", Singular: "event", Short: []string{"ev"}, Kind: "Event"},
	{Name: "limitranges", Singular: "limitrange", Short: []string{"limits"}, Kind: "LimitRange"},
	{Name: "namespaces", Singular: "namespace", Short: []string{"ns"}, Kind: "Namespace"},
	{Name: "nodes", Singular: "node", Short: []string{"no"}, Kind: "Node"},
	{Name: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Short: []string{"pvc"}, Kind: "PersistentVolumeClaim"},
	{Name: "persistentvolumes", Singular: "persistentvolume", Short: []string{"pv"}, Kind: "PersistentVolume"},
	{Name: "pods", Singular: "pod", Short: []string{"po"}, Kind: "Pod"},
	{Name: "podtemplates", Singular: "podtemplate", Kind: "PodTemplate"},
	{Name: "replicationcontrollers", Singular: "replicationcontroller", Short: []string{"rc"}, Kind: "ReplicationController"},
	{Name: "resourcequotas", Singular: "resourcequota", Short: []string{"quota"}, Kind: "ResourceQuota"},
	{Name: "secrets", Singular: "secret", Kind: "Secret"},
	{Name: "serviceaccounts", Singular: "serviceaccount", Short: []string{"sa"}, Kind: "ServiceAccount"},
	{Name: "services", Singular: "service", Short: []string{"svc"}, Kind: "Service"},
	{Name: "mutatingwebhookconfigurations.admissionregistration.k8s.io", Singular: "mutatingwebhookconfiguration", Kind: "MutatingWebhookConfiguration"},
	{Name: "validatingwebhookconfigurations.admissionregistration.k8s.io", Singular: "validatingwebhookconfiguration", Kind: "ValidatingWebhookConfiguration"},
	{Name: "validatingadmissionpolicies.admissionregistration.k8s.io", Singular: "validatingadmissionpolicy", Kind: "ValidatingAdmissionPolicy"},
	{Name: "validatingadmissionpolicybindings.admissionregistration.k8s.io", Singular: "validatingadmissionpolicybinding", Kind: "ValidatingAdmissionPolicyBinding"},
	{Name: "customresourcedefinitions.apiextensions.k8s.io", Singular: "customresourcedefinition", Short: []string{"crd", "crds"}, Kind: "CustomResourceDefinition", KeyGroup: true},
	{Name: "apiservices.apiregistration.k8s.io", Singular: "apiservice", Kind: "APIService", KeyGroup: true},
	{Name: "controllerrevisions.apps", Singular: "controllerrevision", Kind: "ControllerRevision"},
	{Name: "daemonsets.apps", Singular: "daemonset", Short: []string{"ds"}, Kind: "DaemonSet"},
	{Name: "deployments.apps", Singular: "deployment", Short: []string{"deploy"}, Kind: "Deployment"},
	{Name: "replicasets.apps", Singular: "replicaset", Short: []string{"rs"}, Kind: "ReplicaSet"},
	{Name: "statefulsets.apps", Singular: "statefulset", Short: []string{"sts"}, Kind: "StatefulSet"},
	{Name: "horizontalpodautoscalers.autoscaling", Singular: "horizontalpodautoscaler", Short: []string{"hpa"}, Kind: "HorizontalPodAutoscaler"},
	{Name: "cronjobs.batch", Singular: "cronjob", Short: []string{"cj"}, Kind: "CronJob"},
	{Name: "jobs.batch", Singular: "job", Kind: "Job"},
	{Name: "certificatesigningrequests.certificates.k8s.io", Singular: "certificatesigningrequest", Short: []string{"csr"}, Kind: "CertificateSigningRequest"},
	{Name: "leases.coordination.k8s.io", Singular: "lease", Kind: "Lease"},
	{Name: "endpointslices.discovery.k8s.io", Singular: "endpointslice", Kind: "EndpointSlice"},
	// events.k8s.io's Events are core Events under another API: one store.
	{Name: "events.events.k8s.io", Singular: "event", Short: []string{"ev"}, Kind: "Event"},
	{Name: "flowschemas.flowcontrol.apiserver.k8s.io", Singular: "flowschema", Kind: "FlowSchema"},
	{Name: "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io", Singular: "prioritylevelconfiguration", Kind: "PriorityLevelConfiguration"},
	{Name: "ingressclasses.networking.k8s.io", Singular: "ingressclass", Kind: "IngressClass"},
	{Name: "ingresses.networking.k8s.io", Singular: "ingress", Short: []string{"ing"}, Kind: "Ingress"},
	{Name: "networkpolicies.networking.k8s.io", Singular: "networkpolicy", Short: []string{"netpol"}, Kind: "NetworkPolicy"},
	{Name: "ipaddresses.networking.k8s.io", Singular: "ipaddress", Short: []string{"ip"}, Kind: "IPAddress"},
	{Name: "servicecidrs.networking.k8s.io", Singular: "servicecidr", Kind: "ServiceCIDR"},
	{Name: "runtimeclasses.node.k8s.io", Singular: "runtimeclass", Kind: "RuntimeClass"},
	{Name: "poddisruptionbudgets.policy", Singular: "poddisruptionbudget", Short: []string{"pdb"}, Kind: "PodDisruptionBudget"},
	{Name: "clusterrolebindings.rbac.authorization.k8s.io", Singular: "clusterrolebinding", Kind: "ClusterRoleBinding"},
	{Name: "clusterroles.rbac.authorization.k8s.io", Singular: "clusterrole", Kind: "ClusterRole"},
	{Name: "rolebindings.rbac.authorization.k8s.io", Singular: "rolebinding", Kind: "RoleBinding"},
	{Name: "roles.rbac.authorization.k8s.io", Singular: "role", Kind: "Role"},
	{Name: "priorityclasses.scheduling.k8s.io", Singular: "priorityclass", Short: []string{"pc"}, Kind: "PriorityClass"},
	{Name: "csidrivers.storage.k8s.io", Singular: "csidriver", Kind: "CSIDriver"},
	{Name: "csinodes.storage.k8s.io", Singular: "csinode", Kind: "CSINode"},
	{Name: "csistoragecapacities.storage.k8s.io", Singular: "csistoragecapacity", Kind: "CSIStorageCapacity"},
	{Name: "storageclasses.storage.k8s.io", Singular: "storageclass", Short: []string{"sc"}, Kind: "StorageClass"},
	{Name: "volumeattachments.storage.k8s.io", Singular: "volumeattachment", Kind: "VolumeAttachment"},
	{Name: "volumeattributesclasses.storage.k8s.io", Singular: "volumeattributesclass", Short: []string{"vac"}, Kind: "VolumeAttributesClass"},
}

// Workloads is the resource group name `workloads` stands for in a rules
// file: every resource whose objects hold a pod spec.
var Workloads = []string{"pods", "replicationcontrollers", "deployments.apps", "daemonsets.apps",
	"statefulsets.apps", "replicasets.apps", "jobs.batch", "cronjobs.batch"}

// Stored is the resource name the apiserver's key uses for an
// api-resources name: built-in resources bare ("deployments"), except the
// ones kept under their group; custom resources as plural.group.
func (r APIResource) Stored() string {
	if r.KeyGroup {
		return r.Name
	}
	plural, _, _ := strings.Cut(r.Name, ".")
	return plural
}

// LookupResource finds a built-in resource by any name kubectl accepts:
// plural or singular, with or without its group, or a short name.
func LookupResource(name string) (APIResource, bool) {
	for _, r := range BuiltinResources {
		plural, group, _ := strings.Cut(r.Name, ".")
		qual := func(s string) string {
			if group == "" {
				return s
			}
			return s + "." + group
		}
		if name == r.Name || name == plural || name == r.Singular || name == qual(r.Singular) {
			return r, true
		}
		for _, s := range r.Short {
			if name == s {
				return r, true
			}
		}
	}
	return APIResource{}, false
}

// otherGroups are kube-apiserver's groups with no resource in
// BuiltinResources (retired, alpha, or not stored).
var otherGroups = []string{"extensions", "authentication.k8s.io", "authorization.k8s.io", "resource.k8s.io",
	"storagemigration.k8s.io", "internal.apiserver.k8s.io", "apiserverinternal.k8s.io"}

// BuiltinGroup reports whether group is one of kube-apiserver's own.
func BuiltinGroup(group string) bool {
	if slices.Contains(otherGroups, group) {
		return true
	}
	for _, r := range BuiltinResources {
		if _, g, _ := strings.Cut(r.Name, "."); g == group {
			return true
		}
	}
	return false
}

// ResourceByStored returns the api-resources name of a stored resource
// name ("ingresses" -> "ingresses.networking.k8s.io"); a custom
// resource's name comes back as given.
func ResourceByStored(stored string) string {
	for _, r := range BuiltinResources {
		if r.Stored() == stored {
			return r.Name
		}
	}
	return stored
}

// DidYouMean is ` (did you mean "x"?)` for the built-in resource (or one
// of extra) nearest to name or to its plural without the group, by edit
// distance, or "" when none is within 2 edits.
func DidYouMean(name string, extra ...string) string {
	var cands []string
	for _, r := range BuiltinResources {
		plural, _, _ := strings.Cut(r.Name, ".")
		cands = append(cands, r.Name, plural, r.Singular)
		cands = append(cands, r.Short...)
	}
	cands = append(cands, extra...)
	best, bestD := "", 3
	sort.Strings(cands)
	first, _, _ := strings.Cut(name, ".")
	for _, c := range cands {
		if d := min(textdist.Distance(name, c), textdist.Distance(first, c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	if r, ok := LookupResource(best); ok {
		best = r.Name
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// ResolveResource finds the resource a user names: a built-in one by any
// name kubectl accepts (LookupResource), or a custom or aggregated one as
// plural.group (returned with KeyGroup set). A name that is neither — no
// group and unknown, or unknown in a built-in group — is an error with the
// nearest known name.
func ResolveResource(name string) (APIResource, error) {
	if r, ok := LookupResource(name); ok {
		return r, nil
	}
	if _, group, dotted := strings.Cut(name, "."); dotted && !BuiltinGroup(group) {
		return APIResource{Name: name, KeyGroup: true}, nil
	}
	return APIResource{}, fmt.Errorf("%q is no resource kube-apiserver serves%s: name resources as kubectl api-resources prints them (plural, .group for non-core)", name, DidYouMean(name))
}

// KeyOf turns what a user typed for a key or a key prefix into one: a
// string starting with / is taken as it is; else RESOURCE[/REST], the
// resource by any name ResolveResource takes and REST the namespace and
// name ("deploy/shop/web", "ns/default", "svc") under DefaultPrefix.
func KeyOf(arg string) (string, error) {
	if strings.HasPrefix(arg, "/") {
		return arg, nil
	}
	res, rest, _ := strings.Cut(arg, "/")
	r, err := ResolveResource(res)
	if err != nil {
		return "", err
	}
	return Prefix(r.Stored()) + rest, nil
}

// Near returns the names within a few edits of name (one per four
// characters, at least one, at most three), sorted: the did-you-mean of a
// misspelt object name (a Service, a node).
func Near(name string, names []string) []string {
	var near []string
	for _, n := range names {
		if d := textdist.Distance(name, n); d > 0 && d <= max(1, min(3, len(name)/4)) && !slices.Contains(near, n) {
			near = append(near, n)
		}
	}
	sort.Strings(near)
	return near
}
