package rules_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/internal/testfile"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/sample"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/wellknown"
)

// The tests in this file expose bugs in non-test code, found while writing
// this suite. Each fails until the bug is fixed; the comment says where.

// TestBugNewServiceCIDROverlappingCurrentPodCIDRAccepted: rules.Options
// validate (registry.go) refuses a new service CIDR that overlaps the new pod
// CIDR only when both flags are given. With one flag, the new range is never
// compared with the other network's current (detected) range, so Services
// are moved into the pod network, or nodes into the Service network, and
// kube-proxy then routes pod traffic to Services. ServiceCIDR.Prepare
// (service_cidr.go) and PodCIDR.Prepare (pod_cidr.go) have the detected
// networks (Plan.networks) and should refuse it the way validate does.
func TestRegressionNewServiceCIDROverlappingCurrentPodCIDRAccepted(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	for _, c := range []struct {
		name string
		opts rules.Options
		want string
	}{
		{"service CIDR onto the unchanged pod network", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "10.244.0.0/16"}}, "overlaps"},
		{"pod CIDR onto the unchanged service network", rules.Options{PodCIDROptions: rules.PodCIDROptions{PodNetworkCIDR: "192.168.0.0/16"}}, "overlaps"},
		{"service CIDR containing the unchanged pod network", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "10.0.0.0/8"}}, "overlaps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, _, _, err := runRules(t, in, "", c.opts)
			if err == nil {
				t.Fatalf("%+v was accepted (%d replaced, %d created): the new range overlaps the other network, which does not move", c.opts, rep.Replaced, rep.Created)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to say the ranges overlap", err)
			}
		})
	}
}

// TestBugDNSBridgeOutsideKubeSystemSelectsNoPods: with --dns-service naming
// a DNS Service outside kube-system, ServiceCIDR.newBridge and Finish
// (service_cidr.go, bridgeKey "kube-system/"+bridgeName and
// ObjectMeta.Namespace "kube-system") still create the bridge in kube-system
// with the DNS Service's selector. A selector only selects pods in the
// Service's own namespace, so the bridge has no endpoints and every pod
// pointed at it by kubelet clusterDNS gets no DNS. The bridge belongs in
// the DNS Service's namespace (and its IPAddress parentRef with it).
func TestRegressionDNSBridgeOutsideKubeSystemSelectsNoPods(t *testing.T) {
	c := codec.New()
	in := snapshotFromYAML(t, c, `
- key: /registry/configmaps/kube-system/kubeadm-config
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: kubeadm-config, namespace: kube-system, uid: 6c0f0030-0000-4000-8000-000000000001}
    data:
      ClusterConfiguration: |
        apiVersion: kubeadm.k8s.io/v1beta4
        kind: ClusterConfiguration
        networking:
          serviceSubnet: 192.168.0.0/16
- key: /registry/services/specs/dns/coredns
  object:
    apiVersion: v1
    kind: Service
    metadata: {name: coredns, namespace: dns, uid: 6c0f0030-0000-4000-8000-000000000011}
    spec:
      type: ClusterIP
      selector: {app: coredns}
      clusterIP: 192.168.0.10
      clusterIPs: [192.168.0.10]
      ports:
      - {name: dns, port: 53, protocol: UDP, targetPort: 53}
`)
	out := filepath.Join(t.TempDir(), "out.db")
	if _, _, _, err := runRules(t, in, out, rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"dns/coredns"}, DNSBridge: true, DNSService: "dns/coredns"}}); err != nil {
		t.Fatal(err)
	}
	var bridges []string
	st := readState(t, out)
	for _, k := range st.keys() {
		if !strings.HasPrefix(k, wellknown.PrefixServices) || k == wellknown.PrefixServices+"dns/coredns" {
			continue
		}
		svc := decodeTyped[*corev1.Service](t, c, k, st.Live[k].KV.Value)
		bridges = append(bridges, k)
		if svc.Namespace != "dns" {
			t.Errorf("the DNS bridge %s/%s (selector %v) is not in the namespace of dns/coredns, whose pods it must select",
				svc.Namespace, svc.Name, svc.Spec.Selector)
		}
	}
	if len(bridges) != 1 {
		t.Errorf("bridge Services %v, want one", bridges)
	}
}

// TestBugLeftoverScanReportsExemptIPAddressAsUnintended: with
// --keep-service-ip, the exempt Service keeps its old address together with
// its IPAddress object (Options.KeepServiceIPs says so), but
// LeftoverScan.intended (leftovers.go) only recognises the Service's own
// key, so the plan lists /registry/ipaddresses/<old IP> under "ipaddresses"
// as an address no rule moves, beside "services (kept on purpose)". It
// should count the exempt Services' IPAddress keys as intended too.
func TestRegressionLeftoverScanReportsExemptIPAddressAsUnintended(t *testing.T) {
	in := testfile.Copy(t, samplePath, t.TempDir())
	_, _, scan, err := runRules(t, in, "", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16", KeepServiceIPs: []string{"kube-system/kube-dns"}}})
	if err != nil {
		t.Fatal(err)
	}
	kept := wellknown.PrefixIPAddresses + sample.DNSServiceIP
	found := false
	for _, g := range scan.Report().Groups {
		for _, e := range g.Examples {
			if e.Key != kept {
				continue
			}
			found = true
			if !g.Intended {
				t.Errorf("%s, the exempt kube-dns's own IPAddress, is reported in group %q as an unintended leftover", kept, g.Resource)
			}
		}
	}
	if !found {
		t.Errorf("%s not in the leftover report at all", kept)
	}
}
