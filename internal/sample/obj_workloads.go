package sample

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// pod describes one Pod; podObject fills in what the apiserver, scheduler and kubelet add.
type pod struct {
	namespace, name string
	node            string
	// ip is the pod IP; empty for host-network pods, which report the node's address.
	ip          string
	created     time.Duration
	labels      map[string]string
	annotations map[string]string
	owner       *metav1.OwnerReference
	sa          string
	containers  []corev1.Container
	priority    string // priority class name; system classes set the priority value too
	// deletedAt marks a Pod in graceful deletion (deletionTimestamp set), as stored right before the delete.
	deletedAt time.Duration
}

func (p pod) key() string { return "/registry/pods/" + p.namespace + "/" + p.name }

// nodeIP returns the InternalIP of a sample Node.
func nodeIP(name string) string {
	for _, n := range Nodes() {
		if n.Name == name {
			return n.InternalIP
		}
	}
	return ""
}

func container(name, image string, ports ...corev1.ContainerPort) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    image,
		Ports:                    ports,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
}

func containerPort(name string, port int32, proto corev1.Protocol) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: proto}
}

// fakeID returns a stable hex id (container IDs, image digests, config hashes).
func fakeID(parts ...string) string {
	h := sha256.Sum256([]byte(fmt.Sprint(parts)))
	return hex.EncodeToString(h[:])
}

func podObject(p pod) *corev1.Pod {
	obj := &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"), ObjectMeta: objectMeta("Pod", p.namespace, p.name, p.created)}
	obj.Labels = p.labels
	obj.Annotations = p.annotations
	if p.owner != nil {
		obj.OwnerReferences = []metav1.OwnerReference{*p.owner}
		obj.GenerateName = p.name[:len(p.name)-5]
	}
	hostIP := nodeIP(p.node)
	podIP := p.ip
	hostNetwork := podIP == ""
	if hostNetwork {
		podIP = hostIP
	}

	spec := &obj.Spec
	podSpec(spec, p, hostNetwork)
	if p.sa != "" {
		vol := "kube-api-access-" + fakeID(p.namespace, p.name)[:5]
		spec.Volumes = append(spec.Volumes, KubeAPIAccessVolume(vol))
		for i := range spec.Containers {
			spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, KubeAPIAccessMount(vol))
		}
	}

	started := at(p.created + 3*time.Second)
	st := &obj.Status
	st.Phase = corev1.PodRunning
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: started})
	}
	st.HostIP = hostIP
	st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	st.PodIP = podIP
	st.PodIPs = []corev1.PodIP{{IP: podIP}}
	st.StartTime = new(at(p.created + time.Second))
	st.QOSClass = corev1.PodQOSBestEffort
	for _, c := range p.containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name:        c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:       true,
			Image:       c.Image,
			ImageID:     c.Image + "@sha256:" + fakeID("image", c.Image),
			ContainerID: "containerd://" + fakeID("container", p.namespace, p.name, c.Name),
			Started:     new(true),
		})
	}
	obj.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kubelet", metav1.ManagedFieldsOperationUpdate, "v1", p.created+3*time.Second, "status",
			`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"`+podIP+`\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`),
	}
	if p.deletedAt != 0 {
		obj.DeletionTimestamp = new(at(p.deletedAt + 30*time.Second))
		obj.DeletionGracePeriodSeconds = new(int64(30))
		st.Phase = corev1.PodSucceeded
	}
	return obj
}

// templateSpec returns a Pod template's spec as the apiserver stores it: the containers, run as
// ServiceAccount sa, with the defaults the apiserver fills in.
func templateSpec(sa string, containers ...corev1.Container) corev1.PodSpec {
	return corev1.PodSpec{
		Containers:                    containers,
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: new(int64(30)),
		DNSPolicy:                     corev1.DNSClusterFirst,
		ServiceAccountName:            sa,
		DeprecatedServiceAccount:      sa,
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 corev1.DefaultSchedulerName,
	}
}

