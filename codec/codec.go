package codec

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Object is one decoded stored value.
type Object struct {
	// Encoding is how the value was (or is to be) stored: Protobuf, JSON or CBOR.
	Encoding Encoding
	// GVK is the apiVersion/kind as stored. Encode writes exactly this one.
	GVK schema.GroupVersionKind
	// Obj is the typed object (e.g. *corev1.Service) for a protobuf value, and an
	// *unstructured.Unstructured for a JSON or CBOR value. It has GVK set in its TypeMeta.
	Obj runtime.Object

	// layout is the stored key order of a JSON value whose keys are not sorted (CRDs,
	// APIServices); nil when the JSON serializer's sorted output reproduces the value.
	layout *jsonLayout
}

// Codec decodes and encodes stored values. It is safe for concurrent use.
type Codec struct {
	scheme     *runtime.Scheme
	proto      *protobuf.Serializer
	json       *kjson.Serializer
	cbor       cbor.Serializer
	apiVersion string    // version of k8s.io/api in this build, for error messages
	scratch    sync.Pool // *ownedWriter: CheckRoundTrip's encodings
}

// New returns a Codec over client-go's scheme (k8s.io/client-go/kubernetes/scheme.Scheme), which
// holds every built-in group this build knows. If one of the kinds snapshift edits were missing
// from it, New would register it in a private copy; client-go's scheme is never modified.
func New() *Codec {
	s := newScheme()
	return &Codec{
		scheme:     s,
		proto:      protobuf.NewSerializer(s, s),
		json:       kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{}),
		cbor:       cbor.NewSerializer(s, s),
		apiVersion: apiModuleVersion(),
	}
}

// requiredKinds are the stored kinds snapshift's rules edit, with a prototype of each.
func requiredKinds() map[schema.GroupVersionKind]runtime.Object {
	core := corev1.SchemeGroupVersion
	netV1 := networkingv1.SchemeGroupVersion
	netV1beta1 := networkingv1beta1.SchemeGroupVersion
	return map[schema.GroupVersionKind]runtime.Object{
		core.WithKind("Service"):         &corev1.Service{},
		core.WithKind("Node"):            &corev1.Node{},
		core.WithKind("Secret"):          &corev1.Secret{},
		core.WithKind("ConfigMap"):       &corev1.ConfigMap{},
		core.WithKind("Endpoints"):       &corev1.Endpoints{},
		core.WithKind("Pod"):             &corev1.Pod{},
		core.WithKind("ServiceAccount"):  &corev1.ServiceAccount{},
		core.WithKind("RangeAllocation"): &corev1.RangeAllocation{},

		netV1.WithKind("IPAddress"):        &networkingv1.IPAddress{},
		netV1.WithKind("ServiceCIDR"):      &networkingv1.ServiceCIDR{},
		netV1beta1.WithKind("IPAddress"):   &networkingv1beta1.IPAddress{},
		netV1beta1.WithKind("ServiceCIDR"): &networkingv1beta1.ServiceCIDR{},

		coordinationv1.SchemeGroupVersion.WithKind("Lease"):      &coordinationv1.Lease{},
		discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"): &discoveryv1.EndpointSlice{},
	}
}

// newScheme returns client-go's scheme if it knows every required kind, else a private scheme
// with client-go's groups plus the missing kinds.
func newScheme() *runtime.Scheme {
	required := requiredKinds()
	var missing []schema.GroupVersionKind
	for gvk := range required {
		if !clientgoscheme.Scheme.Recognizes(gvk) {
			missing = append(missing, gvk)
		}
	}
	if len(missing) == 0 {
		return clientgoscheme.Scheme
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		// AddToScheme only fails on conflicting registrations inside client-go itself.
		panic(fmt.Sprintf("codec: building the scheme: %v", err))
	}
	for _, gvk := range missing {
		s.AddKnownTypeWithName(gvk, required[gvk])
	}
	return s
}

// apiModuleVersion returns the version of k8s.io/api linked into this binary.
func apiModuleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "k8s.io/api" {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "v0.37"
}

