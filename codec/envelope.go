package codec

import (
	"encoding/binary"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// envelope is the top level of a protobuf value: the fields of runtime.Unknown
// ([apimachinery] pkg/runtime/generated.proto), as sub-slices of the value (nothing is copied).
type envelope struct {
	typeMeta        []byte // field 1, runtime.TypeMeta {1 apiVersion, 2 kind}
	raw             []byte // field 2, the typed object's protobuf
	contentEncoding []byte // field 3, written empty by the apiserver
	contentType     []byte // field 4, written empty by the apiserver
	// plain: every field was one of the four, length-delimited, as the
	// apiserver writes them (runtime.Unknown's unmarshaller refuses other
	// wire types for them, and skips other fields with rules of its own).
	plain bool
}

// Protobuf wire types (https://protobuf.dev/programming-guides/encoding/).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// parseEnvelope walks the runtime.Unknown message after the "k8s\x00" magic. With onlyTypeMeta it
// stops at the TypeMeta field (which the apiserver writes first), so peeking is cheap. Fields it
// does not know are skipped, as the gogo unmarshaller would.
func parseEnvelope(value []byte, onlyTypeMeta bool) (envelope, error) {
	var env envelope
	if len(value) <= len(protobufMagic) {
		return env, undecodable("protobuf value has no body after the k8s\\x00 magic")
	}
	b := value[len(protobufMagic):]
	env.plain = true
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return env, undecodable("truncated protobuf envelope (bad field tag)")
		}
		b = b[n:]
		field, wire := tag>>3, tag&7
		if field == 0 {
			return env, undecodable("protobuf envelope has an invalid field number 0")
		}
		if field > 4 || wire != wireBytes {
			env.plain = false
		}
		var v []byte
		switch wire {
		case wireVarint:
			if _, n = binary.Uvarint(b); n <= 0 {
				return env, undecodable("truncated protobuf envelope (field %d)", field)
			}
			b = b[n:]
			continue
		case wireFixed64, wireFixed32:
			size := 8
			if wire == wireFixed32 {
				size = 4
			}
			if len(b) < size {
				return env, undecodable("truncated protobuf envelope (field %d)", field)
			}
			b = b[size:]
			continue
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return env, undecodable("truncated protobuf envelope (field %d)", field)
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return env, undecodable("protobuf envelope field %d has unsupported wire type %d", field, wire)
		}
		switch field {
		case 1:
			env.typeMeta = v
			if onlyTypeMeta {
				return env, nil
			}
		case 2:
			env.raw = v
		case 3:
			env.contentEncoding = v
		case 4:
			env.contentType = v
		}
	}
	return env, nil
}

// gvk returns the apiVersion/kind of the envelope's TypeMeta.
func (env envelope) gvk() (schema.GroupVersionKind, error) {
	var tm runtime.TypeMeta
	if err := tm.Unmarshal(env.typeMeta); err != nil {
		return schema.GroupVersionKind{}, undecodable("protobuf envelope TypeMeta: %v", err)
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return schema.GroupVersionKind{}, undecodable("protobuf envelope without apiVersion/kind (apiVersion %q, kind %q)", tm.APIVersion, tm.Kind)
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, undecodable("protobuf envelope apiVersion %q: %v", tm.APIVersion, err)
	}
	return gv.WithKind(tm.Kind), nil
}