// podSpec fills a scheduled Pod's spec as the apiserver stores it: a template's, scheduled on
// p.node, with the defaults admission adds to a Pod.
func podSpec(spec *corev1.PodSpec, p pod, hostNetwork bool) {
	*spec = templateSpec(p.sa, p.containers...)
	spec.NodeName = p.node
	spec.HostNetwork = hostNetwork
	spec.EnableServiceLinks = new(true)
	spec.PreemptionPolicy = new(corev1.PreemptLowerPriority)
	spec.Priority = new(int32(0))
	switch p.priority {
	case "system-node-critical":
		spec.Priority = new(int32(2000001000))
	case "system-cluster-critical":
		spec.Priority = new(int32(2000000000))
	}
	spec.PriorityClassName = p.priority
	spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
	}
}

// KubeAPIAccessVolume is the projected volume (token, kube-root-ca.crt,
// namespace) the ServiceAccount admission plugin adds to a Pod, and
// KubeAPIAccessMount its mount in every container.
func KubeAPIAccessVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: new(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
		DefaultMode: new(int32(420)),
	}}}
}

// KubeAPIAccessMount mounts KubeAPIAccessVolume name.
func KubeAPIAccessMount(name string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
}

// replicaSetOwner returns the controller reference of a Pod created by a ReplicaSet.
func replicaSetOwner(namespace, name string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name,
		UID: uid("ReplicaSet", namespace, name), Controller: new(true), BlockOwnerDeletion: new(true)}
}

// deployment builds a Deployment whose Pods carry its labels; its ReplicaSet is available.
func deployment(namespace, name string, created time.Duration, replicas int32, labels map[string]string, sa string, c corev1.Container) *appsv1.Deployment {
	selector := labels
	obj := &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: objectMeta("Deployment", namespace, name, created)}
	obj.Labels = labels
	obj.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	obj.Generation = 1
	c.VolumeMounts = nil
	obj.Spec.Replicas = new(replicas)
	obj.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector}
	obj.Spec.Template.Labels = selector
	obj.Spec.Template.Spec = templateSpec(sa, c)
	quarter := intstr.FromString("25%")
	obj.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: &quarter}}
	obj.Spec.RevisionHistoryLimit = new(int32(10))
	obj.Spec.ProgressDeadlineSeconds = new(int32(600))
	ready := at(created + 20*time.Second)
	obj.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: ready, LastTransitionTime: ready,
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: ready, LastTransitionTime: at(created),
				Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-"+rsHash(name))},
		},
	}
	return obj
}

// rsHash returns the pod-template-hash of the sample's Deployments.
func rsHash(deploy string) string {
	return map[string]string{"coredns": "6f6b679f8f", "web": "5d8f7c9b6", "api": "7b9c5d4f8",
		"metrics-server": "5dd7b49d79", "ingress-nginx-controller": "7d56585cd7"}[deploy]
}

// staticPods adds the mirror Pods of the control-plane static Pods that carry the networks in their flags.
func (b *builder) staticPods() {
	mirror := func(component string, flags []string, port int32) {
		name := component + "-cp1"
		hash := fakeID("static", component)[:32]
		c := container(component, "registry.k8s.io/"+component+":"+KubernetesVersion)
		c.Command = append([]string{component}, flags...)
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
		c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: "127.0.0.1", Path: "/healthz", Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTPS}},
			InitialDelaySeconds: 10, TimeoutSeconds: 15, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 8}
		p := pod{namespace: "kube-system", name: name, node: "cp1", created: tInit + 10*time.Second,
			labels: map[string]string{"component": component, "tier": "control-plane"},
			annotations: map[string]string{
				"kubernetes.io/config.hash":   hash,
				"kubernetes.io/config.mirror": hash,
				"kubernetes.io/config.seen":   at(tInit).UTC().Format(time.RFC3339Nano),
				"kubernetes.io/config.source": "file",
			},
			owner:      &metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "cp1", UID: uid("Node", "", "cp1"), Controller: new(true)},
			containers: []corev1.Container{c},
			priority:   "system-node-critical",
		}
		if component == "kube-apiserver" {
			p.annotations["kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint"] = ControlPlaneIP + ":6443"
		}
		obj := podObject(p)
		obj.GenerateName = ""
		obj.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		obj.Spec.EnableServiceLinks = nil
		obj.Status.QOSClass = corev1.PodQOSBurstable
		b.add(p.key(), obj)
	}
	mirror("kube-apiserver", []string{
		"--advertise-address=" + ControlPlaneIP,
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--client-ca-file=/etc/kubernetes/pki/ca.crt",
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt",
		"--etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt",
		"--etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key",
		"--etcd-servers=https://127.0.0.1:2379",
		"--secure-port=6443",
		"--service-account-issuer=https://kubernetes.default.svc." + DNSDomain,
		"--service-account-key-file=/etc/kubernetes/pki/sa.pub",
		"--service-account-signing-key-file=/etc/kubernetes/pki/sa.key",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
		"--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
	}, 6443)
	mirror("kube-controller-manager", []string{
		"--allocate-node-cidrs=true",
		"--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--bind-address=127.0.0.1",
		"--client-ca-file=/etc/kubernetes/pki/ca.crt",
		"--cluster-cidr=" + PodCIDR,
		"--cluster-name=kubernetes",
		"--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
		"--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--leader-elect=true",
		"--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
		"--root-ca-file=/etc/kubernetes/pki/ca.crt",
		"--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--use-service-account-credentials=true",
	}, 10257)
}

