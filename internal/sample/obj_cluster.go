package sample

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// namespace adds a Namespace.
func (b *builder) namespace(name string, created time.Duration, labels map[string]string) {
	ns := &corev1.Namespace{
		TypeMeta:   typeMeta("v1", "Namespace"),
		ObjectMeta: objectMeta("Namespace", "", name, created),
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	ns.Labels = mergeLabels(labels, map[string]string{"kubernetes.io/metadata.name": name})
	b.add("/registry/namespaces/"+name, ns)
}

// systemNamespaces adds the Namespaces kube-apiserver creates at its first start.
func (b *builder) systemNamespaces() {
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		b.namespace(name, tInit, nil)
	}
}

// node adds a sample Node as kubelet registered it and the controllers and flannel annotated it; the
// fake external node was applied by hand with its podCIDR (so the CIDR is in last-applied too).
func (b *builder) node(name string) {
	var f Node
	for _, n := range Nodes() {
		if n.Name == name {
			f = n
		}
	}
	if f.Name == "" {
		b.fail("no facts for Node %s", name)
		return
	}
	created := tJoin
	switch {
	case name == "cp1":
		created = tInit
	case f.Fake:
		created = tApps + time.Hour
	}
	obj := baseNode(f, created)
	if f.Fake {
		externalNode(obj, f, created)
	} else {
		kubeletNode(obj, f, created)
	}
	b.add(f.Key(), obj)
}

// flannelNodeFields are the Node fields flanneld manages.
const flannelNodeFields = `{"f:metadata":{"f:annotations":{"f:flannel.alpha.coreos.com/backend-data":{},"f:flannel.alpha.coreos.com/backend-type":{},"f:flannel.alpha.coreos.com/kube-subnet-manager":{},"f:flannel.alpha.coreos.com/public-ip":{}}}}`

// baseNode is what every sample Node has: kubelet's labels, flannel's
// annotations, its pod CIDR and addresses.
func baseNode(f Node, created time.Duration) *corev1.Node {
	name := f.Name
	obj := &corev1.Node{TypeMeta: typeMeta("v1", "Node"), ObjectMeta: objectMeta("Node", "", name, created)}
	obj.Labels = map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
	}
	mac := fmt.Sprintf("6a:1c:%s:%s:%s:%s", fakeID(name)[0:2], fakeID(name)[2:4], fakeID(name)[4:6], fakeID(name)[6:8])
	obj.Annotations = map[string]string{
		"flannel.alpha.coreos.com/backend-data":                  `{"VNI":1,"VtepMAC":"` + mac + `"}`,
		"flannel.alpha.coreos.com/backend-type":                  "vxlan",
		"flannel.alpha.coreos.com/kube-subnet-manager":           "true",
		"flannel.alpha.coreos.com/public-ip":                     f.InternalIP,
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
	}
	obj.Spec.PodCIDR = f.PodCIDR
	obj.Spec.PodCIDRs = []string{f.PodCIDR}
	obj.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: f.InternalIP},
		{Type: corev1.NodeHostName, Address: name},
	}
	return obj
}

// externalNode makes obj the fake external node applied by hand with
// kubectl.
func externalNode(obj *corev1.Node, f Node, created time.Duration) {
	obj.Labels["node-role.kubernetes.io/external"] = ""
	obj.Annotations[corev1.LastAppliedConfigAnnotation] = `{"apiVersion":"v1","kind":"Node","metadata":{"annotations":{"flannel.alpha.coreos.com/public-ip":"` +
		f.InternalIP + `"},"labels":{"node-role.kubernetes.io/external":""},"name":"` + f.Name + `"},"spec":{"podCIDR":"` + f.PodCIDR +
		`","podCIDRs":["` + f.PodCIDR + `"],"taints":[{"effect":"NoSchedule","key":"node.kubernetes.io/external"}]}}
`
	obj.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/external", Effect: corev1.TaintEffectNoSchedule}}
	obj.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
			`{"f:metadata":{"f:annotations":{".":{},"f:flannel.alpha.coreos.com/public-ip":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:node-role.kubernetes.io/external":{}}},"f:spec":{"f:podCIDR":{},"f:podCIDRs":{".":{},"v:\"`+f.PodCIDR+`\"":{}},"f:taints":{}}}`),
		managed("flanneld", metav1.ManagedFieldsOperationUpdate, "v1", created+time.Minute, "", flannelNodeFields),
	}
}

