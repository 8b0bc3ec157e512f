// Command kubeadm-gen writes the static Pod manifests of manifests/testdata/kubeadm-v1.36.3 with
// kubeadm's own code (k8s.io/kubernetes v1.36.3, cmd/kubeadm/app/phases/controlplane and
// phases/etcd), so that the tests edit real kubeadm output and compare Generate with it. It is not
// part of the snapshift module (testdata is ignored by the go tool); run it from a scratch module
// that requires k8s.io/kubernetes v1.36.3 with every k8s.io/* staging module replaced by v0.36.3:
//
//	env -i PATH=$PATH ./kubeadm-gen ipv4 out/ipv4
//	env -i PATH=$PATH HTTPS_PROXY=http://proxy.example:3128 NO_PROXY=10.0.0.0/8 ./kubeadm-gen ipv6-extra out/ipv6-extra
//
// kubeadm mounts /etc/ca-certificates, /usr/share/ca-certificates and
// /usr/local/share/ca-certificates only where they exist on the host: the fixtures were made on a
// host that has those three (and no /etc/pki), and kubeadm copies the *_proxy environment of its
// own process into the apiserver, controller-manager and scheduler.
package main

import (
	"os"

	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	"k8s.io/kubernetes/cmd/kubeadm/app/phases/controlplane"
	etcdphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/etcd"
)

func main() {
	name, out := os.Args[1], os.Args[2]
	cfg := &kubeadmapi.ClusterConfiguration{
		KubernetesVersion: "v1.36.3",
		ImageRepository:   "registry.k8s.io",
		CertificatesDir:   "/etc/kubernetes/pki",
		ClusterName:       "kubernetes",
		Etcd:              kubeadmapi.Etcd{Local: &kubeadmapi.LocalEtcd{DataDir: "/var/lib/etcd"}},
	}
	cfg.Networking.DNSDomain = "cluster.local"
	ep := &kubeadmapi.APIEndpoint{BindPort: 6443}
	node := "cp1"
	switch name {
	case "ipv4": // the sample cluster of internal/sample
		cfg.Networking.ServiceSubnet = "192.168.0.0/16"
		cfg.Networking.PodSubnet = "10.244.0.0/16"
		ep.AdvertiseAddress = "10.0.0.10"
	case "ipv6-extra": // IPv6, a custom data dir, extra arguments that override defaults
		cfg.Networking.ServiceSubnet = "fd00:10:96::/108"
		cfg.Networking.PodSubnet = "fd00:10:244::/56"
		cfg.ImageRepository = "registry.example.com/k8s"
		cfg.Networking.DNSDomain = "corp.local"
		ep.AdvertiseAddress = "fd00::10"
		ep.BindPort = 8443
		node = "cp-a"
		cfg.Etcd.Local.DataDir = "/data/etcd"
		cfg.APIServer.ExtraArgs = []kubeadmapi.Arg{{Name: "authorization-mode", Value: "Node,RBAC,Webhook"}, {Name: "audit-log-maxage", Value: "30"}}
		cfg.ControllerManager.ExtraArgs = []kubeadmapi.Arg{{Name: "bind-address", Value: "::"}, {Name: "node-cidr-mask-size", Value: "64"}}
		cfg.Scheduler.ExtraArgs = []kubeadmapi.Arg{{Name: "bind-address", Value: "::1"}}
		cfg.Etcd.Local.ExtraArgs = []kubeadmapi.Arg{{Name: "listen-metrics-urls", Value: "http://[::1]:2382"}, {Name: "quota-backend-bytes", Value: "8589934592"}}
	default:
		panic("unknown case " + name)
	}
	if err := controlplane.CreateStaticPodFiles(out, "", cfg, ep, false, "kube-apiserver", "kube-controller-manager", "kube-scheduler"); err != nil {
		panic(err)
	}
	if err := etcdphase.CreateLocalEtcdStaticPodManifestFile(out, "", node, cfg, ep, false); err != nil {
		panic(err)
	}
}