// coreDNS adds what kubeadm's CoreDNS add-on creates and the Pods that came up.
func (b *builder) coreDNS() {
	b.configMap("kube-system", "coredns", tAddons, map[string]string{"Corefile": corefile}, nil)
	labels := map[string]string{"k8s-app": "kube-dns"}
	c := container("coredns", "registry.k8s.io/coredns/coredns:v1.12.1",
		containerPort("dns", 53, corev1.ProtocolUDP), containerPort("dns-tcp", 53, corev1.ProtocolTCP),
		containerPort("metrics", 9153, corev1.ProtocolTCP))
	c.Args = []string{"-conf", "/etc/coredns/Corefile"}
	b.add("/registry/deployments/kube-system/coredns", deployment("kube-system", "coredns", tAddons, 2, labels, "coredns", c))
	b.service("kube-system", "kube-dns")
	for _, p := range []struct{ name, ip string }{{"coredns-6f6b679f8f-9xk2q", "10.244.0.2"}, {"coredns-6f6b679f8f-tw5zn", "10.244.0.3"}} {
		b.add("/registry/pods/kube-system/"+p.name, podObject(pod{
			namespace: "kube-system", name: p.name, node: "cp1", ip: p.ip, created: tFlannel + time.Minute,
			labels: map[string]string{"k8s-app": "kube-dns", "pod-template-hash": rsHash("coredns")},
			owner:  replicaSetOwner("kube-system", "coredns-"+rsHash("coredns")), sa: "coredns",
			containers: []corev1.Container{c}, priority: "system-cluster-critical",
		}))
	}
	b.endpoints("kube-system", "kube-dns")
}

// kubeProxy adds a kube-proxy DaemonSet Pod (host network).
func (b *builder) kubeProxy(node, name string) {
	c := container("kube-proxy", "registry.k8s.io/kube-proxy:"+KubernetesVersion)
	c.Command = []string{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=$(NODE_NAME)"}
	created := tAddons
	if node != "cp1" {
		created = tJoin + time.Minute
	}
	b.add("/registry/pods/kube-system/"+name, podObject(pod{
		namespace: "kube-system", name: name, node: node, created: created,
		labels: map[string]string{"controller-revision-hash": "67b5b8c4d7", "k8s-app": "kube-proxy", "pod-template-generation": "1"},
		owner: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kube-proxy",
			UID: uid("DaemonSet", "kube-system", "kube-proxy"), Controller: new(true), BlockOwnerDeletion: new(true)},
		sa: "kube-proxy", containers: []corev1.Container{c}, priority: "system-node-critical",
	}))
}

