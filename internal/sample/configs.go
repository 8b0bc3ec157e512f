package sample

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// The documents kubeadm, kube-proxy, CoreDNS and flannel keep in ConfigMaps, as those tools write them.

// clusterConfiguration is kube-system/kubeadm-config key ClusterConfiguration (kubeadm v1beta4, as
// kubeadm uploads it: sigs.k8s.io/yaml, keys sorted).
const clusterConfiguration = `apiServer: {}
apiVersion: kubeadm.k8s.io/v1beta4
caCertificateValidityPeriod: 87600h0m0s
certificateValidityPeriod: 8760h0m0s
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
controlPlaneEndpoint: ` + ControlPlaneIP + `:6443
controllerManager: {}
dns: {}
encryptionAlgorithm: RSA-2048
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: ` + KubernetesVersion + `
networking:
  dnsDomain: ` + DNSDomain + `
  podSubnet: ` + PodCIDR + `
  serviceSubnet: ` + ServiceCIDR + `
proxy: {}
scheduler: {}
`

// kubeletConfiguration is kube-system/kubelet-config key kubelet.
const kubeletConfiguration = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- ` + DNSServiceIP + `
clusterDomain: ` + DNSDomain + `
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`

// kubeProxyConfiguration is kube-system/kube-proxy key config.conf.
const kubeProxyConfiguration = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: ` + PodCIDR + `
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ""
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`

// kubeProxyKubeconfig is kube-system/kube-proxy key kubeconfig.conf.
const kubeProxyKubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: https://` + ControlPlaneIP + `:6443
  name: default
contexts:
- context:
    cluster: default
    namespace: default
    user: default
  name: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`

// corefile is kube-system/coredns key Corefile.
const corefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes ` + DNSDomain + ` in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success ` + DNSDomain + `
       disable denial ` + DNSDomain + `
    }
    loop
    reload
    loadbalance
}
`

// flannelCNIConf and flannelNetConf are kube-flannel/kube-flannel-cfg keys cni-conf.json and
// net-conf.json, as in flannel's kube-flannel.yml.
const flannelCNIConf = `{
  "name": "cbr0",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
`

const flannelNetConf = `{
  "Network": "` + PodCIDR + `",
  "EnableNFTables": false,
  "Backend": {
    "Type": "vxlan"
  }
}
`

// clusterInfoKubeconfig is kube-public/cluster-info key kubeconfig, as kubeadm writes it.
func clusterInfoKubeconfig(caPEM []byte) string {
	return `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString(caPEM) + `
    server: https://` + ControlPlaneIP + `:6443
  name: ""
contexts: null
current-context: ""
kind: Config
preferences: {}
users: null
`
}

// clusterCA returns a real, parseable CA certificate in PEM, the same on every call (ed25519 keys and
// signatures are deterministic). It stands for the cluster's /etc/kubernetes/pki/ca.crt, which is
// public and is copied into kube-root-ca.crt, cluster-info and token Secrets.
func clusterCA() ([]byte, error) {
	seed := sha256.Sum256([]byte("snapshift-sample-cluster-ca"))
	key := ed25519.NewKeyFromSeed(seed[:])
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             initTime().Add(-5 * time.Minute),
		NotAfter:              initTime().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("sample: create cluster CA: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// nodeLocalDNSCorefile is kube-system/node-local-dns key Corefile as the
// upstream addon's install leaves it (its sed fills in the local and the
// kube-dns address; node-cache fills __PILLAR__ placeholders at start).
const nodeLocalDNSCorefile = DNSDomain + `:53 {
    errors
    cache {
            success 9984 30
            denial 9984 5
    }
    reload
    loop
    bind ` + NodeLocalDNSIP + ` ` + DNSServiceIP + `
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    health ` + NodeLocalDNSIP + `:8080
    }
in-addr.arpa:53 {
    errors
    cache 30
    reload
    loop
    bind ` + NodeLocalDNSIP + ` ` + DNSServiceIP + `
    forward . __PILLAR__CLUSTER__DNS__ {
            force_tcp
    }
    prometheus :9253
    }
.:53 {
    errors
    cache 30
    reload
    loop
    bind ` + NodeLocalDNSIP + ` ` + DNSServiceIP + `
    forward . __PILLAR__UPSTREAM__SERVERS__
    prometheus :9253
    }
`
