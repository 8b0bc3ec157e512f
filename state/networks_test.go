package state_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/internal/testfile"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

const samplePath = "../testdata/sample.db"

// detect runs Detect over the snapshot at path.
func detect(t *testing.T, path string) (*state.Networks, error) {
	t.Helper()
	s, ix := testfile.OpenIndexed(t, path)
	return state.Detect(context.Background(), state.NewView(s, ix, codec.New(), nil, ""))
}

func kinds(srcs []state.Source) []state.SourceKind {
	var out []state.SourceKind
	for _, s := range srcs {
		out = append(out, s.Kind)
	}
	return out
}

// TestDetectSample reads every source of the sample cluster: each detector
// gives its kind, in the order of the list, with what the sample records.
func TestDetectSample(t *testing.T) {
	n, err := detect(t, testfile.Copy(t, samplePath, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(n.ServiceCIDR), []state.SourceKind{state.SourceKubeadm, state.SourceServiceCIDR, state.SourceRangeAllocation}; !slices.Equal(got, want) {
		t.Errorf("service sources %v, want %v", got, want)
	}
	if got, want := kinds(n.PodCIDR), []state.SourceKind{state.SourceKubeadm, state.SourceKubeProxy, state.SourceFlannel, state.SourceNodes}; !slices.Equal(got, want) {
		t.Errorf("pod sources %v, want %v", got, want)
	}
	for _, s := range n.ServiceCIDR {
		if !slices.Equal(s.CIDRs, []string{sample.ServiceCIDR}) {
			t.Errorf("%s (%s) records %v, want %s", s.Source, s.Kind, s.CIDRs, sample.ServiceCIDR)
		}
	}
	for _, s := range n.PodCIDR {
		want := sample.PodCIDR
		if s.Kind == state.SourceNodes {
			want = "10.244.0.0/19" // covers 10.244.0.0/24 to 10.244.16.16/28
		}
		if !slices.Equal(s.CIDRs, []string{want}) {
			t.Errorf("%s (%s) records %v, want %s", s.Source, s.Kind, s.CIDRs, want)
		}
	}
	if !slices.Equal(n.ClusterDNS, []string{sample.DNSServiceIP}) || n.DNSDomain != sample.DNSDomain {
		t.Errorf("clusterDNS %v, dnsDomain %q; want [%s], %q", n.ClusterDNS, n.DNSDomain, sample.DNSServiceIP, sample.DNSDomain)
	}
	if len(n.Nodes) != len(sample.Nodes()) {
		t.Errorf("%d nodes, want %d", len(n.Nodes), len(sample.Nodes()))
	}
	if s, ok := n.Service(); !ok || s.Kind != state.SourceKubeadm {
		t.Errorf("Service() = %+v, %v; want the kubeadm-config record", s, ok)
	}

	// inspect prints Networks as JSON: the fields it had keep their names.
	raw, err := json.Marshal(n.PodCIDR[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"kind":"kubeadm-config","source":"kubeadm-config networking.podSubnet","cidrs":["10.244.0.0/16"]}`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
}

// breaker replaces one ConfigMap field's document after the fact.
type breaker struct{ key, field, doc string }

func (b breaker) Name() string       { return "breaker" }
func (b breaker) Prefixes() []string { return []string{b.key} }
func (b breaker) Apply(_ context.Context, o *state.Object) (transform.Result, error) {
	o.Value.Obj.(*corev1.ConfigMap).Data[b.field] = b.doc
	return transform.Result{Action: transform.Replace}, nil
}

// TestDetectUnreadableSource checks that a source present but unreadable is
// an error naming its key and field, and an empty one is skipped.
func TestDetectUnreadableSource(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	write := func(t *testing.T, b breaker) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.db")
		if _, err := transform.Run(context.Background(), transform.Config{Input: in, Output: out, Rules: []transform.Rule{b}}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, b := range []breaker{
		{wellknown.KeyKubeadmConfig, "ClusterConfiguration", "networking: [unclosed"},
		{wellknown.KeyKubeProxy, "config.conf", "clusterCIDR: [unclosed"},
		{wellknown.FlannelConfigKeys[0], "net-conf.json", `{"Network": `},
		{wellknown.KeyKubeletConfig, "kubelet", "clusterDNS: {unclosed"},
	} {
		t.Run(b.key, func(t *testing.T) {
			_, err := detect(t, write(t, b))
			if err == nil || !strings.Contains(err.Error(), b.key+": "+b.field+": ") {
				t.Fatalf("Detect = %v, want an error naming %s: %s", err, b.key, b.field)
			}
		})
	}
	t.Run("empty kube-proxy config", func(t *testing.T) {
		n, err := detect(t, write(t, breaker{wellknown.KeyKubeProxy, "config.conf", ""}))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(kinds(n.PodCIDR), state.SourceKubeProxy) {
			t.Errorf("an empty kube-proxy config.conf gave a source: %+v", n.PodCIDR)
		}
	})
}