// flannel adds what kube-flannel.yml creates: namespace, ConfigMap, ServiceAccount and a DaemonSet Pod.
func (b *builder) flannel() {
	b.namespace("kube-flannel", tFlannel, map[string]string{"pod-security.kubernetes.io/enforce": "privileged", "k8s-app": "flannel"})
	b.serviceAccount("kube-flannel", "flannel", tFlannel, nil)
	b.configMap("kube-flannel", "kube-flannel-cfg", tFlannel, map[string]string{
		"cni-conf.json": flannelCNIConf,
		"net-conf.json": flannelNetConf,
	}, map[string]string{"app": "flannel", "k8s-app": "flannel", "tier": "node"})
	b.rootCAConfigMaps("kube-flannel")
	c := container("kube-flannel", "ghcr.io/flannel-io/flannel:v0.26.7")
	c.Command = []string{"/opt/bin/flanneld"}
	c.Args = []string{"--ip-masq", "--kube-subnet-mgr"}
	b.add("/registry/pods/kube-flannel/kube-flannel-ds-q9w8e", podObject(pod{
		namespace: "kube-flannel", name: "kube-flannel-ds-q9w8e", node: "cp1", created: tFlannel + 10*time.Second,
		labels: map[string]string{"app": "flannel", "controller-revision-hash": "5b8d7f6c9", "k8s-app": "flannel",
			"pod-template-generation": "1", "tier": "node"},
		owner: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kube-flannel-ds",
			UID: uid("DaemonSet", "kube-flannel", "kube-flannel-ds"), Controller: new(true), BlockOwnerDeletion: new(true)},
		sa: "flannel", containers: []corev1.Container{c}, priority: "system-node-critical",
	}))
}

// metricsServer adds metrics-server's Service (the highest address of the range) and Pod.
func (b *builder) metricsServer() {
	b.serviceAccount("kube-system", "metrics-server", tApps, nil)
	b.service("kube-system", "metrics-server")
	b.add("/registry/pods/kube-system/metrics-server-5dd7b49d79-lq8mz", podObject(pod{
		namespace: "kube-system", name: "metrics-server-5dd7b49d79-lq8mz", node: "worker-vm1", ip: "10.244.1.8", created: tApps,
		labels: map[string]string{"k8s-app": "metrics-server", "pod-template-hash": rsHash("metrics-server")},
		owner:  replicaSetOwner("kube-system", "metrics-server-"+rsHash("metrics-server")), sa: "metrics-server",
		containers: []corev1.Container{container("metrics-server", "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
			containerPort("https", 10250, corev1.ProtocolTCP))},
		priority: "system-cluster-critical",
	}))
}

// ingressNginx adds the ingress controller: a LoadBalancer Service, its Pod, and a TLS Secret.
func (b *builder) ingressNginx() {
	b.namespace("ingress-nginx", tApps, map[string]string{"app.kubernetes.io/instance": "ingress-nginx", "app.kubernetes.io/name": "ingress-nginx"})
	b.rootCAConfigMaps("ingress-nginx")
	b.serviceAccount("ingress-nginx", "ingress-nginx", tApps, nil)
	b.secret("ingress-nginx", "ingress-nginx-admission", tApps, corev1.SecretTypeTLS, map[string][]byte{
		"ca":      b.ca,
		"tls.crt": b.ca,
		"tls.key": []byte(tlsKey),
	}, nil, nil)
	b.service("ingress-nginx", "ingress-nginx-controller")
	b.add("/registry/pods/ingress-nginx/ingress-nginx-controller-7d56585cd7-8fw2d", podObject(pod{
		namespace: "ingress-nginx", name: "ingress-nginx-controller-7d56585cd7-8fw2d", node: "worker-hw1", ip: "10.244.8.9",
		created: tApps + 5*time.Minute,
		labels: map[string]string{"app.kubernetes.io/component": "controller", "app.kubernetes.io/instance": "ingress-nginx",
			"app.kubernetes.io/name": "ingress-nginx", "pod-template-hash": rsHash("ingress-nginx-controller")},
		owner: replicaSetOwner("ingress-nginx", "ingress-nginx-controller-"+rsHash("ingress-nginx-controller")), sa: "ingress-nginx",
		containers: []corev1.Container{container("controller", "registry.k8s.io/ingress-nginx/controller:v1.12.1",
			containerPort("http", 80, corev1.ProtocolTCP), containerPort("https", 443, corev1.ProtocolTCP))},
	}))
}

