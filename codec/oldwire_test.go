package codec

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// withField15 returns the stored value of obj as an apiserver up to 1.24
// wrote it: ObjectMeta field 15 (clusterName) appended to the metadata at
// the given path of message field numbers inside the object (metadata is
// field 1 of every object; a Deployment's pod template metadata is 2/3/1).
func withField15(t *testing.T, c *Codec, obj runtime.Object, gvk schema.GroupVersionKind, clusterName string, path ...protowire.Number) []byte {
	t.Helper()
	value, err := c.EncodeProtobuf(obj, gvk)
	if err != nil {
		t.Fatal(err)
	}
	var edit func(b []byte, path []protowire.Number) []byte
	edit = func(b []byte, path []protowire.Number) []byte {
		if len(path) == 0 {
			b = protowire.AppendTag(append([]byte(nil), b...), 15, protowire.BytesType)
			return protowire.AppendString(b, clusterName)
		}
		var out []byte
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if num == path[0] && typ == protowire.BytesType {
				inner, _ := protowire.ConsumeBytes(b[n:])
				out = protowire.AppendTag(out, num, typ)
				out = protowire.AppendBytes(out, edit(inner, path[1:]))
			} else {
				out = append(out, b[:n+m]...)
			}
			b = b[n+m:]
		}
		return out
	}
	return edit(value[len(protobufMagic):], append([]protowire.Number{2}, path...)) // 2: runtime.Unknown.raw
}

func TestOldWireFields(t *testing.T) {
	c := New()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", UID: "u1"},
		Spec: corev1.ServiceSpec{ClusterIP: "192.168.0.1", ClusterIPs: []string{"192.168.0.1"}, Type: corev1.ServiceTypeClusterIP}}
	svcGVK := corev1.SchemeGroupVersion.WithKind("Service")
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
	depGVK := appsv1.SchemeGroupVersion.WithKind("Deployment")
	for _, c2 := range []struct {
		name   string
		value  []byte
		wantOK bool
	}{
		{"Service metadata with an empty clusterName (1.24 and before)", prepend(withField15(t, c, svc, svcGVK, "", 1)), true},
		{"Deployment pod template metadata with an empty clusterName", prepend(withField15(t, c, dep, depGVK, "", 2, 3, 1)), true},
		{"Deployment metadata", prepend(withField15(t, c, dep, depGVK, "", 1)), true},
		{"a clusterName with data", prepend(withField15(t, c, svc, svcGVK, "east", 1)), false},
	} {
		t.Run(c2.name, func(t *testing.T) {
			if _, err := c.Decode(c2.value); err != nil {
				t.Fatalf("decode: %v", err)
			}
			err := c.CheckRoundTrip(c2.value)
			if c2.wantOK && err != nil {
				t.Fatalf("CheckRoundTrip: %v", err)
			}
			if !c2.wantOK {
				var fe *UnknownFieldError
				if !errors.Is(err, ErrNotRoundTrip) || !errors.As(err, &fe) || fe.Field != 15 || fe.Type != "v1.ObjectMeta" {
					t.Fatalf("CheckRoundTrip = %v, want a refusal naming field 15 of ObjectMeta", err)
				}
			}
		})
	}
	// An unknown field that Kubernetes never had is refused, even empty.
	b := withField15(t, c, svc, svcGVK, "", 1)
	b = protowire.AppendTag(b, 99, protowire.VarintType)
	b = protowire.AppendVarint(b, 0)
	var fe *UnknownFieldError
	if err := c.CheckRoundTrip(prepend(rewrap(t, b))); !errors.As(err, &fe) || fe.Field != 99 {
		t.Errorf("an unknown field 99: %v, want an UnknownFieldError naming it", err)
	}
}

func prepend(unknown []byte) []byte { return append(append([]byte(nil), protobufMagic...), unknown...) }

// rewrap moves a field appended after runtime.Unknown's fields into the
// object's raw bytes (field 2), as if the object itself carried it.
func rewrap(t *testing.T, unknown []byte) []byte {
	t.Helper()
	var out, extra []byte
	b := unknown
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if num == 99 {
			extra = append(extra, b[:n+m]...)
		}
		b = b[n+m:]
	}
	b = unknown
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		switch {
		case num == 99:
		case num == 2:
			raw, _ := protowire.ConsumeBytes(b[n:])
			out = protowire.AppendTag(out, 2, protowire.BytesType)
			out = protowire.AppendBytes(out, append(append([]byte(nil), raw...), extra...))
		default:
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out
}
