package sample

import (
	"encoding/json"

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
	Group                 string          `json:"group"`
	Version               string          `json:"version,omitempty"`
	Names                 crdNames        `json:"names"`
	Scope                 string          `json:"scope"`
	Validation            *crdValidation  `json:"validation,omitempty"`
	Subresources          json.RawMessage `json:"subresources,omitempty"`
	Versions              []crdVersion    `json:"versions,omitempty"`
	Conversion            *crdConversion  `json:"conversion,omitempty"`
	PreserveUnknownFields *bool           `json:"preserveUnknownFields,omitempty"`
}

type crdNames struct {
	Plural   string `json:"plural"`
	Singular string `json:"singular,omitempty"`
	Kind     string `json:"kind"`
	ListKind string `json:"listKind,omitempty"`
}

type crdValidation struct {
	// OpenAPIV3Schema is the schema as apiextensions' JSONSchemaProps
	// writes it (schemaJSON).
	OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema,omitempty"`
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
