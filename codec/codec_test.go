package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

var (
	gvService         = corev1.SchemeGroupVersion
	gvNetworkingV1    = networkingv1.SchemeGroupVersion
	gvNetworkingBeta1 = networkingv1beta1.SchemeGroupVersion
	gvkService        = gvService.WithKind("Service")
	gvkIPPool         = schema.GroupVersionKind{Group: "crd.projectcalico.org", Version: "v1", Kind: "IPPool"}
)

type roundTripCase struct {
	name     string
	value    []byte
	encoding Encoding
	gvk      schema.GroupVersionKind
	objType  runtime.Object // the Go type Decode must return
}

func roundTripCases(tb testing.TB) []roundTripCase {
	return []roundTripCase{
		{"service", storedProtobuf(tb, fixtureService(), gvService), Protobuf, gvkService, &corev1.Service{}},
		{"node", storedProtobuf(tb, fixtureNode(), gvService), Protobuf, gvService.WithKind("Node"), &corev1.Node{}},
		{"secret", storedProtobuf(tb, fixtureSecret(), gvService), Protobuf, gvService.WithKind("Secret"), &corev1.Secret{}},
		{"configmap", storedProtobuf(tb, fixtureConfigMap(), gvService), Protobuf, gvService.WithKind("ConfigMap"), &corev1.ConfigMap{}},
		{"rangeallocation", storedProtobuf(tb, fixtureRangeAllocation(), gvService), Protobuf, gvService.WithKind("RangeAllocation"), &corev1.RangeAllocation{}},
		{"ipaddress v1", storedProtobuf(tb, fixtureIPAddressV1(), gvNetworkingV1), Protobuf, gvNetworkingV1.WithKind("IPAddress"), &networkingv1.IPAddress{}},
		{"ipaddress v1beta1", storedProtobuf(tb, fixtureIPAddressV1beta1(), gvNetworkingBeta1), Protobuf, gvNetworkingBeta1.WithKind("IPAddress"), &networkingv1beta1.IPAddress{}},
		{"servicecidr v1", storedProtobuf(tb, fixtureServiceCIDRV1(), gvNetworkingV1), Protobuf, gvNetworkingV1.WithKind("ServiceCIDR"), &networkingv1.ServiceCIDR{}},
		{"servicecidr v1beta1", storedProtobuf(tb, fixtureServiceCIDRV1beta1(), gvNetworkingBeta1), Protobuf, gvNetworkingBeta1.WithKind("ServiceCIDR"), &networkingv1beta1.ServiceCIDR{}},
		{"lease", storedProtobuf(tb, fixtureLease(), coordinationv1.SchemeGroupVersion), Protobuf, coordinationv1.SchemeGroupVersion.WithKind("Lease"), &coordinationv1.Lease{}},
		{"endpointslice", storedProtobuf(tb, fixtureEndpointSlice(), discoveryv1.SchemeGroupVersion), Protobuf, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), &discoveryv1.EndpointSlice{}},
		{"custom resource json", []byte(ippoolJSON), JSON, gvkIPPool, &unstructured.Unstructured{}},
		{"crd json", []byte(crdJSON), JSON, schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1beta1", Kind: "CustomResourceDefinition"}, &unstructured.Unstructured{}},
		{"apiservice json", []byte(apiServiceJSON), JSON, schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, &unstructured.Unstructured{}},
		{"custom resource cbor", ipamBlockCBOR(tb), CBOR, schema.GroupVersionKind{Group: "crd.projectcalico.org", Version: "v1", Kind: "IPAMBlock"}, &unstructured.Unstructured{}},
	}
}