// Decode decodes one stored value without defaulting or conversion.
//
// Errors: ErrEncrypted for an encrypted value; *UnknownTypeError (wrapping ErrUnknownType) for a
// protobuf value whose apiVersion/kind the scheme does not know; ErrUndecodable for anything
// malformed (empty, truncated, not a Kubernetes object).
func (c *Codec) Decode(value []byte) (*Object, error) {
	switch Detect(value) {
	case Protobuf:
		return c.decodeProtobuf(value)
	case JSON:
		return c.decodeJSON(value)
	case CBOR:
		return c.decodeCBOR(value)
	case Encrypted:
		return nil, encryptedError(value)
	default:
		if len(value) == 0 {
			return nil, undecodable("empty value")
		}
		return nil, undecodable("not a protobuf, JSON, CBOR or encrypted value (starts with %q)", head(value))
	}
}

func (c *Codec) decodeProtobuf(value []byte) (*Object, error) {
	return c.decodeProtobufWith(value, true)
}

// decodeProtobufWith decodes a protobuf value; inPlace false sends every
// value through apimachinery's serializer (the tests' reference).
func (c *Codec) decodeProtobufWith(value []byte, inPlace bool) (*Object, error) {
	env, err := parseEnvelope(value, false)
	if err != nil {
		return nil, err
	}
	gvk, err := env.gvk()
	if err != nil {
		return nil, err
	}
	if !c.scheme.Recognizes(gvk) {
		return nil, &UnknownTypeError{GVK: gvk, Encoding: Protobuf}
	}
	if len(env.contentEncoding) > 0 || len(env.contentType) > 0 {
		return nil, undecodable("%s: protobuf envelope with content encoding %q and type %q; the apiserver writes both empty",
			gvkString(gvk), env.contentEncoding, env.contentType)
	}
	var (
		obj runtime.Object
		ok  bool
	)
	if inPlace {
		obj, ok = c.unmarshalRaw(env, gvk)
	}
	if !ok {
		var err error
		if obj, _, err = c.proto.Decode(value, nil, nil); err != nil {
			return nil, undecodable("%s: %v", gvkString(gvk), err)
		}
	}
	return &Object{Encoding: Protobuf, GVK: gvk, Obj: obj}, nil
}

