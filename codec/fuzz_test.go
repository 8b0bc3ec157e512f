package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// fuzzCodec is shared by every run of FuzzCodec (New is safe for concurrent use and builds a
// scheme, which is not cheap).
var fuzzCodec = New()

// FuzzCodec feeds arbitrary bytes, as a stored value, to everything the codec does with one:
// Detect, ParseEncrypted, PeekGVK, Decode, Encode, CheckRoundTrip. None may panic, and
//   - ParseEncrypted succeeds only on what Detect calls Encrypted;
//   - every error is one of the documented kinds, on one line;
//   - Decode success implies that Encode of the result succeeds, and that what Encode writes
//     decodes again to the same apiVersion/kind and encoding (snapshift writes it to etcd);
//   - when Decode and PeekGVK both succeed they agree on the apiVersion/kind and encoding;
//   - CheckRoundTrip nil implies Encode(Decode(x)) == x, and Decode does not modify x.
func FuzzCodec(f *testing.F) {
	for _, tc := range roundTripCases(f) {
		f.Add(tc.value)
		f.Add(tc.value[:len(tc.value)/2])
		f.Add(tc.value[:len(tc.value)-1])
		if tc.encoding == Protobuf {
			// Unknown fields appended to the envelope: decodes, does not round-trip.
			f.Add(append(bytes.Clone(tc.value), 0x28, 0x01))
		}
	}
	for _, s := range []string{
		"", "k8s\x00", "k8s\x00\x0a\x00", "k8s:enc:aescbc:v1:key1:\x00\x01\x02", "k8s:enc:kms:v2:prov:xyz", "k8s:enc:",
		"k8s:enc:secretbox", "{}", " {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}", `{"apiVersion":"v1","kind":"Service","spec":{"clusterIP":1e400}}`,
		`{"kind":"X","apiVersion":"a/b","metadata":{"name":"n"},"z":1,"a":[1,2.5,"s",null,true]}`, "\xd9\xd9\xf7\xa0", "\xd9\xd9\xf7",
		"[1,2]", "null", "\x00\x01\x02",
	} {
		f.Add([]byte(s))
	}
	f.Add(envelopeFor("example.com/v9", "Service", []byte{0x0a, 0x00}))
	f.Add(envelopeFor("v1", "Service", []byte{0xff}))
	f.Add(envelopeFor("", "Service", nil))
	f.Add(envelopeFor("a/b/c", "Service", nil))
	f.Fuzz(func(t *testing.T, value []byte) {
		c := fuzzCodec
		in := bytes.Clone(value)
		defer func() {
			if !bytes.Equal(value, in) {
				t.Fatal("the codec modified its input")
			}
		}()
		oneLine := func(what string, err error) {
			t.Helper()
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("%s: multi-line error %q", what, err)
			}
		}
		known := func(what string, err error, kinds ...error) {
			t.Helper()
			oneLine(what, err)
			for _, k := range kinds {
				if errors.Is(err, k) {
					return
				}
			}
			t.Fatalf("%s(%q): error %q is none of %v", what, value, err, kinds)
		}

		enc := Detect(value)
		info, encrypted := ParseEncrypted(value)
		if encrypted && enc != Encrypted {
			t.Fatalf("ParseEncrypted(%q) = %+v, but Detect says %v", value, info, enc)
		}
		if encrypted && (info.Provider == "" || info.Version == "" || info.KeyName == "") {
			t.Fatalf("ParseEncrypted(%q) = %+v with an empty part", value, info)
		}

		pgvk, penc, perr := c.PeekGVK(value)
		if penc != enc {
			t.Fatalf("PeekGVK says %v, Detect %v", penc, enc)
		}
		if perr != nil {
			known("PeekGVK", perr, ErrUndecodable, ErrEncrypted)
		}

		o, err := c.Decode(value)
		if err != nil {
			known("Decode", err, ErrUndecodable, ErrEncrypted, ErrUnknownType)
			if rerr := c.CheckRoundTrip(value); rerr == nil {
				t.Fatalf("CheckRoundTrip(%q) is nil but Decode failed: %v", value, err)
			}
			return
		}
		if o.Encoding != enc {
			t.Fatalf("Decode gave encoding %v, Detect %v", o.Encoding, enc)
		}
		if o.GVK.Kind == "" || o.GVK.Version == "" {
			t.Fatalf("Decode(%q) gave an object without apiVersion/kind: %v", value, o.GVK)
		}
		if perr == nil && (pgvk != o.GVK || penc != o.Encoding) {
			t.Fatalf("PeekGVK(%q) = %v %v, Decode %v %v", value, pgvk, penc, o.GVK, o.Encoding)
		}
		out, err := c.Encode(o)
		if err != nil {
			t.Fatalf("Decode(%q) succeeded, Encode of the result failed: %v", value, err)
		}
		again, err := c.Decode(out)
		if err != nil {
			t.Fatalf("Encode(Decode(%q)) = %q does not decode: %v", value, out, err)
		}
		if again.GVK != o.GVK || again.Encoding != o.Encoding {
			t.Fatalf("Encode(Decode(%q)) = %q decodes as %v %v, not %v %v", value, out, again.GVK, again.Encoding, o.GVK, o.Encoding)
		}
		rerr := c.CheckRoundTrip(value)
		if rerr == nil {
			if !bytes.Equal(out, value) {
				t.Fatalf("CheckRoundTrip(%q) is nil but Encode(Decode(x)) = %q", value, out)
			}
		} else {
			known("CheckRoundTrip", rerr, ErrNotRoundTrip)
			if bytes.Equal(out, value) {
				t.Fatalf("CheckRoundTrip(%q) = %v, but Encode(Decode(x)) == x", value, rerr)
			}
		}
	})
}

