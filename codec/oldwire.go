package codec

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// removedField is a protobuf field Kubernetes removed from an API type.
// Objects that no apiserver rewrote since still carry it; kube-apiserver
// skips it when it decodes them and leaves it out when it writes them
// again. It is accepted only while it holds its empty value.
type removedField struct {
	typ       reflect.Type
	num       protowire.Number
	name      string
	removedIn string
}

// removedFields are the removed fields this build accepts (empty) in
// stored objects. ObjectMeta.clusterName (15) was written, always empty, by
// every apiserver up to 1.24.
var removedFields = []removedField{
	{reflect.TypeFor[metav1.ObjectMeta](), 15, "clusterName", "1.25"},
}

// UnknownFieldError is a stored protobuf field this build does not know
// and that holds data: editing the object would drop it.
type UnknownFieldError struct {
	Type  string // Go type, e.g. "v1.ObjectMeta"
	Field int
	Name  string // the removed field's name, when Kubernetes removed it
}

func (e *UnknownFieldError) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("field %d (%s, removed from %s) holds data", e.Field, e.Name, e.Type)
	}
	return fmt.Sprintf("field %d of %s holds data this build does not know", e.Field, e.Type)
}

// withoutRemovedFields returns a stored protobuf value ("k8s\x00" +
// runtime.Unknown) with every removed field that holds its empty value
// dropped from the object, wherever its type occurs (metadata, a pod
// template's metadata, ...): the bytes a current apiserver would write for
// the same object. obj gives the Go type to walk by. An unknown field with
// data is an *UnknownFieldError.
func withoutRemovedFields(value []byte, obj runtime.Object) ([]byte, error) {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := append([]byte(nil), protobufMagic...)
	b := value[len(protobufMagic):]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, undecodable("protobuf envelope: %v", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, undecodable("protobuf envelope: %v", protowire.ParseError(m))
		}
		if num == 2 && typ == protowire.BytesType { // runtime.Unknown.raw: the object
			raw, _ := protowire.ConsumeBytes(b[n:])
			stripped, err := stripMessage(raw, t)
			if err != nil {
				return nil, err
			}
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, stripped)
		} else {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out, nil
}

// stripMessage walks one message of Go type t by its protobuf struct tags.
func stripMessage(b []byte, t reflect.Type) ([]byte, error) {
	fields := protoFields(t)
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, undecodable("%s: %v", t, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, undecodable("%s: %v", t, protowire.ParseError(m))
		}
		whole := b[:n+m]
		b = b[n+m:]
		ft, known := fields[num]
		if !known {
			if err := removedAndEmpty(t, num, typ, whole[n:]); err != nil {
				return nil, err
			}
			continue // dropped, as a current apiserver writes it
		}
		if typ != protowire.BytesType || !hasProtoFields(ft) {
			out = append(out, whole...)
			continue
		}
		inner, _ := protowire.ConsumeBytes(whole[n:])
		stripped, err := stripMessage(inner, ft)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, stripped)
	}
	return out, nil
}

// removedAndEmpty accepts an unknown field only if Kubernetes removed it
// from t and it holds its empty value.
func removedAndEmpty(t reflect.Type, num protowire.Number, typ protowire.Type, v []byte) error {
	for _, r := range removedFields {
		if r.typ != t || r.num != num {
			continue
		}
		if (typ == protowire.BytesType && len(v) == 1 && v[0] == 0) || (typ == protowire.VarintType && len(v) == 1 && v[0] == 0) {
			return nil
		}
		return &UnknownFieldError{Type: t.String(), Field: int(num), Name: r.name + " in " + r.removedIn}
	}
	return &UnknownFieldError{Type: t.String(), Field: int(num)}
}

// protoFields maps t's protobuf field numbers to the Go type of the
// message each holds (element type for lists, pointee for pointers); maps
// and scalars map to their own type, which is then copied as it is.
func protoFields(t reflect.Type) map[protowire.Number]reflect.Type {
	out := map[protowire.Number]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("protobuf")
		if tag == "" || tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			continue
		}
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || (ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8) {
			ft = ft.Elem()
		}
		out[protowire.Number(num)] = ft
	}
	return out
}

// hasProtoFields reports whether t is a message this walker can descend
// into: a struct with protobuf-tagged fields (not one with a hand-written
// wire form, such as metav1.Time or resource.Quantity, which is copied).
func hasProtoFields(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("protobuf"); tag != "" && tag != "-" {
			return true
		}
	}
	return false
}
