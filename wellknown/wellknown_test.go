package wellknown

import (
	"strings"
	"testing"
)

// TestPrefixAndResource: one table serves both directions.
func TestPrefixAndResource(t *testing.T) {
	for res, want := range map[string]string{
		"services": "services", "endpoints": "endpoints", "nodes": "nodes", "replicationcontrollers": "replicationcontrollers",
		"ingresses": "ingresses.networking.k8s.io", "configmaps": "configmaps", "ciliumnodes.cilium.io": "ciliumnodes.cilium.io",
		"deployments": "deployments.apps", "customresourcedefinitions.apiextensions.k8s.io": "customresourcedefinitions.apiextensions.k8s.io",
	} {
		if got := Resource(Prefix(res) + "ns/name"); got != want {
			t.Errorf("Resource(Prefix(%s)+ns/name) = %s, want %s", res, got, want)
		}
	}
	if got := Resource("/registry/ranges/serviceips"); got != "ranges/serviceips" {
		t.Errorf("Resource(ranges/serviceips) = %s", got)
	}
	if got := Resource("/other/x"); got != "(outside /registry)" {
		t.Errorf("Resource(/other/x) = %s", got)
	}
}

// Users name resources as kubectl does; a typo is an error with the
// nearest name.
func TestKeyOf(t *testing.T) {
	for in, want := range map[string]string{
		"deploy/shop/web": "/registry/deployments/shop/web", "svc/default/kubernetes": "/registry/services/specs/default/kubernetes",
		"ing/web/": "/registry/ingress/web/", "ns/default": "/registry/namespaces/default", "no": "/registry/minions/",
		"ippools.crd.projectcalico.org/default": "/registry/crd.projectcalico.org/ippools/default",
		"crd/x.example.com":                     "/registry/apiextensions.k8s.io/customresourcedefinitions/x.example.com",
		"/registry/raw":                         "/registry/raw", "deployments.apps": "/registry/deployments/",
	} {
		if got, err := KeyOf(in); err != nil || got != want {
			t.Errorf("KeyOf(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"deploymnets":        `(did you mean "deployments.apps"?)`,
		"ingress.extensions": `(did you mean "ingresses.networking.k8s.io"?)`,
		"sevrice/default/x":  `(did you mean "services"?)`,
	} {
		if _, err := KeyOf(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("KeyOf(%s) = %v, want %s", in, err, want)
		}
	}
}

// TestCNIKeys: the CNIs' keys derived from package cni's table are the
// apiserver's keys of the objects the upstream manifests create (the
// literal keys these names held before the table).
func TestCNIKeys(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{strings.Join(FlannelConfigKeys, " "), "/registry/configmaps/kube-flannel/kube-flannel-cfg /registry/configmaps/kube-system/kube-flannel-cfg"},
		{strings.Join(FlannelDaemonSets, " "), "/registry/daemonsets/kube-flannel/kube-flannel-ds /registry/daemonsets/kube-system/kube-flannel-ds"},
		{strings.Join(CalicoDaemonSets, " "), "/registry/daemonsets/kube-system/calico-node /registry/daemonsets/calico-system/calico-node"},
		{strings.Join(CalicoConfigMaps, " "), "/registry/configmaps/kube-system/calico-config"},
		{KeyCanalConfig, "/registry/configmaps/kube-system/canal-config"},
		{KeyCalicoConfig, "/registry/configmaps/kube-system/calico-config"},
		{KeyCiliumConfig, "/registry/configmaps/kube-system/cilium-config"},
		{KeyWeaveDaemonSet, "/registry/daemonsets/kube-system/weave-net"},
		{KeyCanalDaemonSet, "/registry/daemonsets/kube-system/canal"},
		{KeyCiliumDaemonSet, "/registry/daemonsets/kube-system/cilium"},
		{PrefixCiliumNodes, "/registry/cilium.io/ciliumnodes/"},
		{PrefixCiliumPools, "/registry/cilium.io/ciliumpodippools/"},
		{PrefixCalicoPools, "/registry/crd.projectcalico.org/ippools/"},
		{PrefixCalicoBlocks, "/registry/crd.projectcalico.org/ipamblocks/"},
		{PrefixCalicoAffs, "/registry/crd.projectcalico.org/blockaffinities/"},
		{PrefixCalicoHandles, "/registry/crd.projectcalico.org/ipamhandles/"},
		{PrefixTigeraInstall, "/registry/operator.tigera.io/installations/"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
