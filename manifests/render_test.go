package manifests

import (
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// Text the in-place edit cannot handle (a flow-style command list) falls
// back to marshalling the typed Pod, and says why.
func TestRenderFallsBackToMarshal(t *testing.T) {
	text := `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.36.3
    command: [kube-apiserver, --secure-port=6443]
`
	m, err := Parse(KubeAPIServer, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{Manifests: []*Manifest{m}}
	out, _, err := Update(set, Changes{AdvertiseAddress: "10.0.0.11"})
	if err != nil {
		t.Fatal(err)
	}
	r := mustRender(t, out, KubeAPIServer)
	if r.Method != RenderMarshalled || !strings.Contains(r.Reason, "not a non-empty block sequence") {
		t.Errorf("method %s, reason %q", r.Method, r.Reason)
	}
	back, err := Parse(KubeAPIServer, r.Data)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(back.Pod, mustGet(t, out, KubeAPIServer).Pod) {
		t.Errorf("marshalled text does not decode to the Pod:\n%s", r.Data)
	}
}

// Values that YAML would read as something else are quoted; a new
// annotation map is inserted under metadata; CRLF line endings stay.
func TestRenderQuotingAndInsertion(t *testing.T) {
	text := strings.Join([]string{
		"apiVersion: v1",
		"kind: Pod",
		"metadata:",
		"  name: kube-apiserver",
		"spec:",
		"  containers:",
		"  - name: kube-apiserver",
		"    command:",
		"    - kube-apiserver",
		"    - --advertise-address",
		"    - 10.0.0.10 # the node",
		"    - --secure-port=6443",
		"",
	}, "\r\n")
	m, err := Parse(KubeAPIServer, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Update(&Set{Manifests: []*Manifest{m}}, Changes{AdvertiseAddress: "fd00::11", EtcdServers: []string{"https://10.0.0.5:2379"}})
	if err != nil {
		t.Fatal(err)
	}
	r := mustRender(t, out, KubeAPIServer)
	if r.Method != RenderEdited {
		t.Fatalf("method %s: %s", r.Method, r.Reason)
	}
	want := strings.Join([]string{
		"apiVersion: v1",
		"kind: Pod",
		"metadata:",
		"  name: kube-apiserver",
		"  annotations:",
		"    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: \"[fd00::11]:6443\"",
		"spec:",
		"  containers:",
		"  - name: kube-apiserver",
		"    command:",
		"    - kube-apiserver",
		"    - --advertise-address",
		"    - fd00::11 # the node",
		"    - --secure-port=6443",
		"    - --etcd-servers=https://10.0.0.5:2379",
		"",
	}, "\r\n")
	if string(r.Data) != want {
		t.Errorf("got\n%q\nwant\n%q", r.Data, want)
	}

	for _, tc := range []struct{ in, want string }{
		{"10.0.0.1", "10.0.0.1"},
		{"true", `"true"`},
		{"yes", `"yes"`},
		{"6443", `"6443"`},
		{"*,bootstrapsigner", `"*,bootstrapsigner"`},
		{"a: b", `"a: b"`},
		{"", `""`},
	} {
		got, err := scalarText(tc.in, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("scalarText(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