// TestRegressionDecodeErrorsAreOneLine: the codec's errors end up as the one line snapshift prints
// (with the etcd key), but some wrap apimachinery errors that quote the stored value raw:
//   - a protobuf envelope whose apiVersion does not parse: schema.ParseGroupVersion's error repeats
//     the apiVersion unquoted (codec/envelope.go:99-101), newlines included; found by FuzzCodec
//     (testdata/fuzz/FuzzCodec/8bce7c9359ed74c3);
//   - a JSON value without kind: UnstructuredJSONScheme's "Object 'Kind' is missing in '<value>'"
//     holds the whole stored value, unquoted (codec/codec.go:176); a 10 KiB custom resource gives a
//     10 KiB error, and its newlines break the line. PeekGVK's "unexpected GroupVersion string"
//     (codec/codec.go:342) repeats a JSON apiVersion unquoted the same way.
//
// Fix: never print a third party's error text raw: quote it (%q) and cap its length, or say what is
// wrong in the codec's own words with the offending field quoted and truncated.
func TestRegressionDecodeErrorsAreOneLine(t *testing.T) {
	c := New()
	big := `{"apiVersion":"crd.projectcalico.org/v1","metadata":{"name":"x"},"spec":{"pad":"` + strings.Repeat("a\\n", 4000) + "\"},\n\"status\":{}}\n"
	cases := map[string][]byte{
		"protobuf apiVersion with a newline": envelopeFor("a/b\nc/d", "Service", nil),
		"json without kind, with a newline":  []byte("{\"apiVersion\":\"v1\",\n\"metadata\":{}}"),
		"json apiVersion with a newline":     []byte("{\"kind\":\"A\",\"apiVersion\":\"a/b\\nc/d\"}"),
		"large json without kind":            []byte(big),
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Decode(value)
			_, _, perr := c.PeekGVK(value)
			for what, err := range map[string]error{"Decode": err, "PeekGVK": perr} {
				if err == nil {
					continue
				}
				if !errors.Is(err, ErrUndecodable) {
					t.Errorf("%s: %v, want ErrUndecodable", what, err)
				}
				if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 512 {
					t.Errorf("%s: error of %d bytes with %d newlines, want one short line: %.200q...", what, len(msg), strings.Count(msg, "\n"), msg)
				}
			}
		})
	}
}
