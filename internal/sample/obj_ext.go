package sample

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds stored as JSON by kube-apiserver. There is no typed Go API for them in this module, so the
// structs below mirror the stored serialization: apiextensions-apiserver keeps CustomResourceDefinitions
// as apiextensions.k8s.io/v1beta1 JSON (LegacyCodec, even when created through v1), and the aggregator
// keeps APIServices as apiregistration.k8s.io/v1 JSON. Field order follows the upstream types.

type crdStored struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            crdSpec           `json:"spec"`
	Status          crdStatus         `json:"status"`
}

type crdSpec struct {
	Group                 string         `json:"group"`
	Version               string         `json:"version,omitempty"`
	Names                 crdNames       `json:"names"`
	Scope                 string         `json:"scope"`
	Validation            *crdValidation `json:"validation,omitempty"`
	Versions              []crdVersion   `json:"versions,omitempty"`
	Conversion            *crdConversion `json:"conversion,omitempty"`
	PreserveUnknownFields *bool          `json:"preserveUnknownFields,omitempty"`
}

type crdNames struct {
	Plural   string `json:"plural"`
	Singular string `json:"singular,omitempty"`
	Kind     string `json:"kind"`
	ListKind string `json:"listKind,omitempty"`
}

type crdValidation struct {
	OpenAPIV3Schema map[string]any `json:"openAPIV3Schema,omitempty"`
}

type crdVersion struct {
	Name    string `json:"name"`
	Served  bool   `json:"served"`
	Storage bool   `json:"storage"`
}

type crdConversion struct {
	Strategy string `json:"strategy"`
}

type crdStatus struct {
	Conditions     []crdCondition `json:"conditions"`
	AcceptedNames  crdNames       `json:"acceptedNames"`
	StoredVersions []string       `json:"storedVersions"`
}

type crdCondition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// ippoolSchema is a trimmed copy of Calico's IPPool schema.
func ippoolSchema() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"description": "IPPool is the Schema for the ippools API",
		"type":        "object",
		"properties": map[string]any{
			"apiVersion": str,
			"kind":       str,
			"metadata":   map[string]any{"type": "object"},
			"spec": map[string]any{
				"description": "IPPoolSpec contains the specification for an IPPool resource.",
				"type":        "object",
				"required":    []any{"cidr"},
				"properties": map[string]any{
					"allowedUses":      map[string]any{"type": "array", "items": str},
					"blockSize":        map[string]any{"type": "integer"},
					"cidr":             map[string]any{"description": "The pool CIDR.", "type": "string"},
					"disableBGPExport": map[string]any{"type": "boolean"},
					"ipipMode":         str,
					"natOutgoing":      map[string]any{"type": "boolean"},
					"nodeSelector":     str,
					"vxlanMode":        str,
				},
			},
		},
	}
}

// calico adds the IPPool CustomResourceDefinition and the default IPv4 pool.
func (b *builder) calico() {
	created := tApps - 30*time.Minute
	names := crdNames{Plural: "ippools", Singular: "ippool", Kind: "IPPool", ListKind: "IPPoolList"}
	crd := crdStored{
		TypeMeta: metav1.TypeMeta{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1beta1"},
		Metadata: objectMeta("CustomResourceDefinition", "", "ippools.crd.projectcalico.org", created),
		Spec: crdSpec{
			Group:                 "crd.projectcalico.org",
			Version:               "v1",
			Names:                 names,
			Scope:                 "Cluster",
			Validation:            &crdValidation{OpenAPIV3Schema: ippoolSchema()},
			Versions:              []crdVersion{{Name: "v1", Served: true, Storage: true}},
			Conversion:            &crdConversion{Strategy: "None"},
			PreserveUnknownFields: new(false),
		},
		Status: crdStatus{
			Conditions: []crdCondition{
				{Type: "NamesAccepted", Status: "True", LastTransitionTime: at(created), Reason: "NoConflicts", Message: "no conflicts found"},
				{Type: "Established", Status: "True", LastTransitionTime: at(created), Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
			},
			AcceptedNames:  names,
			StoredVersions: []string{"v1"},
		},
	}
	crd.Metadata.Generation = 1
	b.addEntry(typedJSON("/registry/apiextensions.k8s.io/customresourcedefinitions/ippools.crd.projectcalico.org", crd))

	poolCreated := at(created + time.Minute)
	poolUID := string(uid("IPPool", "", "default-ipv4-ippool"))
	b.addEntry(b.enc.customResource("/registry/crd.projectcalico.org/ippools/default-ipv4-ippool", map[string]any{
		"apiVersion": "crd.projectcalico.org/v1",
		"kind":       "IPPool",
		"metadata": map[string]any{
			"name":              "default-ipv4-ippool",
			"uid":               poolUID,
			"generation":        int64(1),
			"creationTimestamp": poolCreated.UTC().Format(time.RFC3339),
			"annotations": map[string]any{
				"projectcalico.org/metadata": `{"creationTimestamp":"` + poolCreated.UTC().Format(time.RFC3339) + `"}`,
			},
		},
		"spec": map[string]any{
			"allowedUses":  []any{"Workload", "Tunnel"},
			"blockSize":    int64(26),
			"cidr":         PodCIDR,
			"ipipMode":     "Always",
			"natOutgoing":  true,
			"nodeSelector": "all()",
			"vxlanMode":    "Never",
		},
	}))
}

type apiServiceStored struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            apiServiceSpec    `json:"spec"`
	Status          apiServiceStatus  `json:"status"`
}

type apiServiceSpec struct {
	Group                string `json:"group,omitempty"`
	Version              string `json:"version,omitempty"`
	GroupPriorityMinimum int32  `json:"groupPriorityMinimum"`
	VersionPriority      int32  `json:"versionPriority"`
}

type apiServiceStatus struct {
	Conditions []crdCondition `json:"conditions,omitempty"`
}

// apiService adds the local APIService of networking.k8s.io/v1, as the aggregator registers it.
func (b *builder) apiService() {
	obj := apiServiceStored{
		TypeMeta: metav1.TypeMeta{Kind: "APIService", APIVersion: "apiregistration.k8s.io/v1"},
		Metadata: objectMeta("APIService", "", "v1.networking.k8s.io", tInit),
		Spec:     apiServiceSpec{Group: "networking.k8s.io", Version: "v1", GroupPriorityMinimum: 17200, VersionPriority: 15},
		Status: apiServiceStatus{Conditions: []crdCondition{
			{Type: "Available", Status: "True", LastTransitionTime: at(tInit), Reason: "Local", Message: "Local APIServices are always available"},
		}},
	}
	obj.Metadata.Labels = map[string]string{"kube-aggregator.kubernetes.io/automanaged": "onstart"}
	b.addEntry(typedJSON("/registry/apiregistration.k8s.io/apiservices/v1.networking.k8s.io", obj))
}
