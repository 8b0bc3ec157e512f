package codec

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"
)

// decodeProtobufBySerializer is decodeProtobuf as it was, every value
// through apimachinery's protobuf serializer: the reference for the
// in-place decode.
func (c *Codec) decodeProtobufBySerializer(value []byte) (*Object, error) {
	return c.decodeProtobufWith(value, false)
}

// TestDecodeInPlaceAgreesWithSerializer: the protobuf values of the
// round-trip cases, cut at every length, with fields the apiserver does not
// write (an unknown field, a known one with another wire type, the object
// twice) and with random bytes changed, decode to the same object, or fail
// with the same error, as through the serializer; and the object does not
// point into the value (overwriting the value afterwards changes nothing).
func TestDecodeInPlaceAgreesWithSerializer(t *testing.T) {
	c := New()
	r := rand.New(rand.NewSource(11))
	var values [][]byte
	for _, tc := range roundTripCases(t) {
		if tc.encoding != Protobuf {
			continue
		}
		v := tc.value
		for n := len(protobufMagic); n <= len(v); n++ {
			values = append(values, v[:n])
		}
		env, err := parseEnvelope(v, false)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values,
			append(bytes.Clone(v), 0x28, 0x01),       // field 5, varint
			append(bytes.Clone(v), 0x18, 0x01),       // field 3 as a varint
			append(bytes.Clone(v), 0x1d, 1, 2, 3, 4), // field 3 as fixed32
			appendBytesField(bytes.Clone(v), 2, env.raw),
			appendBytesField(bytes.Clone(v), 2, env.raw[:len(env.raw)/2]))
		for range 300 {
			b := bytes.Clone(v)
			for k := 1 + r.Intn(3); k > 0; k-- {
				b[len(protobufMagic)+r.Intn(len(b)-len(protobufMagic))] = byte(r.Intn(256))
			}
			values = append(values, b)
		}
	}
	inPlace := 0
	for _, v := range values {
		want, werr := c.decodeProtobufBySerializer(v)
		mine := bytes.Clone(v)
		got, gerr := c.Decode(mine)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("Decode(%q): error %v, the serializer's %v", v, gerr, werr)
		}
		if werr != nil {
			continue
		}
		for i := range mine {
			mine[i] = 0xa5
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, the serializer's %#v", v, got.Obj, want.Obj)
		}
		if env, _ := parseEnvelope(v, false); env.plain {
			inPlace++
		}
	}
	if inPlace < 20 {
		t.Fatalf("only %d values decoded in place: the test does not test it", inPlace)
	}
}

// TestCheckRoundTripReusesItsBuffer: CheckRoundTrip encodes into a pooled
// buffer; one codec checking values of every size in turn, larger and
// smaller than the one before, round-trip or not (a field appended), says
// the same of each as a fresh codec, with the same error.
func TestCheckRoundTripReusesItsBuffer(t *testing.T) {
	shared := New()
	var values [][]byte
	for _, tc := range roundTripCases(t) {
		values = append(values, tc.value)
		if tc.encoding == Protobuf {
			values = append(values, append(bytes.Clone(tc.value), 0x28, 0x01))
		}
	}
	r := rand.New(rand.NewSource(3))
	for range 5 * len(values) {
		v := values[r.Intn(len(values))]
		got, want := shared.CheckRoundTrip(v), New().CheckRoundTrip(v)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Fatalf("CheckRoundTrip(%q) = %v on a used codec, %v on a fresh one", v, got, want)
		}
	}
}
