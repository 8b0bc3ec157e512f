package rules_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/rules"
)

// scaleInput is a cluster of nodes Nodes and two DaemonSets, three Pods,
// an EndpointSlice, and CoreDNS behind kube-dns with the memory limit and
// the Corefile given, as input.yaml text.
func scaleInput(nodes int, limit, corefile string) string {
	var b strings.Builder
	b.WriteString(`- key: /registry/configmaps/kube-system/kubeadm-config
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: kubeadm-config, namespace: kube-system}
    data:
      ClusterConfiguration: |
        apiVersion: kubeadm.k8s.io/v1beta4
        kind: ClusterConfiguration
        networking:
          serviceSubnet: 192.168.0.0/16
- key: /registry/services/specs/kube-system/kube-dns
  object:
    apiVersion: v1
    kind: Service
    metadata: {name: kube-dns, namespace: kube-system}
    spec:
      type: ClusterIP
      selector: {k8s-app: kube-dns}
      clusterIP: 192.168.0.10
      clusterIPs: [192.168.0.10]
      ports:
      - {name: dns, port: 53, protocol: UDP, targetPort: 53}
- key: /registry/configmaps/kube-system/coredns
  object:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: coredns, namespace: kube-system}
    data:
      Corefile: |
`)
	for _, l := range strings.Split(corefile, "\n") {
		b.WriteString("        " + l + "\n")
	}
	fmt.Fprintf(&b, `- key: /registry/deployments/kube-system/coredns
  object:
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: coredns, namespace: kube-system}
    spec:
      selector:
        matchLabels: {k8s-app: kube-dns}
      template:
        metadata:
          labels: {k8s-app: kube-dns}
        spec:
          containers:
          - name: coredns
            image: registry.k8s.io/coredns/coredns:v1.12.1
            resources:
              limits: {memory: %s}
          volumes:
          - name: config-volume
            configMap: {name: coredns}
`, limit)
	for _, ds := range []string{"kube-proxy", "kube-flannel-ds"} {
		fmt.Fprintf(&b, `- key: /registry/daemonsets/kube-system/%s
  object:
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: %s, namespace: kube-system}
    spec:
      selector:
        matchLabels: {app: %s}
      template:
        metadata:
          labels: {app: %s}
        spec:
          containers:
          - {name: agent, image: agent:1}
`, ds, ds, ds, ds)
	}
	for i := range 3 {
		fmt.Fprintf(&b, `- key: /registry/pods/default/p%d
  object:
    apiVersion: v1
    kind: Pod
    metadata: {name: p%d, namespace: default}
    spec:
      nodeName: n%04d
      containers:
      - {name: c, image: c:1}
`, i, i, i)
	}
	b.WriteString(`- key: /registry/endpointslices/kube-system/kube-dns-abcde
  object:
    apiVersion: discovery.k8s.io/v1
    kind: EndpointSlice
    metadata: {name: kube-dns-abcde, namespace: kube-system}
    addressType: IPv4
`)
	for i := range nodes {
		fmt.Fprintf(&b, `- key: /registry/minions/n%04d
  object:
    apiVersion: v1
    kind: Node
    metadata: {name: n%04d}
`, i, i)
	}
	return b.String()
}

// TestPlanScale (issue 48 item 5): the plan counts what every client
// relists when the restored apiserver comes back, from the snapshot's own
// keys, and warns, in one sentence each, when the cluster is large enough
// that the relists at once are a risk, and when CoreDNS's memory limit is
// below what its relist needs (CoreDNS's scaling guide, doubled); a small
// cluster with room gets no warning, and a Corefile that keeps every Pod
// is estimated apart.
func TestPlanScale(t *testing.T) {
	c := codec.New()
	for _, tc := range []struct {
		name            string
		nodes           int
		limit, corefile string
		watchesPods     bool
		warn            []string
	}{
		{name: "large, small limit", nodes: rules.LargeClusterNodes + 20, limit: "100Mi", corefile: ".:53 {\n    kubernetes cluster.local {\n        pods insecure\n    }\n}",
			warn: []string{"520 nodes: when the restored kube-apiserver comes back, about 1560 clients relist at once",
				"kube-system/coredns's memory limit 100Mi is below the 109 MiB it needs to relist the snapshot's Pods and Services (3 and 1)",
				"--limits=memory=109Mi"}},
		{name: "small, room", nodes: 3, limit: "512Mi", corefile: ".:53 {\n    kubernetes cluster.local\n    autopath @kubernetes\n}", watchesPods: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := snapshotFromYAML(t, c, scaleInput(tc.nodes, tc.limit, tc.corefile))
			_, plan, _, err := runRules(t, in, "", rules.Options{ServiceCIDROptions: rules.ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}})
			if err != nil {
				t.Fatal(err)
			}
			s := plan.Scale
			if s == nil {
				t.Fatal("the plan has no scale section")
			}
			if s.Nodes != tc.nodes || s.Pods != 3 || s.Services != 1 || s.EndpointSlices != 1 || s.DaemonSets != 2 || s.Relisting != tc.nodes*3 {
				t.Errorf("scale %+v, want %d nodes, 3 pods, 1 Service, 1 EndpointSlice, 2 DaemonSets, %d relisting", *s, tc.nodes, tc.nodes*3)
			}
			if s.DNS == nil || s.DNS.Deployment != "kube-system/coredns" || s.DNS.Container != "coredns" || s.DNS.Limit != tc.limit || s.DNS.WatchesPods != tc.watchesPods ||
				s.DNS.RelistMiB != rules.DNSRelistMiB(3, 1, tc.watchesPods) {
				t.Errorf("DNS %+v, want kube-system/coredns, container coredns, limit %s, watchesPods %v, %d MiB", s.DNS, tc.limit, tc.watchesPods, rules.DNSRelistMiB(3, 1, tc.watchesPods))
			}
			all := strings.Join(s.Warnings, "\n")
			for _, w := range tc.warn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
			if len(tc.warn) == 0 && len(s.Warnings) > 0 {
				t.Errorf("a small cluster with room got warnings:\n%s", all)
			}
		})
	}
}

// TestDNSRelistMiB: CoreDNS's scaling guide's two formulas, doubled for
// the relist, at the sizes of kubeadm's default limit (170Mi): 5,000 nodes
// of 30 pods and 10,000 Services need far more.
func TestDNSRelistMiB(t *testing.T) {
	for _, tc := range []struct {
		pods, services int
		watchesPods    bool
		want           int64
	}{
		{0, 0, false, 108},
		{150_000, 10_000, false, 428},
		{150_000, 10_000, true, 1392},
		{999, 0, false, 110},
	} {
		if got := rules.DNSRelistMiB(tc.pods, tc.services, tc.watchesPods); got != tc.want {
			t.Errorf("DNSRelistMiB(%d, %d, %v) = %d, want %d", tc.pods, tc.services, tc.watchesPods, got, tc.want)
		}
	}
}
