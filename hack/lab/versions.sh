# The lab's versions (sourced by hack/lab/*.sh). Kubernetes matches the e2e's
# newest; CoreDNS and flannel are the newest on the module proxy that build with
# this toolchain; the flannel CNI plugin is containernetworking/plugins v0.9.1's
# plugins/meta/flannel (the last release that held it: flannel-io/cni-plugin is
# not served by the module proxy).
K8S_VERSION=${K8S_VERSION:-v1.36.3}
COREDNS_VERSION=v1.14.7
COREDNS_PLUGINS="errors health ready kubernetes forward file cache loop reload loadbalance"
COREDNS_BUILD=coredns-lab-$(echo "$COREDNS_PLUGINS" | cksum | cut -d' ' -f1) # hack/lab/build.sh
FLANNEL_VERSION=v0.28.10
CNI_FLANNEL_VERSION=v0.9.1
CRICTL_VERSION=v1.37.0 # snapshift node apply drives the runtime with crictl
ETCDCTL_VERSION=v3.7.3 # the runbook's etcdctl snapshot save; go.mod's etcd
# Image names as kubeadm's manifests and the lab's manifests name them; each is
# built here from a static binary and imported, never pulled.
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
ETCD_IMAGE=registry.k8s.io/etcd:3.6.8-0 # the tag snapshift manifests --generate writes; holds go.mod's etcd
COREDNS_IMAGE=registry.k8s.io/coredns/coredns:$COREDNS_VERSION
WEB_IMAGE=lab.local/web:1
PROBE_IMAGE=lab.local/probe:1
BUSYBOX_IMAGE=docker.io/library/busybox:1.36 # snapshift cluster check's default --probe-image
# The add-on DaemonSets' images, as kubeadm's kube-proxy and flannel's own
# kube-flannel.yml (from the flannel module, at FLANNEL_VERSION) name them.
KUBE_PROXY_IMAGE=registry.k8s.io/kube-proxy:$K8S_VERSION
FLANNEL_IMAGE=ghcr.io/flannel-io/flannel:$FLANNEL_VERSION
FLANNEL_CNI_PLUGIN_IMAGE=ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3
LAB_CACHE=${SNAPSHIFT_E2E_CACHE:-$HOME/.cache/snapshift-e2e}
LAB_BIN=$LAB_CACHE/lab-bin
LAB_IMAGES=$LAB_CACHE/lab-images-$K8S_VERSION
K8S_BIN=$LAB_CACHE/k8s-$K8S_VERSION
COREDNS_BIN=$LAB_BIN/$COREDNS_BUILD-$COREDNS_VERSION
# The conformance suite's images (hack/lab/conformance.sh), under the names
# e2e.test asks for (test/utils/image/manifest.go at K8S_VERSION).
CONF_IMAGES=$LAB_CACHE/conformance-images-$K8S_VERSION
CONF_AGNHOST_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.63.0
CONF_BUSYBOX_IMAGE=registry.k8s.io/e2e-test-images/busybox:1.37.0-1
CONF_DNS_IMAGE=registry.k8s.io/e2e-test-images/glibc-dns-testing:2.0.0
CONF_NGINX_IMAGE=registry.k8s.io/e2e-test-images/nginx:1.15-4
CONF_NGINX_NEW_IMAGE=registry.k8s.io/e2e-test-images/nginx:1.27-0
CONF_PAUSE_IMAGE=registry.k8s.io/pause:3.10.2
GINKGO_VERSION=v2.28.1 # k8s.io/kubernetes' go.mod at K8S_VERSION