// webPod returns a Pod of demo/web's ReplicaSet.
func webPod(name, ip string, created time.Duration) pod {
	return pod{
		namespace: "demo", name: name, node: "worker-hw1", ip: ip, created: created,
		labels: map[string]string{"app": "web", "pod-template-hash": rsHash("web")},
		owner:  replicaSetOwner("demo", "web-"+rsHash("web")), sa: "web",
		containers: []corev1.Container{container("web", "ghcr.io/example/web:1.4.2", containerPort("http", 8080, corev1.ProtocolTCP))},
	}
}

// demo adds the application namespace: Services of every kind, Pods, a Deployment, token and Opaque
// Secrets, and a ConfigMap the history updates.
func (b *builder) demo() {
	b.namespace("demo", tApps, nil)
	b.rootCAConfigMaps("demo")
	b.serviceAccount("demo", "default", tApps, nil)
	b.serviceAccount("demo", "web", tApps, nil)
	b.serviceAccount("demo", "ci-deployer", tApps, []string{"ci-deployer-token"})
	b.saTokenSecret("demo", "ci-deployer-token", "ci-deployer", tokenCIDeployer, tApps,
		map[string]string{"kubernetes.io/legacy-token-last-used": at(tEvents).Format(time.DateOnly)})
	b.secret("demo", "db-credentials", tApps, corev1.SecretTypeOpaque, map[string][]byte{
		"username": []byte(dbUser),
		"password": []byte(dbPassword),
	}, map[string]string{"app": "db"}, nil)
	b.configMap("demo", "app-settings", tApps, appSettings(0), map[string]string{"app": "web"})

	labels := map[string]string{"app": "web"}
	wc := container("web", "ghcr.io/example/web:1.4.2", containerPort("http", 8080, corev1.ProtocolTCP))
	b.add("/registry/deployments/demo/web", deployment("demo", "web", tApps+10*time.Minute, 1, labels, "web", wc))
	b.service("demo", "web")
	b.add("/registry/pods/demo/web-5d8f7c9b6-k2x4m", podObject(webPod("web-5d8f7c9b6-k2x4m", "10.244.8.5", tApps+10*time.Minute)))
	b.endpoints("demo", "web")

	b.service("demo", "api")
	b.add("/registry/pods/demo/api-7b9c5d4f8-p3n7q", podObject(pod{
		namespace: "demo", name: "api-7b9c5d4f8-p3n7q", node: "worker-vm1", ip: "10.244.1.7", created: tApps + 12*time.Minute,
		labels: map[string]string{"app": "api", "pod-template-hash": rsHash("api")},
		owner:  replicaSetOwner("demo", "api-"+rsHash("api")), sa: "default",
		containers: []corev1.Container{container("api", "ghcr.io/example/api:2.0.1",
			containerPort("grpc", 9090, corev1.ProtocolTCP), containerPort("http", 8080, corev1.ProtocolTCP))},
	}))
	for _, name := range []string{"db-headless", "web-nodeport", "external-db", "dual-echo"} {
		b.service("demo", name)
	}
}

// appSettings returns the data of demo/app-settings after n updates. The first two versions carry
// a password that someone put in a ConfigMap by mistake; the second update removes it.
func appSettings(n int) map[string]string {
	data := map[string]string{
		"LOG_LEVEL":    []string{"info", "debug", "debug", "warn"}[n],
		"API_URL":      "http://api.demo.svc." + DNSDomain + ":8080",
		"FEATURE_FLAG": fmt.Sprintf("rollout-%d", n),
	}
	if n < 2 {
		data["DB_PASSWORD"] = appSettingsPassword
	}
	return data
}