// unmarshalRaw decodes a plain envelope's object as apimachinery's
// protobuf serializer does (a new object of the kind, Reset, Unmarshal,
// its apiVersion/kind set), but from the value's own bytes: the serializer
// first unmarshals the envelope into a runtime.Unknown, which copies the
// object's bytes (430 MB of plan's 3 GB of garbage on the 8 GiB bench). The
// generated unmarshallers copy every string and byte slice they keep, so
// the object does not point into value. Not ok for anything else, and on
// any failure: then the serializer decodes it, and says what is wrong.
func (c *Codec) unmarshalRaw(env envelope, gvk schema.GroupVersionKind) (runtime.Object, bool) {
	if !env.plain {
		return nil, false
	}
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	u, ok := obj.(interface {
		Reset()
		Unmarshal([]byte) error
	})
	if !ok {
		return nil, false
	}
	u.Reset()
	if err := u.Unmarshal(env.raw); err != nil {
		return nil, false
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, true
}

func (c *Codec) decodeJSON(value []byte) (*Object, error) {
	u, err := decodeUnstructured(unstructured.UnstructuredJSONScheme, "json", value)
	if err != nil {
		return nil, err
	}
	layout, err := readJSONLayout(value)
	if err != nil {
		return nil, undecodable("the stored JSON: %v", err)
	}
	return &Object{Encoding: JSON, GVK: u.GroupVersionKind(), Obj: u, layout: layout}, nil
}

func (c *Codec) decodeCBOR(value []byte) (*Object, error) {
	u, err := decodeUnstructured(c.cbor, "cbor", value)
	if err != nil {
		return nil, err
	}
	return &Object{Encoding: CBOR, GVK: u.GroupVersionKind(), Obj: u}, nil
}

// decodeUnstructured decodes a JSON or CBOR value (format names it in
// errors) with d; the object must name its apiVersion and kind.
func decodeUnstructured(d runtime.Decoder, format string, value []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if _, _, err := d.Decode(value, nil, u); err != nil {
		return nil, undecodable("the stored %s: %v", strings.ToUpper(format), err) // not "json: ...", the library's prefix
	}
	if gvk := u.GroupVersionKind(); gvk.Kind == "" || gvk.Version == "" {
		return nil, undecodable("%s object without apiVersion/kind", format)
	}
	return u, nil
}

// Encode encodes o as the apiserver stores it, in o.Encoding and with o.GVK as apiVersion/kind:
//   - Protobuf: "k8s\x00" + runtime.Unknown{TypeMeta{apiVersion, kind}, Raw}, written by
//     apimachinery's protobuf serializer; o.Obj must be the typed object registered for o.GVK.
//   - JSON: apimachinery's JSON serializer (encoding/json: sorted map keys, HTML-escaped, one
//     trailing "\n"); for a value decoded with unsorted keys (CRDs, APIServices) the stored key
//     order is kept.
//   - CBOR: apimachinery's CBOR serializer.
//
// If o.Obj carries no apiVersion/kind, o.GVK is set on a copy; o.Obj is never modified. If
// o.GVK is empty, the object's own is used; if both are set they must agree.
func (c *Codec) Encode(o *Object) ([]byte, error) {
	return c.encode(o, &ownedWriter{})
}

// encode is Encode; a protobuf value is written through w (a pooled one
// for a value only compared, as CheckRoundTrip's).
func (c *Codec) encode(o *Object, w *ownedWriter) ([]byte, error) {
	if o == nil || isNil(o.Obj) {
		return nil, errors.New("codec: Encode of a nil object")
	}
	gvk, err := resolveGVK(o.GVK, o.Obj)
	if err != nil {
		return nil, err
	}
	switch o.Encoding {
	case Protobuf:
		return c.encodeProtobuf(o.Obj, gvk, w)
	case JSON:
		obj := withGVK(o.Obj, gvk)
		if u, ok := obj.(*unstructured.Unstructured); ok && o.layout != nil {
			var buf bytes.Buffer
			if err := writeJSONLayout(&buf, u.Object, o.layout); err != nil {
				return nil, fmt.Errorf("codec: encoding %s as JSON: %w", gvkString(gvk), err)
			}
			buf.WriteByte('\n') // as json.Encoder.Encode does
			return buf.Bytes(), nil
		}
		return c.encodeWith(c.json, obj, gvk, "JSON")
	case CBOR:
		return c.encodeWith(c.cbor, withGVK(o.Obj, gvk), gvk, "CBOR")
	default:
		return nil, fmt.Errorf("codec: cannot encode %s as %s", gvkString(gvk), o.Encoding)
	}
}

// EncodeProtobuf encodes a typed object as a protobuf value with apiVersion/kind gvk, e.g. to
// create a new object or a test fixture. gvk is set on a shallow copy; obj is not modified. obj
// must be the type the scheme registers for gvk.
func (c *Codec) EncodeProtobuf(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	return c.encodeProtobuf(obj, gvk, &ownedWriter{})
}

func (c *Codec) encodeProtobuf(obj runtime.Object, gvk schema.GroupVersionKind, out *ownedWriter) ([]byte, error) {
	if isNil(obj) {
		return nil, errors.New("codec: EncodeProtobuf of a nil object")
	}
	if gvk.Empty() {
		return nil, errors.New("codec: EncodeProtobuf needs an apiVersion/kind")
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return nil, fmt.Errorf("codec: %s: an unstructured object cannot be encoded as protobuf", gvkString(gvk))
	}
	if !c.scheme.Recognizes(gvk) {
		return nil, &UnknownTypeError{GVK: gvk, Encoding: Protobuf}
	}
	kinds, _, err := c.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("codec: %s: %w", gvkString(gvk), err)
	}
	if !containsGVK(kinds, gvk) {
		return nil, fmt.Errorf("codec: %T is registered as %v, not as %s", obj, kinds, gvkString(gvk))
	}
	obj = withGVK(obj, gvk)
	if err := c.proto.EncodeWithAllocator(obj, out, out); err != nil {
		return nil, fmt.Errorf("codec: encoding %s as %s: %w", gvkString(gvk), "protobuf", err)
	}
	return out.b, nil
}

// ownedWriter is the protobuf serializer's allocator and writer at once:
// the serializer marshals into a buffer it allocates and writes that
// buffer once, which the writer then keeps as it is, instead of copying
// it into a bytes.Buffer (a copy of every value written, and the buffer's
// growth: 160 MB of plan's garbage on the 8 GiB bench).
type ownedWriter struct {
	buf []byte // the last buffer Allocate made
	b   []byte // what was written
	// spare, when set, is a buffer Allocate reuses (a pooled writer's):
	// what was written is then valid only until the writer is reused.
	spare []byte
}