func TestRoundTrip(t *testing.T) {
	c := New()
	for _, tc := range roundTripCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.value); got != tc.encoding {
				t.Fatalf("Detect = %v, want %v", got, tc.encoding)
			}
			gvk, enc, err := c.PeekGVK(tc.value)
			if err != nil || gvk != tc.gvk || enc != tc.encoding {
				t.Fatalf("PeekGVK = %v, %v, %v; want %v, %v, nil", gvk, enc, err, tc.gvk, tc.encoding)
			}
			o, err := c.Decode(tc.value)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if o.Encoding != tc.encoding || o.GVK != tc.gvk {
				t.Fatalf("Decode gave %v %v, want %v %v", o.Encoding, o.GVK, tc.encoding, tc.gvk)
			}
			if reflect.TypeOf(o.Obj) != reflect.TypeOf(tc.objType) {
				t.Fatalf("Decode gave a %T, want a %T", o.Obj, tc.objType)
			}
			if got := o.Obj.GetObjectKind().GroupVersionKind(); got != tc.gvk {
				t.Fatalf("decoded object's TypeMeta says %v, want %v", got, tc.gvk)
			}
			out, err := c.Encode(o)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(out, tc.value) {
				t.Fatalf("Encode(Decode(x)) != x\n got: %q\nwant: %q", out, tc.value)
			}
			if err := c.CheckRoundTrip(tc.value); err != nil {
				t.Fatalf("CheckRoundTrip: %v", err)
			}
		})
	}
}

// TestProtobufEnvelope checks the fixtures against the envelope layout built by hand from
// runtime.Unknown's fields: "k8s\x00", TypeMeta, Raw = the typed object's own protobuf, and
// contentEncoding/contentType written as empty strings (tags 0x1a 0x00 0x22 0x00).
func TestProtobufEnvelope(t *testing.T) {
	svc := fixtureService()
	raw, err := svc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	typeMeta := appendBytesField(nil, 1, []byte("v1"))
	typeMeta = appendBytesField(typeMeta, 2, []byte("Service"))
	want := []byte("k8s\x00")
	want = appendBytesField(want, 1, typeMeta)
	want = appendBytesField(want, 2, raw)
	want = append(want, 0x1a, 0x00, 0x22, 0x00)

	got := storedProtobuf(t, fixtureService(), gvService)
	if !bytes.Equal(got, want) {
		t.Fatalf("apiserver-style envelope differs from the hand-built one\n got: %q\nwant: %q", got, want)
	}
	c := New()
	fresh, err := c.EncodeProtobuf(fixtureService(), gvkService)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, want) {
		t.Fatalf("EncodeProtobuf differs from the hand-built envelope")
	}
}