// events adds two Events; kube-apiserver attaches Events to an etcd lease (--event-ttl).
func (b *builder) events() {
	for _, e := range []struct {
		ns, pod, container, node, reason, msg string
	}{
		{"demo", "web-5d8f7c9b6-k2x4m", "web", "worker-hw1", "Pulled", `Container image "ghcr.io/example/web:1.4.2" already present on machine`},
		{"kube-system", "coredns-6f6b679f8f-9xk2q", "coredns", "cp1", "BackOff", "Back-off restarting failed container coredns in pod coredns-6f6b679f8f-9xk2q_kube-system(" + string(uid("Pod", "kube-system", "coredns-6f6b679f8f-9xk2q")) + ")"},
	} {
		name := e.pod + "." + fakeID("event", e.pod, e.reason)[:16]
		t := at(tEvents)
		ev := &corev1.Event{
			TypeMeta:   typeMeta("v1", "Event"),
			ObjectMeta: objectMeta("Event", e.ns, name, tEvents),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: e.ns, Name: e.pod, UID: uid("Pod", e.ns, e.pod),
				APIVersion: "v1", FieldPath: "spec.containers{" + e.container + "}"},
			Reason:              e.reason,
			Message:             e.msg,
			Source:              corev1.EventSource{Component: "kubelet", Host: e.node},
			FirstTimestamp:      t,
			LastTimestamp:       t,
			Count:               1,
			Type:                corev1.EventTypeNormal,
			ReportingController: "kubelet",
			ReportingInstance:   e.node,
		}
		if e.reason == "BackOff" {
			ev.Type = corev1.EventTypeWarning
		}
		entry := b.encode("/registry/events/"+e.ns+"/"+name, ev)
		entry.LeaseTTL = eventTTL
		b.addEntry(entry, nil)
	}
}

// eventTTL is kube-apiserver's default --event-ttl, in seconds.
const eventTTL = 3600

// nodeLocalDNS adds the upstream NodeLocal DNSCache addon
// (cluster/addons/dns/nodelocaldns) in kube-proxy iptables mode: the cache
// binds its link-local address and the kube-dns ClusterIP, so kubelet's
// clusterDNS stays kube-dns's; install put both into the Corefile's bind
// lines and the DaemonSet's -localip. __PILLAR__CLUSTER__DNS__ is left for
// node-cache to fill in at start from kube-dns-upstream.
func (b *builder) nodeLocalDNS() {
	b.configMap("kube-system", "node-local-dns", tAddons, map[string]string{"Corefile": nodeLocalDNSCorefile},
		map[string]string{"addonmanager.kubernetes.io/mode": "Reconcile"})
	labels := map[string]string{"k8s-app": "node-local-dns"}
	c := container("node-cache", "registry.k8s.io/dns/k8s-dns-node-cache:1.25.0",
		containerPort("dns", 53, corev1.ProtocolUDP), containerPort("dns-tcp", 53, corev1.ProtocolTCP),
		containerPort("metrics", 9253, corev1.ProtocolTCP))
	c.Args = []string{"-localip", NodeLocalDNSIP + "," + DNSServiceIP, "-conf", "/etc/Corefile", "-upstreamsvc", "kube-dns-upstream"}
	obj := &appsv1.DaemonSet{TypeMeta: typeMeta("apps/v1", "DaemonSet"), ObjectMeta: objectMeta("DaemonSet", "kube-system", "node-local-dns", tAddons)}
	obj.Labels = map[string]string{"k8s-app": "node-local-dns", "kubernetes.io/cluster-service": "true", "addonmanager.kubernetes.io/mode": "Reconcile"}
	obj.Generation = 1
	ten := intstr.FromString("10%")
	zero := intstr.FromInt32(0)
	obj.Spec = appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &ten, MaxSurge: &zero}},
		RevisionHistoryLimit: new(int32(10)),
	}
	obj.Spec.Template.Labels = labels
	spec := templateSpec("node-local-dns", c)
	spec.TerminationGracePeriodSeconds = new(int64(0))
	spec.DNSPolicy = corev1.DNSDefault
	spec.HostNetwork = true
	spec.PriorityClassName = "system-node-critical"
	obj.Spec.Template.Spec = spec
	obj.Status = appsv1.DaemonSetStatus{CurrentNumberScheduled: 3, DesiredNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3,
		UpdatedNumberScheduled: 3, ObservedGeneration: 1}
	b.add("/registry/daemonsets/kube-system/node-local-dns", obj)
}
