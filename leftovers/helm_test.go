package leftovers

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/rules"
)

// helmSecret stores a release as Helm 3 does: JSON, gzip, base64, in a
// Secret of type helm.sh/release.v1, encoded as kube-apiserver stores it.
func helmSecret(t *testing.T, name string, version int, manifest string) []byte {
	t.Helper()
	js, err := json.Marshal(map[string]any{"name": name, "namespace": "demo", "version": version, "manifest": manifest,
		"info": map[string]any{"status": "deployed"}})
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(js)
	zw.Close()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v3", Namespace: "demo",
		Labels: map[string]string{"owner": "helm", "name": name, "status": "deployed", "version": "3"}},
		Type: helmReleaseType, Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(gz.Bytes()))}}
	v, err := codec.New().EncodeProtobuf(sec, corev1.SchemeGroupVersion.WithKind("Secret"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLeftoverScanHelmReleases: a chart manifest that pins an old-range
// clusterIP is reported by release and resource, without the address
// (Secret data); a release without one is not reported.
func TestLeftoverScanHelmReleases(t *testing.T) {
	plan := &rules.Plan{Service: &rules.ServicePlan{Old: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}, New: []netip.Prefix{netip.MustParsePrefix("172.24.0.0/16")}}}
	s := NewLeftoverScan(plan)
	pinned := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  a: b\n" +
		"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: demo\nspec:\n  clusterIP: 192.168.44.4\n  ports:\n  - port: 80\n"
	s.Observe([]byte("/registry/secrets/demo/sh.helm.release.v1.web.v3"), helmSecret(t, "web", 3, pinned), false)
	s.Observe([]byte("/registry/secrets/demo/sh.helm.release.v1.clean.v3"), helmSecret(t, "clean", 3, "kind: ConfigMap\nmetadata:\n  name: x\n"), false)
	var notes []string
	for _, g := range s.Report().Groups {
		for _, e := range g.Examples {
			notes = append(notes, e.Key+": "+e.Note+strings.Join(e.Addresses, ","))
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "Helm release demo/web revision 3 pins old-range addresses in Service demo/web") ||
		strings.Contains(notes[0], "192.168.44.4") || strings.Contains(notes[0], "web-config") {
		t.Errorf("leftovers %q: want one note naming release demo/web and Service demo/web, without the address", notes)
	}
}
