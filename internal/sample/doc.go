// Package sample is the etcd state of a small kubeadm cluster, for tests, demos and the generated
// testdata/sample.db.
//
// The cluster runs Kubernetes 1.34 with flannel, Service network 192.168.0.0/16 and Pod network
// 10.244.0.0/16 (the defaults a hosting company used for years, and the reason to move them). Every
// object is a typed k8s.io/api value encoded exactly as kube-apiserver stores it ("k8s\x00" + protobuf
// runtime.Unknown), under the real key layout; custom resources, CustomResourceDefinitions and
// APIServices are JSON as the apiserver stores them. The networks appear everywhere a real cluster
// keeps a copy: Services and their IPAddress objects, the legacy bitmap, the default ServiceCIDR, Node
// podCIDRs (a /24, a /21 and a /28 fake node), Pod and endpoint IPs, kubeadm, kubelet, kube-proxy and
// flannel configuration, static Pod flags, last-applied-configuration and managedFields.
//
// Objects is the state after creation, History what happened next (updates, deletes, compaction),
// Live the expected live state at the end, and Write applies it all to an etcdtest server. The
// exported facts (ServiceCIDR, Services, Nodes, SecretValues, ...) are what tests assert against.
package sample
