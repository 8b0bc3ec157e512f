package sample

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// Entry is one key and the value written to it.
type Entry struct {
	Key   string
	Value []byte
	// LeaseTTL, when not zero, attaches the key to an etcd lease of that many seconds, as kube-apiserver
	// does for Events (--event-ttl, 1h by default). Write shares one lease per TTL.
	LeaseTTL int64
}

// encoder turns objects into stored values exactly as kube-apiserver does.
type encoder struct {
	proto *protobuf.Serializer
}

func newEncoder() *encoder {
	return &encoder{proto: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
}

// protobuf encodes a built-in object as "k8s\x00" + runtime.Unknown. The object's TypeMeta must be set:
// it becomes the Unknown's apiVersion and kind.
func (e *encoder) protobuf(key string, obj runtime.Object) (Entry, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return Entry{}, fmt.Errorf("sample: %s: object %T has no apiVersion/kind", key, obj)
	}
	var buf bytes.Buffer
	if err := e.proto.Encode(obj, &buf); err != nil {
		return Entry{}, fmt.Errorf("sample: %s: encode %s: %w", key, gvk.Kind, err)
	}
	return Entry{Key: key, Value: buf.Bytes()}, nil
}

// customResource encodes a custom resource as apiextensions-apiserver stores it: JSON of the
// unstructured object (map keys sorted) with a trailing newline.
func (e *encoder) customResource(key string, obj map[string]any) (Entry, error) {
	b, err := runtime.Encode(unstructured.UnstructuredJSONScheme, &unstructured.Unstructured{Object: obj})
	if err != nil {
		return Entry{}, fmt.Errorf("sample: %s: encode custom resource: %w", key, err)
	}
	return Entry{Key: key, Value: b}, nil
}

// typedJSON encodes an object the way the apiserver's JSON serializer does for kinds stored as JSON
// (CustomResourceDefinition, APIService): encoding/json in struct field order, trailing newline.
func typedJSON(key string, v any) (Entry, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return Entry{}, fmt.Errorf("sample: %s: encode JSON: %w", key, err)
	}
	return Entry{Key: key, Value: buf.Bytes()}, nil
}

// initTime is when `kubeadm init` ran on the sample cluster; every timestamp is an offset from it.
func initTime() time.Time { return time.Date(2025, time.September, 15, 9, 0, 0, 0, time.UTC) }

// at returns initTime plus d, as an API timestamp.
func at(d time.Duration) metav1.Time { return metav1.NewTime(initTime().Add(d)) }

// uid returns a stable, unique-looking UID for an object (a name-based UUID, version 5 layout).
func uid(kind, namespace, name string) types.UID {
	h := sha1.Sum([]byte("snapshift-sample/" + kind + "/" + namespace + "/" + name))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

// ServiceIPBitmap returns the `data` of a RangeAllocation for the given service IPs, as kube-apiserver's
// bitmap allocator stores it: bit i (value 2^i) stands for the address network+1+i, and the bytes are
// big.Int.Bytes() (big-endian, no leading zeros). IPv4 network and broadcast addresses are not
// allocatable; an IPv6 range is capped at 65536 addresses.
func ServiceIPBitmap(cidr netip.Prefix, ips []netip.Addr) ([]byte, error) {
	cidr = cidr.Masked()
	size := new(big.Int).Lsh(big.NewInt(1), uint(cidr.Addr().BitLen()-cidr.Bits()))
	// Number of allocatable offsets: IPv4 size-2 (no network, no broadcast); IPv6 min(size, 65536)-1.
	maxOffset := new(big.Int).Sub(size, big.NewInt(2))
	if cidr.Addr().Is6() {
		if limit := big.NewInt(65536); size.Cmp(limit) > 0 {
			size = limit
		}
		maxOffset = new(big.Int).Sub(size, big.NewInt(1))
	}
	base := new(big.Int).SetBytes(cidr.Addr().AsSlice())
	bits := new(big.Int)
	for _, ip := range ips {
		if !cidr.Contains(ip) {
			return nil, fmt.Errorf("sample: %s is not in %s", ip, cidr)
		}
		off := new(big.Int).SetBytes(ip.AsSlice())
		off.Sub(off, base).Sub(off, big.NewInt(1))
		if off.Sign() < 0 || off.Cmp(maxOffset) >= 0 {
			return nil, fmt.Errorf("sample: %s is not allocatable in %s", ip, cidr)
		}
		bits.SetBit(bits, int(off.Int64()), 1)
	}
	return bits.Bytes(), nil
}

// NodePortBitmap returns the `data` of the NodePort RangeAllocation: bit i stands for port base+i.
func NodePortBitmap(base int, ports []int32) []byte {
	bits := new(big.Int)
	for _, p := range ports {
		bits.SetBit(bits, int(p)-base, 1)
	}
	return bits.Bytes()
}

// UntouchedSince124 are objects of a long-lived cluster that no
// apiserver rewrote since it ran 1.24 or older: the apiserver's own
// default/kubernetes Service, kube-dns, flannel's ConfigMap.
var UntouchedSince124 = []string{
	"/registry/services/specs/default/kubernetes",
	"/registry/services/specs/kube-system/kube-dns",
	"/registry/configmaps/kube-flannel/kube-flannel-cfg",
}

// lastWrittenBy124 rewrites the stored values of keys as kube-apiserver up
// to 1.24 wrote them: ObjectMeta field 15 (clusterName, removed in 1.25)
// present and empty, between finalizers (14) and managedFields (17).
func (b *builder) lastWrittenBy124(keys ...string) {
	for i, e := range b.entries {
		if b.err != nil || !slices.Contains(keys, e.Key) {
			continue
		}
		v, err := withEmptyClusterName(e.Value)
		if err != nil {
			b.fail("%s: %v", e.Key, err)
			return
		}
		b.entries[i].Value = v
	}
}

// withEmptyClusterName inserts an empty field 15 into the metadata (field
// 1) of the object inside a "k8s\x00" runtime.Unknown value.
func withEmptyClusterName(value []byte) ([]byte, error) {
	const magic = "k8s\x00"
	out := []byte(magic)
	err := eachField(value[len(magic):], func(num protowire.Number, typ protowire.Type, field, content []byte) {
		if num != 2 { // runtime.Unknown.raw holds the object
			out = append(out, field...)
			return
		}
		var obj []byte
		_ = eachField(content, func(num protowire.Number, typ protowire.Type, field, meta []byte) {
			if num != 1 { // the object's metadata
				obj = append(obj, field...)
				return
			}
			var m []byte
			placed := false
			_ = eachField(meta, func(num protowire.Number, _ protowire.Type, f, _ []byte) {
				if num > 15 && !placed {
					m, placed = protowire.AppendString(protowire.AppendTag(m, 15, protowire.BytesType), ""), true
				}
				m = append(m, f...)
			})
			if !placed {
				m = protowire.AppendString(protowire.AppendTag(m, 15, protowire.BytesType), "")
			}
			obj = protowire.AppendBytes(protowire.AppendTag(obj, 1, protowire.BytesType), m)
		})
		out = protowire.AppendBytes(protowire.AppendTag(out, 2, protowire.BytesType), obj)
	})
	return out, err
}

// eachField calls fn for every field of message b: its number, wire type,
// whole bytes and (length-delimited) content.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, field, content []byte)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		var content []byte
		if typ == protowire.BytesType {
			content, _ = protowire.ConsumeBytes(b[n:])
		}
		fn(num, typ, b[:n+m], content)
		b = b[n+m:]
	}
	return nil
}
