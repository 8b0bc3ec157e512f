package sample

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"

	calicocrds "github.com/snapshift/snapshift/internal/calicocrds"
)

// crdV1 is the part of an apiextensions.k8s.io/v1 CustomResourceDefinition manifest the sample
// stores.
type crdV1 struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Group                 string   `json:"group"`
		Names                 crdNames `json:"names"`
		Scope                 string   `json:"scope"`
		PreserveUnknownFields *bool    `json:"preserveUnknownFields"`
		Versions              []struct {
			Name         string          `json:"name"`
			Served       bool            `json:"served"`
			Storage      bool            `json:"storage"`
			Subresources json.RawMessage `json:"subresources"`
			Schema       struct {
				OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// storedCRD turns a v1 CRD manifest with one version into what kube-apiserver stores when it is
// created: apiextensions.k8s.io/v1beta1 (the storage version), the version's schema and
// subresources lifted to the top level (as the v1 -> v1beta1 conversion does when every version
// has the same), the defaults (conversion None) and the status the controllers write.
func storedCRD(manifest []byte, created time.Duration) (string, crdStored, error) {
	var in crdV1
	if err := sigyaml.Unmarshal(manifest, &in); err != nil {
		return "", crdStored{}, err
	}
	if len(in.Spec.Versions) != 1 {
		return "", crdStored{}, fmt.Errorf("%s: %d versions; the sample stores single-version CRDs", in.Metadata.Name, len(in.Spec.Versions))
	}
	v := in.Spec.Versions[0]
	schema, err := schemaJSON(v.Schema.OpenAPIV3Schema)
	if err != nil {
		return "", crdStored{}, fmt.Errorf("%s: %w", in.Metadata.Name, err)
	}
	crd := crdStored{
		TypeMeta: metav1.TypeMeta{Kind: "CustomResourceDefinition", APIVersion: "apiextensions.k8s.io/v1beta1"},
		Metadata: objectMeta("CustomResourceDefinition", "", in.Metadata.Name, created),
		Spec: crdSpec{
			Group: in.Spec.Group, Version: v.Name, Names: in.Spec.Names, Scope: in.Spec.Scope,
			Validation:   &crdValidation{OpenAPIV3Schema: schema},
			Subresources: v.Subresources,
			Versions:     []crdVersion{{Name: v.Name, Served: v.Served, Storage: v.Storage}},
			Conversion:   &crdConversion{Strategy: "None"},
			PreserveUnknownFields: func() *bool {
				b := in.Spec.PreserveUnknownFields != nil && *in.Spec.PreserveUnknownFields
				return &b
			}(),
		},
		Status: crdStatus{
			Conditions: []crdCondition{
				{Type: "NamesAccepted", Status: "True", LastTransitionTime: at(created), Reason: "NoConflicts", Message: "no conflicts found"},
				{Type: "Established", Status: "True", LastTransitionTime: at(created), Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"},
			},
			AcceptedNames:  in.Spec.Names,
			StoredVersions: []string{v.Name},
		},
	}
	crd.Metadata.Generation = 1
	crd.Metadata.Annotations = in.Metadata.Annotations
	return in.Metadata.Name, crd, nil
}

// schemaFields is the field order of apiextensions' JSONSchemaProps (and of a validation rule),
// which is how kube-apiserver writes a stored schema.
var schemaFields = strings.Fields(`id $schema $ref description type format title default maximum exclusiveMaximum
	minimum exclusiveMinimum maxLength minLength pattern maxItems minItems uniqueItems multipleOf enum maxProperties
	minProperties required items allOf oneOf anyOf not properties additionalProperties patternProperties dependencies
	additionalItems definitions externalDocs example nullable x-kubernetes-preserve-unknown-fields
	x-kubernetes-embedded-resource x-kubernetes-int-or-string x-kubernetes-list-map-keys x-kubernetes-list-type
	x-kubernetes-map-type x-kubernetes-validations`)

var ruleFields = strings.Fields("rule message messageExpression reason fieldPath optionalOldSelf")

// schemaJSON writes a schema in JSONSchemaProps order: the fields of a schema in struct order,
// the schemas under properties (a Go map) by sorted name.
func schemaJSON(s map[string]any) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := writeOrdered(&buf, s, schemaFields); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeOrdered(buf *bytes.Buffer, m map[string]any, order []string) error {
	for k := range m {
		if !slices.Contains(order, k) {
			return fmt.Errorf("schema field %q is not a JSONSchemaProps field", k)
		}
	}
	buf.WriteByte('{')
	first := true
	for _, k := range order {
		v, ok := m[k]
		if !ok {
			continue
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		if err := writeSchemaValue(buf, k, v); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// writeSchemaValue writes the value of one schema field: nested schemas in schema order, rules in
// rule order, anything else as encoding/json does.
func writeSchemaValue(buf *bytes.Buffer, field string, v any) error {
	switch field {
	case "items", "not", "additionalProperties", "additionalItems":
		if m, ok := v.(map[string]any); ok {
			return writeOrdered(buf, m, schemaFields)
		}
	case "properties", "patternProperties", "definitions":
		m, _ := v.(map[string]any)
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		buf.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				buf.WriteByte(',')
			}
			nb, _ := json.Marshal(n)
			buf.Write(nb)
			buf.WriteByte(':')
			sub, _ := m[n].(map[string]any)
			if err := writeOrdered(buf, sub, schemaFields); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case "x-kubernetes-validations":
		rules, _ := v.([]any)
		buf.WriteByte('[')
		for i, r := range rules {
			if i > 0 {
				buf.WriteByte(',')
			}
			rm, _ := r.(map[string]any)
			if err := writeOrdered(buf, rm, ruleFields); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	b, err := json.Marshal(v)
	buf.Write(b)
	return err
}

// calicoCRDKey is where kube-apiserver keeps a CustomResourceDefinition.
func calicoCRDKey(name string) string {
	return "/registry/apiextensions.k8s.io/customresourcedefinitions/" + name
}

// CalicoAllocation is one pod address Calico IPAM allocated in the sample.
type CalicoAllocation struct {
	Namespace, Pod, Node string
	IP                   string
}

// CalicoBlocks returns the sample's Calico IPAM blocks (one /26 per node that runs pods, inside
// the node's pod CIDR) and what each allocates: the address of every pod on the pod network.
func CalicoBlocks() map[string][]CalicoAllocation {
	return map[string][]CalicoAllocation{
		"10.244.0.0/26": {{"kube-system", "coredns-6f6b679f8f-9xk2q", "cp1", "10.244.0.2"}, {"kube-system", "coredns-6f6b679f8f-tw5zn", "cp1", "10.244.0.3"}},
		"10.244.1.0/26": {{"demo", "api-7b9c5d4f8-p3n7q", "worker-vm1", "10.244.1.7"}, {"kube-system", "metrics-server-5dd7b49d79-lq8mz", "worker-vm1", "10.244.1.8"}},
		"10.244.8.0/26": {{"demo", "web-5d8f7c9b6-k2x4m", "worker-hw1", "10.244.8.5"}, {"ingress-nginx", "ingress-nginx-controller-7d56585cd7-8fw2d", "worker-hw1", "10.244.8.9"}},
	}
}

// calico adds Calico's IPAM CustomResourceDefinitions (the real ones, internal/calicocrds), the
// default IPv4 pool, and the IPAM state the Calico CNI plugin keeps for the pods: per node a
// block with its affinity, and a handle per pod.
func (b *builder) calico() {
	created := tApps - 30*time.Minute
	_, manifests, err := calicocrds.Files()
	if err != nil {
		b.err = err
		return
	}
	for _, m := range manifests {
		name, crd, err := storedCRD(m, created)
		if err != nil {
			b.err = err
			return
		}
		b.addEntry(typedJSON(calicoCRDKey(name), crd))
	}
	poolCreated := at(created + time.Minute)
	b.addEntry(b.enc.customResource("/registry/crd.projectcalico.org/ippools/default-ipv4-ippool", map[string]any{
		"apiVersion": "crd.projectcalico.org/v1",
		"kind":       "IPPool",
		"metadata": map[string]any{
			"name":              "default-ipv4-ippool",
			"uid":               string(uid("IPPool", "", "default-ipv4-ippool")),
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
	blocks := CalicoBlocks()
	cidrs := make([]string, 0, len(blocks))
	for c := range blocks {
		cidrs = append(cidrs, c)
	}
	sort.Strings(cidrs)
	for _, c := range cidrs {
		b.calicoBlock(netip.MustParsePrefix(c), blocks[c], created+2*time.Minute)
	}
}

// calicoName is Calico's name for an object of a CIDR (libcalico-go/lib/names CIDRToName).
func calicoName(p netip.Prefix) string {
	s := strings.Replace(p.String(), ".", "-", 3)
	s = strings.Replace(s, ":", "-", 7)
	return strings.Replace(s, "/", "-", 1)
}

// calicoBlock adds one node's block, its affinity and the handles of its pods, as Calico's IPAM
// writes them through the apiserver.
func (b *builder) calicoBlock(block netip.Prefix, allocs []CalicoAllocation, claimed time.Duration) {
	node := allocs[0].Node
	size := 1 << (32 - block.Bits())
	allocations := make([]any, size)
	var attrs []any
	seq := map[string]any{}
	for i, a := range allocs {
		ord := int(netip.MustParseAddr(a.IP).As4()[3] - block.Addr().As4()[3])
		handle := "k8s-pod-network." + fakeID("sandbox", a.Namespace, a.Pod)
		allocations[ord] = int64(i)
		seq[strconv.Itoa(ord)] = int64(i + 1)
		attrs = append(attrs, map[string]any{"handle_id": handle, "secondary": map[string]any{
			"namespace": a.Namespace, "node": node, "pod": a.Pod, "timestamp": at(claimed).UTC().Format("2006-01-02 15:04:05.000000000 -0700 MST")}})
		b.addEntry(b.enc.customResource("/registry/crd.projectcalico.org/ipamhandles/"+handle, map[string]any{
			"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMHandle",
			"metadata": calicoMeta("IPAMHandle", handle, claimed, 1),
			"spec":     map[string]any{"block": map[string]any{block.String(): int64(1)}, "deleted": false, "handleID": handle},
		}))
	}
	var unallocated []any
	for i := range size {
		if allocations[i] == nil {
			unallocated = append(unallocated, int64(i))
		}
	}
	name := calicoName(block)
	b.addEntry(b.enc.customResource("/registry/crd.projectcalico.org/ipamblocks/"+name, map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "IPAMBlock",
		"metadata": calicoMeta("IPAMBlock", name, claimed, int64(len(allocs)+1)),
		"spec": map[string]any{"affinity": "host:" + node, "affinityClaimTime": at(claimed).UTC().Format(time.RFC3339),
			"allocations": allocations, "attributes": attrs, "cidr": block.String(), "deleted": false,
			"sequenceNumber": int64(len(allocs)), "sequenceNumberForAllocation": seq, "strictAffinity": false, "unallocated": unallocated},
	}))
	aff := node + "-" + name
	b.addEntry(b.enc.customResource("/registry/crd.projectcalico.org/blockaffinities/"+aff, map[string]any{
		"apiVersion": "crd.projectcalico.org/v1", "kind": "BlockAffinity",
		"metadata": calicoMeta("BlockAffinity", aff, claimed, 2),
		"spec":     map[string]any{"cidr": block.String(), "deleted": "false", "node": node, "state": "confirmed", "type": "host"},
	}))
}

func calicoMeta(kind, name string, created time.Duration, generation int64) map[string]any {
	return map[string]any{"name": name, "uid": string(uid(kind, "", name)), "generation": generation,
		"creationTimestamp": at(created).UTC().Format(time.RFC3339)}
}
