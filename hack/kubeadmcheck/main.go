//go:build ignore

// kubeadm-check runs kubeadm's own checks of the files a control-plane
// node already has, the ones `kubeadm join --control-plane` runs before it
// uses them (its control-plane-prepare phases): certsphase.CreatePKIAssets
// (every certificate on disk must be signed by its CA and hold every SAN
// the configuration asks for; a missing one is made) and
// kubeconfigphase.CreateJoinControlPlaneKubeConfigFiles (every kubeconfig
// must hold the CA; a wrong server is a warning). kubeadm's commands offer
// no way to run them without a running cluster (join discovers its
// configuration from it), so hack/build-kubeadm-check.sh builds this from
// the same k8s.io/kubernetes module as kubeadm. Not part of snapshift's
// module (build tag ignore): e2e/kubeadm_oracle_test.go runs it.
//
// Usage: kubeadm-check CONFIG KUBECONFIG_DIR (CONFIG: an InitConfiguration
// and ClusterConfiguration whose certificatesDir is the node's pki).
package main

import (
	"fmt"
	"os"

	certsphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/certs"
	kubeconfigphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubeconfig"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kubeadm-check CONFIG KUBECONFIG_DIR")
		os.Exit(2)
	}
	cfg, err := configutil.LoadInitConfigurationFromFile(os.Args[1], configutil.LoadOrDefaultConfigurationOptions{SkipCRIDetect: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeadm-check:", err)
		os.Exit(1)
	}
	if err := certsphase.CreatePKIAssets(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "kubeadm-check: certificates:", err)
		os.Exit(1)
	}
	if err := kubeconfigphase.CreateJoinControlPlaneKubeConfigFiles(os.Args[2], cfg); err != nil {
		fmt.Fprintln(os.Stderr, "kubeadm-check: kubeconfigs:", err)
		os.Exit(1)
	}
	fmt.Println("kubeadm-check: every certificate and kubeconfig passes kubeadm's join-time checks")
}
