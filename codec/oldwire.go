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
	err := eachField(value[len(protobufMagic):], "protobuf envelope", func(num protowire.Number, typ protowire.Type, whole, v []byte) (err error) {
		if num != 2 || typ != protowire.BytesType {
			out = append(out, whole...)
			return nil
		}
		out, err = appendStripped(out, num, v, t) // runtime.Unknown.raw: the object
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stripMessage walks one message of Go type t by its protobuf struct tags.
func stripMessage(b []byte, t reflect.Type) ([]byte, error) {
	fields := protoFields(t)
	out := make([]byte, 0, len(b))
	err := eachField(b, t.String(), func(num protowire.Number, typ protowire.Type, whole, v []byte) (err error) {
		ft, known := fields[num]
		if !known {
			return removedAndEmpty(t, num, typ, v) // dropped, as a current apiserver writes it
		}
		if typ != protowire.BytesType || !hasProtoFields(ft) {
			out = append(out, whole...)
			return nil
		}
		out, err = appendStripped(out, num, v, ft)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachField calls f with every field of the message b: its number and wire
// type, the whole field (tag and value) and its value. A malformed field
// is undecodable, named by what.
func eachField(b []byte, what string, f func(num protowire.Number, typ protowire.Type, whole, value []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return undecodable("%s: %v", what, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return undecodable("%s: %v", what, protowire.ParseError(m))
		}
		if err := f(num, typ, b[:n+m], b[n:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// appendStripped appends field num, a message of Go type t whose wire
// value (length and bytes) is v, with its removed fields dropped.
func appendStripped(out []byte, num protowire.Number, v []byte, t reflect.Type) ([]byte, error) {
	inner, _ := protowire.ConsumeBytes(v)
	stripped, err := stripMessage(inner, t)
	if err != nil {
		return nil, err
	}
	out = protowire.AppendTag(out, num, protowire.BytesType)
	return protowire.AppendBytes(out, stripped), nil
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