func appendBytesField(b []byte, field uint64, v []byte) []byte {
	b = binary.AppendUvarint(b, field<<3|wireBytes)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// TestDecodeDoesNotDefault: a Service stored without type/sessionAffinity (as an old apiserver
// could have written it) must decode without them; defaulting would change the bytes.
func TestDecodeDoesNotDefault(t *testing.T) {
	c := New()
	bare := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.5.5"}}
	value := storedProtobuf(t, bare, gvService)
	o, err := c.Decode(value)
	if err != nil {
		t.Fatal(err)
	}
	svc := o.Obj.(*corev1.Service)
	if svc.Spec.Type != "" || svc.Spec.SessionAffinity != "" || svc.Spec.IPFamilyPolicy != nil || len(svc.Spec.ClusterIPs) != 0 {
		t.Fatalf("decoded Service was defaulted: %+v", svc.Spec)
	}
	if err := c.CheckRoundTrip(value); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeTypedValues(t *testing.T) {
	c := New()
	o, err := c.Decode(storedProtobuf(t, fixtureNode(), gvService))
	if err != nil {
		t.Fatal(err)
	}
	node := o.Obj.(*corev1.Node)
	if node.Spec.PodCIDR != "10.244.1.0/24" || !reflect.DeepEqual(node.Spec.PodCIDRs, []string{"10.244.1.0/24", "fd00:10:244:1::/64"}) {
		t.Fatalf("node CIDRs = %q %q", node.Spec.PodCIDR, node.Spec.PodCIDRs)
	}
	o, err = c.Decode(storedProtobuf(t, fixtureRangeAllocation(), gvService))
	if err != nil {
		t.Fatal(err)
	}
	ra := o.Obj.(*corev1.RangeAllocation)
	if ra.Range != "10.96.0.0/12" || !bytes.Equal(ra.Data, fixtureRangeAllocation().Data) {
		t.Fatalf("RangeAllocation = %q %x", ra.Range, ra.Data)
	}
}

func TestEditAndEncode(t *testing.T) {
	c := New()
	o, err := c.Decode(storedProtobuf(t, fixtureService(), gvService))
	if err != nil {
		t.Fatal(err)
	}
	svc := o.Obj.(*corev1.Service)
	svc.Spec.ClusterIP = "10.112.0.10"
	svc.Spec.ClusterIPs[0] = "10.112.0.10"
	out, err := c.Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureService()
	want.Spec.ClusterIP = "10.112.0.10"
	want.Spec.ClusterIPs[0] = "10.112.0.10"
	if !bytes.Equal(out, storedProtobuf(t, want, gvService)) {
		t.Fatal("edited Service encodes differently from the same object encoded by the apiserver path")
	}
	if err := c.CheckRoundTrip(out); err != nil {
		t.Fatal(err)
	}
}

// TestEncodeNewObject: a rule creating an object fills Object without TypeMeta on Obj.
func TestEncodeNewObject(t *testing.T) {
	c := New()
	ip := fixtureIPAddressV1beta1()
	gvk := gvNetworkingBeta1.WithKind("IPAddress")
	out, err := c.Encode(&Object{Encoding: Protobuf, GVK: gvk, Obj: ip})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, storedProtobuf(t, fixtureIPAddressV1beta1(), gvNetworkingBeta1)) {
		t.Fatal("new IPAddress encodes differently from the apiserver path")
	}
	if !ip.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatalf("Encode modified the caller's object: TypeMeta %v", ip.TypeMeta)
	}
	out2, err := c.EncodeProtobuf(ip, gvk)
	if err != nil || !bytes.Equal(out, out2) {
		t.Fatalf("EncodeProtobuf = %v, same bytes %v", err, bytes.Equal(out, out2))
	}
	if !ip.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatal("EncodeProtobuf modified the caller's object")
	}
}

