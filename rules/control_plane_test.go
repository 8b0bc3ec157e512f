package rules_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/rules"
)

// A kubeadm v1beta2-era kubeadm-config (ClusterStatus still present) and
// kube-proxy's kubeconfig, for a control plane moving to new machines.
const controlPlaneInput = `- key: /registry/configmaps/kube-system/kubeadm-config
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: kubeadm-config, namespace: kube-system, uid: 5d000000-0000-4000-8000-000000000001, creationTimestamp: "2021-03-01T09:00:00Z"}
    data:
      ClusterConfiguration: |
        apiServer:
          certSANs:
          - 10.0.0.10
          - api.example.com
        apiVersion: kubeadm.k8s.io/v1beta2
        controlPlaneEndpoint: 10.0.0.10:6443
        kind: ClusterConfiguration
        networking:
          serviceSubnet: 10.96.0.0/12
      ClusterStatus: |
        apiEndpoints:
          cp1:
            advertiseAddress: 10.0.0.10
            bindPort: 6443
          cp2:
            advertiseAddress: 10.0.0.11
            bindPort: 6443
        apiVersion: kubeadm.k8s.io/v1beta2
        kind: ClusterStatus
- key: /registry/configmaps/kube-system/kube-proxy
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: kube-proxy, namespace: kube-system, uid: 5d000000-0000-4000-8000-000000000002, creationTimestamp: "2021-03-01T09:00:00Z"}
    data:
      config.conf: |
        apiVersion: kubeproxy.config.k8s.io/v1alpha1
        clusterCIDR: 10.244.0.0/16
        kind: KubeProxyConfiguration
      kubeconfig.conf: |
        apiVersion: v1
        kind: Config
        clusters:
        - cluster:
            certificate-authority: /var/lib/kube-proxy/ca.crt
            server: https://10.0.0.10:6443
          name: default
- key: /registry/minions/cp2
  object:
    apiVersion: v1
    kind: Node
    metadata: {name: cp2, uid: 5d000000-0000-4000-8000-000000000003, creationTimestamp: "2021-03-01T09:00:00Z"}
    status:
      addresses: [{type: InternalIP, address: 10.0.0.11}]
- key: /registry/minions/cp1
  object:
    apiVersion: v1
    kind: Node
    metadata: {name: cp1, uid: 5d000000-0000-4000-8000-000000000004, creationTimestamp: "2021-03-01T09:00:00Z"}
    status:
      addresses: [{type: InternalIP, address: 10.0.0.10}]
`

// TestControlPlaneAddressConfigMaps: kubeadm-config's controlPlaneEndpoint,
// ClusterStatus apiEndpoints and certSANs, and kube-proxy's server move,
// edited in place (every other byte kept); a second run changes nothing.
func TestControlPlaneAddressConfigMaps(t *testing.T) {
	c := codec.New()
	in := snapshotFromYAML(t, c, controlPlaneInput)
	out := filepath.Join(t.TempDir(), "out.db")
	opts := rules.Options{ControlPlaneOptions: rules.ControlPlaneOptions{ControlPlaneAddresses: []string{"cp1=10.1.0.10", "cp2=10.1.0.11"}}}
	if _, _, _, err := runRules(t, in, out, opts); err != nil {
		t.Fatal(err)
	}
	st := readState(t, out)
	inSt := readState(t, in)
	kc := decodeTyped[*corev1.ConfigMap](t, c, "kubeadm-config", st.Live["/registry/configmaps/kube-system/kubeadm-config"].KV.Value)
	kcIn := decodeTyped[*corev1.ConfigMap](t, c, "kubeadm-config", inSt.Live["/registry/configmaps/kube-system/kubeadm-config"].KV.Value)
	// No endpoint given: the recorded one follows cp1's address.
	back := strings.NewReplacer("10.1.0.10", "10.0.0.10", "10.1.0.11", "10.0.0.11")
	for k, want := range kcIn.Data {
		if back.Replace(kc.Data[k]) != want || strings.Contains(kc.Data[k], "10.0.0.1") {
			t.Errorf("kubeadm-config %s:\n%s", k, kc.Data[k])
		}
	}
	if !strings.Contains(kc.Data["ClusterConfiguration"], "controlPlaneEndpoint: 10.1.0.10:6443") || !strings.Contains(kc.Data["ClusterStatus"], "advertiseAddress: 10.1.0.11") {
		t.Errorf("kubeadm-config:\n%s\n%s", kc.Data["ClusterConfiguration"], kc.Data["ClusterStatus"])
	}
	kp := decodeTyped[*corev1.ConfigMap](t, c, "kube-proxy", st.Live["/registry/configmaps/kube-system/kube-proxy"].KV.Value)
	if !strings.Contains(kp.Data["kubeconfig.conf"], "server: https://10.1.0.10:6443") || !strings.Contains(kp.Data["config.conf"], "clusterCIDR: 10.244.0.0/16") {
		t.Errorf("kube-proxy:\n%s", kp.Data["kubeconfig.conf"])
	}
	// Idempotent: the output records the new addresses.
	rep, _, _, err := runRules(t, out, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replaced+rep.Deleted+rep.Created != 0 {
		t.Errorf("a second run changes %d keys", rep.Replaced+rep.Deleted+rep.Created)
	}

	// A new endpoint name: kubeadm-config and kube-proxy's server take it.
	out2 := filepath.Join(t.TempDir(), "out2.db")
	opts.ControlPlaneEndpoint = "k8s-api.internal"
	if _, _, _, err := runRules(t, in, out2, opts); err != nil {
		t.Fatal(err)
	}
	st2 := readState(t, out2)
	kc = decodeTyped[*corev1.ConfigMap](t, c, "kubeadm-config", st2.Live["/registry/configmaps/kube-system/kubeadm-config"].KV.Value)
	kp = decodeTyped[*corev1.ConfigMap](t, c, "kube-proxy", st2.Live["/registry/configmaps/kube-system/kube-proxy"].KV.Value)
	if !strings.Contains(kc.Data["ClusterConfiguration"], "controlPlaneEndpoint: k8s-api.internal\n") || !strings.Contains(kp.Data["kubeconfig.conf"], "server: https://k8s-api.internal:6443") {
		t.Errorf("new endpoint:\n%s\n%s", kc.Data["ClusterConfiguration"], kp.Data["kubeconfig.conf"])
	}
}

func TestControlPlaneAddressOptions(t *testing.T) {
	for _, tc := range []struct {
		o    rules.ControlPlaneOptions
		want string
	}{
		{rules.ControlPlaneOptions{ControlPlaneAddresses: []string{"cp1"}}, "ControlPlaneAddresses"},
		{rules.ControlPlaneOptions{ControlPlaneAddresses: []string{"cp1=10.0.0.300"}}, "ControlPlaneAddresses"},
		{rules.ControlPlaneOptions{ControlPlaneAddresses: []string{"cp1=10.1.0.1", "cp2=10.1.0.1"}}, "cannot both move"},
		{rules.ControlPlaneOptions{ControlPlaneAddresses: []string{"cp1=10.1.0.1", "cp2=10.1.0.2", "cp1=10.1.0.3"}}, "gives node cp1 two addresses, 10.1.0.1 and 10.1.0.3"},
		{rules.ControlPlaneOptions{ControlPlaneEndpoint: "api:99999"}, "ControlPlaneEndpoint"},
	} {
		err := rules.Validate(rules.Options{ControlPlaneOptions: tc.o})
		var oe *option.Error
		if !errors.As(err, &oe) || !strings.Contains(oe.Field+" "+err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %s", tc.o, err, tc.want)
		}
	}
}
