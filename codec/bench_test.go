package codec

import "testing"

func benchmarkDecode(b *testing.B, value []byte) {
	c := New()
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(value); err != nil {
			b.Fatal(err)
		}
	}
}

func benchmarkEncode(b *testing.B, value []byte) {
	c := New()
	o, err := c.Decode(value)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeService(b *testing.B) {
	benchmarkDecode(b, storedProtobuf(b, fixtureService(), gvService))
}

func BenchmarkEncodeService(b *testing.B) {
	benchmarkEncode(b, storedProtobuf(b, fixtureService(), gvService))
}

func BenchmarkDecodeNode(b *testing.B) {
	benchmarkDecode(b, storedProtobuf(b, fixtureNode(), gvService))
}

func BenchmarkEncodeNode(b *testing.B) {
	benchmarkEncode(b, storedProtobuf(b, fixtureNode(), gvService))
}

func BenchmarkCheckRoundTripCustomResource(b *testing.B) {
	c := New()
	value := []byte(ippoolJSON)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.CheckRoundTrip(value); err != nil {
			b.Fatal(err)
		}
	}
}