// Allocate implements runtime.MemoryAllocator.
func (w *ownedWriter) Allocate(n uint64) []byte {
	if uint64(cap(w.spare)) >= n {
		w.buf = w.spare[:n]
	} else {
		w.buf = make([]byte, n)
	}
	return w.buf
}

// reset readies a pooled writer for its next value, keeping the largest
// buffer it has used.
func (w *ownedWriter) reset() {
	if cap(w.b) > cap(w.spare) {
		w.spare = w.b[:0]
	}
	w.buf, w.b = nil, nil
}

// Write keeps p if it is the start of the buffer Allocate made and the
// first write, else appends a copy.
func (w *ownedWriter) Write(p []byte) (int, error) {
	if w.b == nil && len(p) > 0 && len(w.buf) > 0 && &p[0] == &w.buf[0] {
		w.b, w.buf = p, nil
		return len(p), nil
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// EncodeJSON encodes obj with apimachinery's JSON serializer, as the apiserver writes custom
// resources: encoding/json output with a trailing "\n". A typed object without apiVersion/kind
// gets the one the scheme registers for its type (on a shallow copy).
func (c *Codec) EncodeJSON(obj runtime.Object) ([]byte, error) {
	if isNil(obj) {
		return nil, errors.New("codec: EncodeJSON of a nil object")
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		if _, ok := obj.(runtime.Unstructured); ok {
			return nil, errors.New("codec: EncodeJSON of an unstructured object without apiVersion/kind")
		}
		kinds, _, err := c.scheme.ObjectKinds(obj)
		if err != nil {
			return nil, fmt.Errorf("codec: EncodeJSON: %w", err)
		}
		if len(kinds) != 1 {
			return nil, fmt.Errorf("codec: EncodeJSON: %T is registered as %v; set its apiVersion/kind", obj, kinds)
		}
		gvk = kinds[0]
		obj = withGVK(obj, gvk)
	}
	return c.encodeWith(c.json, obj, gvk, "JSON")
}

func (c *Codec) encodeWith(enc runtime.Encoder, obj runtime.Object, gvk schema.GroupVersionKind, format string) ([]byte, error) {
	var buf bytes.Buffer
	if err := enc.Encode(obj, &buf); err != nil {
		return nil, fmt.Errorf("codec: encoding %s as %s: %w", gvkString(gvk), format, err)
	}
	return buf.Bytes(), nil
}

// CheckRoundTrip decodes value and encodes it again. It returns nil only if that gives back the
// identical bytes, which is the proof that this build knows every field of the object and may
// edit it, or the identical bytes but for fields Kubernetes removed that hold their empty value
// (removedFields: objects last written by an older apiserver). Otherwise the error wraps ErrNotRoundTrip (or the decode error: ErrEncrypted,
// ErrUnknownType, ErrUndecodable).
func (c *Codec) CheckRoundTrip(value []byte) error {
	o, err := c.Decode(value)
	if err != nil {
		return err
	}
	w, _ := c.scratch.Get().(*ownedWriter) // the value is only compared: its buffer is reused
	if w == nil {
		w = &ownedWriter{}
	}
	defer func() { w.reset(); c.scratch.Put(w) }()
	out, err := c.encode(o, w)
	if err != nil {
		return fmt.Errorf("%w: %s %s: re-encoding failed: %v", ErrNotRoundTrip, o.Encoding, gvkString(o.GVK), err)
	}
	if bytes.Equal(out, value) {
		return nil
	}
	if o.Encoding == Protobuf {
		// An object last written by an older apiserver may carry fields
		// Kubernetes removed since; empty, they are no data to lose.
		stripped, err := withoutRemovedFields(value, o.Obj)
		if err != nil {
			return fmt.Errorf("%w: the stored %s %s: %w; editing it would drop that data, refusing to edit it",
				ErrNotRoundTrip, o.Encoding, gvkString(o.GVK), err)
		}
		if bytes.Equal(out, stripped) {
			return nil
		}
	}
	at := 0
	for at < len(out) && at < len(value) && out[at] == value[at] {
		at++
	}
	return fmt.Errorf("%w: re-encoding the unmodified %s %s gives different bytes (%d stored, %d re-encoded, first difference at byte %d): "+
		"the object has fields or encodings this build (k8s.io/api %s) does not know, likely because the cluster is newer, "+
		"so editing it would silently drop data; refusing to edit it",
		ErrNotRoundTrip, o.Encoding, gvkString(o.GVK), len(value), len(out), at, c.apiVersion)
}

// PeekGVK returns the apiVersion/kind and encoding of a stored value without decoding the whole
// object: for protobuf only the envelope's TypeMeta is read (the rest is not checked), for JSON
// only apiVersion and kind are unmarshalled; a CBOR value (rare) is decoded in full. It does not
// check that the scheme knows the kind. An encrypted value gives Encrypted and ErrEncrypted.
func (c *Codec) PeekGVK(value []byte) (schema.GroupVersionKind, Encoding, error) {
	enc := Detect(value)
	switch enc {
	case Protobuf:
		env, err := parseEnvelope(value, true)
		if err != nil {
			return schema.GroupVersionKind{}, enc, err
		}
		gvk, err := env.gvk()
		return gvk, enc, err
	case JSON:
		gvk, err := kjson.DefaultMetaFactory.Interpret(value)
		if err != nil {
			return schema.GroupVersionKind{}, enc, undecodable("the stored JSON: %v", err)
		}
		if gvk.Kind == "" || gvk.Version == "" {
			return schema.GroupVersionKind{}, enc, undecodable("json object without apiVersion/kind")
		}
		return *gvk, enc, nil
	case CBOR:
		o, err := c.decodeCBOR(value)
		if err != nil {
			return schema.GroupVersionKind{}, enc, err
		}
		return o.GVK, enc, nil
	case Encrypted:
		return schema.GroupVersionKind{}, enc, encryptedError(value)
	default:
		if len(value) == 0 {
			return schema.GroupVersionKind{}, enc, undecodable("empty value")
		}
		return schema.GroupVersionKind{}, enc, undecodable("not a protobuf, JSON, CBOR or encrypted value (starts with %q)", head(value))
	}
}

// resolveGVK picks the apiVersion/kind to encode: the stored one, else the object's own.
func resolveGVK(stored schema.GroupVersionKind, obj runtime.Object) (schema.GroupVersionKind, error) {
	own := obj.GetObjectKind().GroupVersionKind()
	switch {
	case stored.Empty() && own.Empty():
		return stored, errors.New("codec: Encode needs an apiVersion/kind (Object.GVK or the object's TypeMeta)")
	case stored.Empty():
		return own, nil
	case own.Empty() || own == stored:
		return stored, nil
	default:
		return stored, fmt.Errorf("codec: Object.GVK is %s but the object says %s", gvkString(stored), gvkString(own))
	}
}

// withGVK returns obj with apiVersion/kind gvk: obj itself if it already has it, else a shallow
// copy (the caller's object, possibly shared, is never modified).
func withGVK(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	if obj.GetObjectKind().GroupVersionKind() == gvk {
		return obj
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		cp := &unstructured.Unstructured{Object: maps.Clone(u.Object)}
		if cp.Object == nil {
			cp.Object = map[string]any{}
		}
		cp.SetGroupVersionKind(gvk)
		return cp
	}
	var cp runtime.Object
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		p := reflect.New(v.Elem().Type())
		p.Elem().Set(v.Elem())
		cp = p.Interface().(runtime.Object)
	} else {
		cp = obj.DeepCopyObject()
	}
	cp.GetObjectKind().SetGroupVersionKind(gvk)
	return cp
}

// isNil reports whether obj is nil or a typed nil pointer.
func isNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func containsGVK(kinds []schema.GroupVersionKind, gvk schema.GroupVersionKind) bool {
	for _, k := range kinds {
		if k == gvk {
			return true
		}
	}
	return false
}

func encryptedError(value []byte) error {
	if info, ok := ParseEncrypted(value); ok {
		return fmt.Errorf("%w with provider %s %s, key %q", ErrEncrypted, info.Provider, info.Version, info.KeyName)
	}
	return ErrEncrypted
}

func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

// head returns the first bytes of value, for error messages.
func head(value []byte) []byte {
	if len(value) > 16 {
		return value[:16]
	}
	return value
}