func TestEncodeErrors(t *testing.T) {
	c := New()
	ipV1 := fixtureIPAddressV1()
	tests := []struct {
		name string
		obj  *Object
		want string
	}{
		{"nil object", &Object{Encoding: Protobuf, GVK: gvkService}, "nil object"},
		{"typed nil", &Object{Encoding: Protobuf, GVK: gvkService, Obj: (*corev1.Service)(nil)}, "nil object"},
		{"no gvk", &Object{Encoding: Protobuf, Obj: &corev1.Service{}}, "needs an apiVersion/kind"},
		{"wrong type for gvk", &Object{Encoding: Protobuf, GVK: gvNetworkingBeta1.WithKind("IPAddress"), Obj: ipV1}, "not as networking.k8s.io/v1beta1 IPAddress"},
		{"gvk disagrees with object", &Object{Encoding: Protobuf, GVK: gvService.WithKind("Node"), Obj: &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}}}, "but the object says"},
		{"unstructured as protobuf", &Object{Encoding: Protobuf, GVK: gvkIPPool, Obj: &unstructured.Unstructured{Object: map[string]any{}}}, "cannot be encoded as protobuf"},
		{"unknown gvk", &Object{Encoding: Protobuf, GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Foo"}, Obj: &corev1.Service{}}, "unknown to this build"},
		{"encrypted", &Object{Encoding: Encrypted, GVK: gvkService, Obj: &corev1.Service{}}, "cannot encode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Encode(tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Encode error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestEncodeJSON(t *testing.T) {
	c := New()
	o, err := c.Decode([]byte(ippoolJSON))
	if err != nil {
		t.Fatal(err)
	}
	// The custom resource bytes are exactly what apimachinery's JSON serializer and
	// unstructured.UnstructuredJSONScheme (which apiextensions-apiserver stores with) write.
	out, err := c.EncodeJSON(o.Obj)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != ippoolJSON {
		t.Fatalf("EncodeJSON = %q", out)
	}
	var buf bytes.Buffer
	if err := unstructured.UnstructuredJSONScheme.Encode(o.Obj, &buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != ippoolJSON {
		t.Fatalf("UnstructuredJSONScheme writes %q", buf.String())
	}

	// A typed object without TypeMeta gets its apiVersion/kind from the scheme.
	cm := fixtureConfigMap()
	out, err = c.EncodeJSON(cm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"kubeadm-config"`)) || !bytes.HasSuffix(out, []byte("}\n")) {
		t.Fatalf("EncodeJSON(ConfigMap) = %q", out)
	}
	if !cm.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatal("EncodeJSON modified the caller's object")
	}
}

// TestTypedJSONKeyOrder: CRDs and APIServices are stored from typed structs, so their keys are not
// sorted. Plain unstructured encoding would reorder them; the codec keeps the stored order.
func TestTypedJSONKeyOrder(t *testing.T) {
	c := New()
	o, err := c.Decode([]byte(crdJSON))
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := c.EncodeJSON(o.Obj)
	if err != nil {
		t.Fatal(err)
	}
	if string(sorted) == crdJSON {
		t.Fatal("expected plain unstructured encoding to reorder the CRD's keys")
	}
	if !jsonEqual(t, sorted, []byte(crdJSON)) {
		t.Fatal("plain encoding changed the CRD's content, not only its key order")
	}

	// Edit: change a value, add a label (a new key in an existing object) and a new top-level key.
	u := o.Obj.(*unstructured.Unstructured)
	if err := unstructured.SetNestedField(u.Object, "Namespaced", "spec", "scope"); err != nil {
		t.Fatal(err)
	}
	u.SetLabels(map[string]string{"app": "calico"})
	out, err := c.Encode(o)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(crdJSON, `"scope":"Cluster"`, `"scope":"Namespaced"`, 1)
	want = strings.Replace(want, `"subresource":"status"}]}`, `"subresource":"status"}],"labels":{"app":"calico"}}`, 1)
	if string(out) != want {
		t.Fatalf("edited CRD:\n got: %s\nwant: %s", out, want)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestDetect(t *testing.T) {
	c := []struct {
		name  string
		value []byte
		want  Encoding
	}{
		{"protobuf", storedProtobuf(t, fixtureSecret(), gvService), Protobuf},
		{"protobuf magic only", []byte("k8s\x00"), Protobuf},
		{"json", []byte(ippoolJSON), JSON},
		{"json after whitespace", []byte(" \n\t\r{\"kind\":\"X\"}"), JSON},
		{"cbor", ipamBlockCBOR(t), CBOR},
		{"aescbc", []byte("k8s:enc:aescbc:v1:key1:\x8a\x01\x02:\x00"), Encrypted},
		{"aesgcm", []byte("k8s:enc:aesgcm:v1:key1:\x00\x01"), Encrypted},
		{"secretbox", []byte("k8s:enc:secretbox:v1:key1:\x00"), Encrypted},
		{"kms v1", []byte("k8s:enc:kms:v1:vault:\x00\x20"), Encrypted},
		{"kms v2", []byte("k8s:enc:kms:v2:name:\x0a\x20"), Encrypted},
		{"empty", nil, Unknown},
		{"whitespace only", []byte("  \n"), Unknown},
		{"json array", []byte("[1]"), Unknown},
		{"yaml", []byte("apiVersion: v1\nkind: Service\n"), Unknown},
		{"k8s prefix only", []byte("k8s"), Unknown},
		{"other k8s magic", []byte("k8s\x01abc"), Unknown},
		{"cbor without self-describe tag", []byte{0xa1, 0x61, 0x61, 0x01}, Unknown},
	}
	for _, tc := range c {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect(tc.value); got != tc.want {
				t.Fatalf("Detect(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestEncodingString(t *testing.T) {
	for e, want := range map[Encoding]string{Unknown: "unknown", Protobuf: "protobuf", JSON: "json", CBOR: "cbor", Encrypted: "encrypted", Encoding(42): "unknown"} {
		if got := e.String(); got != want {
			t.Errorf("Encoding(%d).String() = %q, want %q", int(e), got, want)
		}
	}
}

func TestParseEncrypted(t *testing.T) {
	tests := []struct {
		value string
		want  EncryptedInfo
		ok    bool
	}{
		{"k8s:enc:aescbc:v1:key1:\x8a\x01:\x02", EncryptedInfo{"aescbc", "v1", "key1"}, true},
		{"k8s:enc:aesgcm:v1:2024-rotation:\x00", EncryptedInfo{"aesgcm", "v1", "2024-rotation"}, true},
		{"k8s:enc:secretbox:v1:sb:", EncryptedInfo{"secretbox", "v1", "sb"}, true},
		{"k8s:enc:kms:v1:vault-kms:\x00\x20", EncryptedInfo{"kms", "v1", "vault-kms"}, true},
		{"k8s:enc:kms:v2:name:\x0a\x20", EncryptedInfo{"kms", "v2", "name"}, true},
		{"k8s:enc:aescbc:v1:key1", EncryptedInfo{}, false}, // no ':' after the key name
		{"k8s:enc:aescbc:v1::x", EncryptedInfo{}, false},   // empty key name
		{"k8s:enc:aescbc", EncryptedInfo{}, false},
		{"k8s:enc:", EncryptedInfo{}, false},
		{"k8s\x00\x0a", EncryptedInfo{}, false},
		{`{"kind":"Secret"}`, EncryptedInfo{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseEncrypted([]byte(tc.value))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseEncrypted(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
		}
	}
}

// envelopeFor builds a protobuf value with the given TypeMeta around raw, as the apiserver would.
func envelopeFor(apiVersion, kind string, raw []byte) []byte {
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	b, err := unk.Marshal()
	if err != nil {
		panic(err)
	}
	return append([]byte("k8s\x00"), b...)
}

func TestDecodeErrors(t *testing.T) {
	c := New()
	service := storedProtobuf(t, fixtureService(), gvService)
	fooRaw, _ := (&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foo"}}).Marshal()
	tests := []struct {
		name    string
		value   []byte
		want    error
		wantGVK schema.GroupVersionKind // for UnknownTypeError
	}{
		{"empty", nil, ErrUndecodable, schema.GroupVersionKind{}},
		{"garbage", []byte("\x00\x01garbage"), ErrUndecodable, schema.GroupVersionKind{}},
		{"yaml", []byte("apiVersion: v1\nkind: Service\n"), ErrUndecodable, schema.GroupVersionKind{}},
		{"protobuf magic only", []byte("k8s\x00"), ErrUndecodable, schema.GroupVersionKind{}},
		{"truncated protobuf", service[:len(service)/2], ErrUndecodable, schema.GroupVersionKind{}},
		{"truncated protobuf tail", service[:len(service)-3], ErrUndecodable, schema.GroupVersionKind{}},
		{"protobuf envelope without kind", envelopeFor("v1", "", fooRaw), ErrUndecodable, schema.GroupVersionKind{}},
		{"protobuf raw is not the object", envelopeFor("v1", "Service", []byte{0x0a, 0xff, 0xff}), ErrUndecodable, schema.GroupVersionKind{}},
		{"protobuf content type set", append(envelopeFor("v1", "ConfigMap", fooRaw)[:len(envelopeFor("v1", "ConfigMap", fooRaw))-2], 0x22, 0x10, 'a', 'p', 'p', 'l', 'i', 'c', 'a', 't', 'i', 'o', 'n', '/', 'j', 's', 'o', 'n'), ErrUndecodable, schema.GroupVersionKind{}},
		{"unknown kind", envelopeFor("example.com/v1", "Foo", fooRaw), ErrUnknownType, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Foo"}},
		{"removed version", envelopeFor("networking.k8s.io/v1alpha1", "IPAddress", fooRaw), ErrUnknownType, schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1alpha1", Kind: "IPAddress"}},
		{"json garbage", []byte("{not json"), ErrUndecodable, schema.GroupVersionKind{}},
		{"json without kind", []byte(`{"apiVersion":"v1","metadata":{"name":"x"}}` + "\n"), ErrUndecodable, schema.GroupVersionKind{}},
		{"json without apiVersion", []byte(`{"kind":"IPPool"}`), ErrUndecodable, schema.GroupVersionKind{}},
		{"json duplicate key", []byte(`{"kind":"IPPool","apiVersion":"a/v1","kind":"IPPool"}`), ErrUndecodable, schema.GroupVersionKind{}},
		{"json trailing data", []byte(`{"apiVersion":"a/v1","kind":"IPPool"}{}`), ErrUndecodable, schema.GroupVersionKind{}},
		{"cbor garbage", []byte{0xd9, 0xd9, 0xf7, 0xff}, ErrUndecodable, schema.GroupVersionKind{}},
		{"aescbc", []byte("k8s:enc:aescbc:v1:key1:\x00\x01\x02"), ErrEncrypted, schema.GroupVersionKind{}},
		{"kms v2", []byte("k8s:enc:kms:v2:name:\x0a\x20"), ErrEncrypted, schema.GroupVersionKind{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := c.Decode(tc.value)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, %v; want error %v", o, err, tc.want)
			}
			if errors.Is(tc.want, ErrUnknownType) {
				var ute *UnknownTypeError
				if !errors.As(err, &ute) || ute.GVK != tc.wantGVK || ute.Encoding != Protobuf {
					t.Fatalf("error %v is not an UnknownTypeError for %v", err, tc.wantGVK)
				}
			}
			if err := c.CheckRoundTrip(tc.value); !errors.Is(err, tc.want) {
				t.Fatalf("CheckRoundTrip = %v, want error %v", err, tc.want)
			}
		})
	}
}

// TestCheckRoundTripRefusesUnknownFields: an object written by a newer Kubernetes carries protobuf
// fields this build's k8s.io/api does not know. Decode silently drops them, so CheckRoundTrip must
// refuse the object.
func TestCheckRoundTripRefusesUnknownFields(t *testing.T) {
	c := New()
	svc := fixtureService()
	raw, err := svc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	unknownField := appendBytesField(nil, 9999, []byte("from-a-newer-cluster"))

	meta, _ := svc.ObjectMeta.Marshal()
	spec, _ := svc.Spec.Marshal()
	status, _ := svc.Status.Marshal()
	nested := appendBytesField(nil, 1, meta)
	nested = appendBytesField(nested, 2, append(spec, unknownField...)) // a new ServiceSpec field
	nested = appendBytesField(nested, 3, status)

	tests := []struct {
		name string
		raw  []byte
	}{
		{"top-level field", append(append([]byte{}, raw...), unknownField...)},
		{"field inside spec", nested},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			value := envelopeFor("v1", "Service", tc.raw)
			o, err := c.Decode(value)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if o.Obj.(*corev1.Service).Spec.ClusterIP != "10.96.0.10" {
				t.Fatal("decoded Service lost its known fields")
			}
			err = c.CheckRoundTrip(value)
			if !errors.Is(err, ErrNotRoundTrip) {
				t.Fatalf("CheckRoundTrip = %v, want ErrNotRoundTrip", err)
			}
			if !strings.Contains(err.Error(), "does not know") || !strings.Contains(err.Error(), "v1 Service") {
				t.Fatalf("unhelpful error: %v", err)
			}
			t.Log(err)
		})
	}
	// Sanity: the hand-built raw without the extra field is the Service's own encoding.
	plain := appendBytesField(nil, 1, meta)
	plain = appendBytesField(plain, 2, spec)
	plain = appendBytesField(plain, 3, status)
	if !bytes.Equal(plain, raw) {
		t.Fatal("hand-built Service protobuf differs from Marshal")
	}
}

func TestCheckRoundTripJSON(t *testing.T) {
	c := New()
	tests := []struct {
		name  string
		value string
	}{
		{"no trailing newline", strings.TrimSuffix(ippoolJSON, "\n")},
		{"indented", "{\n  \"apiVersion\": \"crd.projectcalico.org/v1\",\n  \"kind\": \"IPPool\"\n}\n"},
		{"unescaped html", `{"apiVersion":"a.io/v1","kind":"X","spec":{"sel":"a < b"}}` + "\n"},
		{"float with trailing zero", `{"apiVersion":"a.io/v1","kind":"X","spec":{"f":1.0}}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Decode([]byte(tc.value)); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if err := c.CheckRoundTrip([]byte(tc.value)); !errors.Is(err, ErrNotRoundTrip) {
				t.Fatalf("CheckRoundTrip = %v, want ErrNotRoundTrip", err)
			}
		})
	}
	// Numbers the apiserver writes survive: int64 beyond float64 precision, and floats.
	ok := `{"apiVersion":"a.io/v1","kind":"X","spec":{"big":9007199254740993,"f":0.25,"neg":-3,"small":1e-7}}` + "\n"
	if err := c.CheckRoundTrip([]byte(ok)); err != nil {
		t.Fatal(err)
	}
}

