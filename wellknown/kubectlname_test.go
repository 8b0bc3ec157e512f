package wellknown

import "testing"

// TestKubectlName: keys as kubectl names their objects, read back by KeyOf;
// keys outside the layout as they are.
func TestKubectlName(t *testing.T) {
	for key, want := range map[string]string{
		"/registry/services/specs/prod/web":               "svc/prod/web",
		"/registry/deployments/kube-system/coredns":       "deploy/kube-system/coredns",
		"/registry/minions/cp1":                           "no/cp1",
		"/registry/crd.projectcalico.org/ippools/default": "ippools.crd.projectcalico.org/default",
		"/registry/services/endpoints/default/kubernetes": "ep/default/kubernetes",
		"/registry/configmaps/kube-system/kubeadm-config": "cm/kube-system/kubeadm-config",
		"/registry/services/specs/":                       "svc/",
		"/registry/ranges/serviceips":                     "/registry/ranges/serviceips",
		"/registry/masterleases/10.0.0.1":                 "/registry/masterleases/10.0.0.1",
		"/kubernetes.io/services/specs/prod/web":          "/kubernetes.io/services/specs/prod/web",
	} {
		if got := KubectlName(key); got != want {
			t.Errorf("KubectlName(%s) = %s, want %s", key, got, want)
		}
	}
}
