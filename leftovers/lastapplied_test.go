package leftovers

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/rules"
)

// TestLeftoverScanOnlyInLastApplied: a ConfigMap whose data the rules
// moved but whose kubectl last-applied copy (diverged from the data, so
// left) still holds an old address is reported as such; one whose data
// still holds it is reported plainly. Both are stored as kube-apiserver
// stores them (protobuf).
func TestLeftoverScanOnlyInLastApplied(t *testing.T) {
	c := codec.New()
	encode := func(name, data, lastApplied string) []byte {
		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Annotations: map[string]string{rules.LastApplied: lastApplied}},
			Data:       map[string]string{"config.conf": data},
		}
		b, err := c.Encode(&codec.Object{Encoding: codec.Protobuf, GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: cm})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plan := &rules.Plan{Service: &rules.ServicePlan{Old: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}, New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}}}
	s := NewLeftoverScan(plan)
	s.Observe([]byte("/registry/configmaps/kube-system/moved"), encode("moved", "clusterDNS: 172.24.0.10\nmode: ipvs\n",
		`{"apiVersion":"v1","data":{"config.conf":"clusterDNS: 10.96.0.10\nmode: iptables\n"},"kind":"ConfigMap"}`), false)
	s.Observe([]byte("/registry/configmaps/kube-system/unmoved"), encode("unmoved", "upstream 10.96.0.20\n",
		`{"apiVersion":"v1","data":{"config.conf":"upstream 10.96.0.20\n"},"kind":"ConfigMap"}`), false)
	r := s.Report()
	if len(r.Groups) != 1 || len(r.Groups[0].Examples) != 2 {
		t.Fatalf("report %+v, want one group of two ConfigMaps", r)
	}
	notes := map[string]string{}
	for _, e := range r.Groups[0].Examples {
		notes[e.Key] = e.Note
	}
	if n := notes["/registry/configmaps/kube-system/moved"]; n != onlyLastAppliedNote {
		t.Errorf("moved ConfigMap: note %q, want %q", n, onlyLastAppliedNote)
	}
	if n := notes["/registry/configmaps/kube-system/unmoved"]; n != "" {
		t.Errorf("unmoved ConfigMap: note %q, want none (its data holds the address)", n)
	}
}