func TestPeekGVK(t *testing.T) {
	c := New()
	fooRaw, _ := (&corev1.ConfigMap{}).Marshal()
	tests := []struct {
		name    string
		value   []byte
		gvk     schema.GroupVersionKind
		enc     Encoding
		wantErr error
	}{
		{"service", storedProtobuf(t, fixtureService(), gvService), gvkService, Protobuf, nil},
		{"unknown kind is still peeked", envelopeFor("example.com/v1", "Foo", fooRaw), schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Foo"}, Protobuf, nil},
		{"truncated raw after TypeMeta", envelopeFor("v1", "Service", fooRaw)[:20], gvkService, Protobuf, nil},
		{"json", []byte(ippoolJSON), gvkIPPool, JSON, nil},
		{"encrypted", []byte("k8s:enc:aesgcm:v1:k:\x00"), schema.GroupVersionKind{}, Encrypted, ErrEncrypted},
		{"empty", nil, schema.GroupVersionKind{}, Unknown, ErrUndecodable},
		{"magic only", []byte("k8s\x00"), schema.GroupVersionKind{}, Protobuf, ErrUndecodable},
		{"truncated TypeMeta", envelopeFor("v1", "Service", fooRaw)[:8], schema.GroupVersionKind{}, Protobuf, ErrUndecodable},
		{"json without kind", []byte(`{"apiVersion":"v1"}`), schema.GroupVersionKind{}, JSON, ErrUndecodable},
		{"json garbage", []byte(`{"apiVersion":`), schema.GroupVersionKind{}, JSON, ErrUndecodable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gvk, enc, err := c.PeekGVK(tc.value)
			if gvk != tc.gvk || enc != tc.enc || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("PeekGVK = %v, %v, %v; want %v, %v, %v", gvk, enc, err, tc.gvk, tc.enc, tc.wantErr)
			}
		})
	}
}

func TestNewUsesClientGoScheme(t *testing.T) {
	c := New()
	if c.scheme != clientgoscheme.Scheme {
		t.Fatal("New built a private scheme although client-go's knows every required kind")
	}
	for gvk := range requiredKinds() {
		if !c.scheme.Recognizes(gvk) {
			t.Errorf("scheme does not recognise %v", gvk)
		}
	}
}