// kubeletNode makes obj a node kubeadm joined: the control-plane role on
// cp1, the status kubelet posts, and the managers of its fields.
func kubeletNode(obj *corev1.Node, f Node, created time.Duration) {
	obj.Annotations["kubeadm.alpha.kubernetes.io/cri-socket"] = "unix:///var/run/containerd/containerd.sock"
	if f.Name == "cp1" {
		obj.Labels["node-role.kubernetes.io/control-plane"] = ""
		obj.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
		obj.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
	}
	obj.Status = nodeStatus(f.Name, created, obj.Status.Addresses)
	kcmFields := `{"f:metadata":{"f:annotations":{"f:node.alpha.kubernetes.io/ttl":{}}},"f:spec":{"f:podCIDR":{},"f:podCIDRs":{".":{},"v:\"` + f.PodCIDR + `\"":{}}}}`
	obj.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kubelet", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
			`{"f:metadata":{"f:annotations":{".":{},"f:volumes.kubernetes.io/controller-managed-attach-detach":{}},"f:labels":{".":{},"f:beta.kubernetes.io/arch":{},"f:beta.kubernetes.io/os":{},"f:kubernetes.io/arch":{},"f:kubernetes.io/hostname":{},"f:kubernetes.io/os":{}}}}`),
		managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "v1", created+5*time.Second, "", kcmFields),
		managed("flanneld", metav1.ManagedFieldsOperationUpdate, "v1", created+time.Minute, "", flannelNodeFields),
		managed("kubelet", metav1.ManagedFieldsOperationUpdate, "v1", tHistory-time.Minute, "status",
			`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{}}}}}`),
	}
}

// nodeStatus is the status kubelet posts for a joined node with addresses.
func nodeStatus(name string, created time.Duration, addresses []corev1.NodeAddress) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8148108Ki"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("81106868Ki"),
	}
	if name == "worker-hw1" {
		capacity[corev1.ResourceCPU] = resource.MustParse("32")
		capacity[corev1.ResourceMemory] = resource.MustParse("131890244Ki")
	}
	st := corev1.NodeStatus{Addresses: addresses, Capacity: capacity, Allocatable: capacity.DeepCopy()}
	hb := at(tHistory - time.Minute)
	st.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: at(created),
			Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: at(created),
			Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: at(created),
			Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: hb, LastTransitionTime: at(created + time.Minute),
			Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	st.DaemonEndpoints.KubeletEndpoint.Port = 10250
	st.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               fakeID("machine", name)[:32],
		SystemUUID:              string(uid("SystemUUID", "", name)),
		BootID:                  string(uid("BootID", "", name)),
		KernelVersion:           "6.8.0-57-generic",
		OSImage:                 "Ubuntu 24.04.2 LTS",
		ContainerRuntimeVersion: "containerd://1.7.27",
		KubeletVersion:          KubernetesVersion,
		OperatingSystem:         "linux",
		Architecture:            "amd64",
	}
	return st
}

// lease returns a coordination Lease.
func lease(namespace, name, holder string, duration int32, created, renewed time.Duration) *coordinationv1.Lease {
	obj := &coordinationv1.Lease{TypeMeta: typeMeta("coordination.k8s.io/v1", "Lease"), ObjectMeta: objectMeta("Lease", namespace, name, created)}
	obj.Spec.HolderIdentity = new(holder)
	obj.Spec.LeaseDurationSeconds = new(duration)
	obj.Spec.RenewTime = new(metav1.NewMicroTime(at(renewed).Time))
	return obj
}

// nodeLeaseObject returns kubelet's heartbeat Lease of a Node, renewed at renewed.
func nodeLeaseObject(node string, renewed time.Duration) *coordinationv1.Lease {
	obj := lease("kube-node-lease", node, node, 40, tJoin, renewed)
	if node == "cp1" {
		obj.CreationTimestamp = at(tInit)
	}
	obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: uid("Node", "", node)}}
	return obj
}

// NodeLeaseKey returns the etcd key of a Node's heartbeat Lease.
func NodeLeaseKey(node string) string { return "/registry/leases/kube-node-lease/" + node }

func (b *builder) nodeLease(node string) {
	b.add(NodeLeaseKey(node), nodeLeaseObject(node, tHistory-time.Minute))
}

// controllerManagerLease adds kube-controller-manager's leader-election Lease.
func (b *builder) controllerManagerLease() {
	obj := lease("kube-system", "kube-controller-manager", "cp1_"+string(uid("kcm-identity", "", "cp1")), 15, tInit, tHistory-time.Minute)
	obj.Spec.AcquireTime = new(metav1.NewMicroTime(at(tInit + 20*time.Second).Time))
	obj.Spec.LeaseTransitions = new(int32(0))
	b.add("/registry/leases/kube-system/kube-controller-manager", obj)
}

// configMap adds a ConfigMap.
func (b *builder) configMap(namespace, name string, created time.Duration, data, labels map[string]string) {
	b.add("/registry/configmaps/"+namespace+"/"+name, configMapObject(namespace, name, created, data, labels))
}

func configMapObject(namespace, name string, created time.Duration, data, labels map[string]string) *corev1.ConfigMap {
	obj := &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: objectMeta("ConfigMap", namespace, name, created), Data: data}
	obj.Labels = labels
	return obj
}

// rootCAConfigMaps adds kube-root-ca.crt, which kube-controller-manager publishes in every namespace.
func (b *builder) rootCAConfigMaps(namespaces ...string) {
	for _, ns := range namespaces {
		obj := configMapObject(ns, "kube-root-ca.crt", tInit+20*time.Second, map[string]string{"ca.crt": string(b.ca)}, nil)
		if ns != "default" && ns != "kube-system" && ns != "kube-public" && ns != "kube-node-lease" {
			obj.CreationTimestamp = at(tFlannel)
		}
		obj.Annotations = map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}
		b.add("/registry/configmaps/"+ns+"/kube-root-ca.crt", obj)
	}
}

// kubeadmConfigMaps adds the ConfigMaps kubeadm init uploads.
func (b *builder) kubeadmConfigMaps() {
	cm := configMapObject("kube-system", "kubeadm-config", tInit+15*time.Second, map[string]string{"ClusterConfiguration": clusterConfiguration}, nil)
	cm.ManagedFields = []metav1.ManagedFieldsEntry{managed("kubeadm", metav1.ManagedFieldsOperationUpdate, "v1", tInit+15*time.Second, "",
		`{"f:data":{".":{},"f:ClusterConfiguration":{}}}`)}
	b.add("/registry/configmaps/kube-system/kubeadm-config", cm)

	cm = configMapObject("kube-system", "kubelet-config", tInit+15*time.Second, map[string]string{"kubelet": kubeletConfiguration}, nil)
	cm.Annotations = map[string]string{"kubeadm.kubernetes.io/component-config.hash": "sha256:" + fakeID(kubeletConfiguration)}
	b.add("/registry/configmaps/kube-system/kubelet-config", cm)

	b.configMap("kube-system", "kube-proxy", tAddons, map[string]string{
		"config.conf":     kubeProxyConfiguration,
		"kubeconfig.conf": kubeProxyKubeconfig,
	}, map[string]string{"app": "kube-proxy"})

	cm = configMapObject("kube-public", "cluster-info", tInit+16*time.Second, map[string]string{
		"kubeconfig":                         clusterInfoKubeconfig(b.ca),
		"jws-kubeconfig-" + bootstrapTokenID: "eyJhbGciOiJIUzI1NiIsImtpZCI6InNhbXBsZSJ9..SAMPLE-JWS-" + fakeID("jws")[:43],
	}, nil)
	b.add("/registry/configmaps/kube-public/cluster-info", cm)
}

// secret adds a Secret.
func (b *builder) secret(namespace, name string, created time.Duration, typ corev1.SecretType, data map[string][]byte, labels, annotations map[string]string) {
	obj := &corev1.Secret{TypeMeta: typeMeta("v1", "Secret"), ObjectMeta: objectMeta("Secret", namespace, name, created), Type: typ, Data: data}
	obj.Labels = labels
	obj.Annotations = annotations
	b.add("/registry/secrets/"+namespace+"/"+name, obj)
}

// saTokenSecret adds a legacy ServiceAccount token Secret (the kind auto-created before 1.24).
func (b *builder) saTokenSecret(namespace, name, sa, token string, created time.Duration, labels map[string]string) {
	b.secret(namespace, name, created, corev1.SecretTypeServiceAccountToken, map[string][]byte{
		"ca.crt":    b.ca,
		"namespace": []byte(namespace),
		"token":     []byte(token),
	}, labels, map[string]string{
		corev1.ServiceAccountNameKey: sa,
		corev1.ServiceAccountUIDKey:  string(uid("ServiceAccount", namespace, sa)),
	})
}

// bootstrapToken adds the Secret of a kubeadm bootstrap token (created with --ttl 0).
func (b *builder) bootstrapToken() {
	b.secret("kube-system", "bootstrap-token-"+bootstrapTokenID, tInit+16*time.Second, corev1.SecretTypeBootstrapToken, map[string][]byte{
		"auth-extra-groups":              []byte("system:bootstrappers:kubeadm:default-node-token"),
		"description":                    []byte("Bootstrap token for joining workers, generated by 'kubeadm token create --ttl 0'."),
		"token-id":                       []byte(bootstrapTokenID),
		"token-secret":                   []byte(bootstrapTokenSecret),
		"usage-bootstrap-authentication": []byte("true"),
		"usage-bootstrap-signing":        []byte("true"),
	}, nil, nil)
}

// serviceAccount adds a ServiceAccount; secrets lists legacy token Secrets it references.
func (b *builder) serviceAccount(namespace, name string, created time.Duration, secrets []string) {
	obj := &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: objectMeta("ServiceAccount", namespace, name, created)}
	for _, s := range secrets {
		obj.Secrets = append(obj.Secrets, corev1.ObjectReference{Name: s})
	}
	b.add("/registry/serviceaccounts/"+namespace+"/"+name, obj)
}

// systemServiceAccounts adds kube-system's ServiceAccounts, including one that still uses a legacy
// token Secret made by hand for an old CI integration.
func (b *builder) systemServiceAccounts() {
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		b.serviceAccount(ns, "default", tInit+20*time.Second, nil)
	}
	b.serviceAccount("kube-system", "coredns", tAddons, nil)
	b.serviceAccount("kube-system", "kube-proxy", tAddons, nil)
	b.serviceAccount("kube-system", "legacy-admin", tInit+time.Hour, []string{"legacy-admin-token"})
	b.saTokenSecret("kube-system", "legacy-admin-token", "legacy-admin", tokenLegacyAdmin, tInit+time.Hour, nil)
}
