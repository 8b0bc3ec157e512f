package gen

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snapshift/snapshift/internal/sample"
)

// kind is what a job writes.
type kind uint8

const (
	kRaw kind = iota // a value given in the job (the sample's objects, the final bitmap)
	kNamespace
	kDefaultSA
	kRootCA
	kNode
	kNodeLease
	kCRD
	kPod
	kEvent
	kConfigMap
	kSecret
	kLease
	kServiceAccount
	kService
	kIPAddress
	kCustom
	kDeployment // the churn profile's
	kReplicaSet
)

// job is one write to the `key` bucket: a create, an update (variant > 0) or a tombstone of one
// object. Everything the value depends on beyond the world and the seed is in here, so the
// encoders can build it on any goroutine and an update can build it again.
type job struct {
	rev     int64
	create  int64
	version int64
	lease   int64
	idx     int64 // object index: names, UIDs and the object's own random choices derive from it
	variant int32
	ns      int32 // namespace (and app) of namespaced bulk objects; node for node objects
	app     int32
	node    int32 // the Node a Pod runs on
	sub     uint8 // a kind's flavour (Secret type, custom resource kind, CRD)
	kind    kind
	tomb    bool
	// recreate: the object is created again under its old name after a
	// tombstone (a new generation of the key, not a new key).
	recreate bool
	ip       netip.Addr // Pod IP, Service IP
	key      string     // kRaw
	raw      []byte     // kRaw
}

var (
	gvPod            = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvEvent          = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	gvConfigMap      = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	gvSecret         = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	gvNamespace      = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	gvServiceAccount = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	gvService        = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	gvNode           = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	gvRange          = schema.GroupVersionKind{Version: "v1", Kind: "RangeAllocation"}
	gvLease          = schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}
	gvIPAddress      = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IPAddress"}
)

func typeMeta(gvk schema.GroupVersionKind) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
}

// uidFor formats 128 random bits as a version 4 UUID.
func uidFor(a uint64) types.UID {
	b := mix(a ^ 0x5bd1e995)
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff,
		uint16(b>>48)&0x3fff|0x8000, b&0xffffffffffff))
}

func (w *world) uid(k kind, idx int64) types.UID {
	return uidFor(mix(uint64(w.seed)^uint64(k)<<56) ^ uint64(idx))
}

func sec(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

func managed(manager string, op metav1.ManagedFieldsOperationType, apiVersion string, t time.Time, sub string, fields []byte) metav1.ManagedFieldsEntry {
	mt := sec(t)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: apiVersion, Time: &mt,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields}, Subresource: sub}
}

func (w *world) app(j *job) *appSpec { return w.apps[j.ns][j.app] }

// key returns the etcd key of the object a job writes.
func (w *world) key(j *job) string {
	sfx := uniqueSuffix(j.idx)
	switch j.kind {
	case kRaw:
		return j.key
	case kNamespace:
		return "/registry/namespaces/" + w.namespaces[j.ns]
	case kDefaultSA:
		return "/registry/serviceaccounts/" + w.namespaces[j.ns] + "/default"
	case kRootCA:
		return "/registry/configmaps/" + w.namespaces[j.ns] + "/kube-root-ca.crt"
	case kNode:
		return "/registry/minions/" + w.nodes[j.node].name
	case kNodeLease:
		return "/registry/leases/kube-node-lease/" + w.nodes[j.node].name
	case kCRD:
		return "/registry/apiextensions.k8s.io/customresourcedefinitions/" + crds[j.sub].plural + "." + crds[j.sub].group
	case kIPAddress:
		return "/registry/ipaddresses/" + j.ip.String()
	}
	a := w.app(j)
	switch j.kind {
	case kPod:
		return "/registry/pods/" + a.ns + "/" + a.name + "-" + a.rsHash + "-" + sfx
	case kEvent:
		return "/registry/events/" + a.ns + "/" + a.name + "-" + a.rsHash + "-" + sfx + "." + fmt.Sprintf("%016x", mix(uint64(j.idx)))[:16]
	case kConfigMap:
		return "/registry/configmaps/" + a.ns + "/" + a.name + "-" + textWords[mix(uint64(j.idx))%uint64(len(textWords))] + "-" + sfx
	case kSecret:
		return "/registry/secrets/" + a.ns + "/" + a.name + "-" + secretKinds[j.sub] + "-" + sfx
	case kLease:
		return "/registry/leases/" + a.ns + "/" + a.name + "-lock-" + sfx
	case kServiceAccount:
		return "/registry/serviceaccounts/" + a.ns + "/" + a.name + "-" + sfx
	case kService:
		return "/registry/services/specs/" + a.ns + "/" + a.name + "-" + sfx
	case kCustom:
		c := crds[j.sub]
		return "/registry/" + c.group + "/" + c.plural + "/" + a.ns + "/" + a.name + "-" + sfx
	case kDeployment:
		return "/registry/deployments/" + a.ns + "/" + a.name + "-" + sfx
	case kReplicaSet:
		return "/registry/replicasets/" + a.ns + "/" + a.name + "-" + sfx + "-" + a.rsHash
	}
	panic(fmt.Sprintf("gen: key of unknown kind %d", j.kind))
}

// builders build the objects of the kinds stored as protobuf, with their apiVersion and kind set.
var builders = [...]func(*world, *job) runtime.Object{
	kNamespace:      (*world).namespace,
	kDefaultSA:      (*world).serviceAccount,
	kRootCA:         (*world).rootCA,
	kNode:           (*world).node,
	kNodeLease:      (*world).nodeLease,
	kPod:            (*world).pod,
	kEvent:          (*world).event,
	kConfigMap:      (*world).configMap,
	kSecret:         (*world).secret,
	kLease:          (*world).lease,
	kServiceAccount: (*world).serviceAccount,
	kService:        (*world).service,
	kIPAddress:      (*world).ipAddress,
	kDeployment:     (*world).deployment,
	kReplicaSet:     (*world).replicaSet,
}

// value builds and encodes the object a job writes.
func (w *world) value(j *job) ([]byte, error) {
	switch j.kind {
	case kRaw:
		return j.raw, nil
	case kCRD:
		return w.crd(j)
	case kCustom:
		return w.custom(j)
	}
	if int(j.kind) >= len(builders) || builders[j.kind] == nil {
		return nil, fmt.Errorf("gen: value of unknown kind %d", j.kind)
	}
	obj := builders[j.kind](w, j)
	return w.codec.EncodeProtobuf(obj, obj.GetObjectKind().GroupVersionKind())
}

func (w *world) meta(k kind, idx int64, ns, name string, created time.Time) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, UID: w.uid(k, idx), CreationTimestamp: sec(created)}
}

// namespaceCreated is when bulk namespace ns was created, with its default ServiceAccount and
// kube-root-ca.crt ConfigMap: an hour before the bulk objects, a second apart.
func namespaceCreated(ns int32) time.Time {
	return initTime.Add(bulkStart - time.Hour + time.Duration(ns)*time.Second)
}

func (w *world) namespace(j *job) runtime.Object {
	ns := w.namespaces[j.ns]
	created := namespaceCreated(j.ns)
	o := &corev1.Namespace{TypeMeta: typeMeta(gvNamespace), ObjectMeta: w.meta(kNamespace, int64(j.ns), "", ns, created)}
	o.Labels = map[string]string{"kubernetes.io/metadata.name": ns, "team": strings.TrimPrefix(ns, "team-")}
	o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	o.Status.Phase = corev1.NamespaceActive
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed("kubectl-create", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
		[]byte(`{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{},"f:team":{}}}}`))}
	return o
}

// serviceAccount builds a namespace's default ServiceAccount (kDefaultSA) or an application's.
func (w *world) serviceAccount(j *job) runtime.Object {
	ns := w.namespaces[j.ns]
	name, created := "default", namespaceCreated(j.ns)
	if j.kind == kServiceAccount {
		name, created = w.app(j).name+"-"+uniqueSuffix(j.idx), w.createdAt(j.idx)
	}
	o := &corev1.ServiceAccount{TypeMeta: typeMeta(gvServiceAccount), ObjectMeta: w.meta(j.kind, j.idx, ns, name, created)}
	if j.kind == kServiceAccount {
		a := w.app(j)
		o.Labels = map[string]string{"app.kubernetes.io/name": a.name, "app.kubernetes.io/managed-by": "Helm"}
		o.Annotations = map[string]string{"meta.helm.sh/release-name": a.name, "meta.helm.sh/release-namespace": ns}
		if j.idx%3 == 0 {
			o.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
		}
	}
	return o
}

func (w *world) rootCA(j *job) runtime.Object {
	ns := w.namespaces[j.ns]
	created := namespaceCreated(j.ns)
	o := &corev1.ConfigMap{TypeMeta: typeMeta(gvConfigMap), ObjectMeta: w.meta(kRootCA, int64(j.ns), ns, "kube-root-ca.crt", created)}
	o.Annotations = map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}
	o.Data = map[string]string{"ca.crt": fakeCert(newRNG(w.seed, 3), "kubernetes")} // the one cluster CA
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
		[]byte(`{"f:data":{".":{},"f:ca.crt":{}},"f:metadata":{"f:annotations":{".":{},"f:kubernetes.io/description":{}}}}`))}
	return o
}

// fakeCert returns a PEM block the size of a real certificate.
func fakeCert(r *rng, cn string) string {
	var b strings.Builder
	b.WriteString("-----BEGIN CERTIFICATE-----\n")
	body := "MIIDBTCCAe2gAwIBAgII" + r.base64ish(1040) + cn
	for len(body) > 64 {
		b.WriteString(body[:64])
		b.WriteByte('\n')
		body = body[64:]
	}
	b.WriteString(body + "=\n-----END CERTIFICATE-----\n")
	return b.String()
}

func (w *world) node(j *job) runtime.Object {
	n := w.nodes[j.node]
	r := newRNG(w.seed, 4, uint64(j.node))
	created := initTime.Add(n.created)
	o := &corev1.Node{TypeMeta: typeMeta(gvNode), ObjectMeta: w.meta(kNode, int64(j.node), "", n.name, created)}
	zone := "zone-" + string(rune('a'+j.node%3))
	o.Labels = map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": zone,
		"node.kubernetes.io/instance-type": []string{"c6.xlarge", "m6.2xlarge", "r6.4xlarge"}[j.node%3],
	}
	mac := fmt.Sprintf("6a:1c:%02x:%02x:%02x:%02x", byte(r.u64()), byte(r.u64()), byte(r.u64()), byte(r.u64()))
	o.Annotations = map[string]string{
		"flannel.alpha.coreos.com/backend-data":                  `{"VNI":1,"VtepMAC":"` + mac + `"}`,
		"flannel.alpha.coreos.com/backend-type":                  "vxlan",
		"flannel.alpha.coreos.com/kube-subnet-manager":           "true",
		"flannel.alpha.coreos.com/public-ip":                     n.ip.String(),
		"kubeadm.alpha.kubernetes.io/cri-socket":                 "unix:///var/run/containerd/containerd.sock",
		"node.alpha.kubernetes.io/ttl":                           "0",
		"volumes.kubernetes.io/controller-managed-attach-detach": "true",
	}
	cidr := n.cidr.String()
	o.Spec.PodCIDR = cidr
	o.Spec.PodCIDRs = []string{cidr}
	o.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip.String()}, {Type: corev1.NodeHostName, Address: n.name}}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: quantity([]string{"4", "8", "16"}[j.node%3]), corev1.ResourceMemory: quantity([]string{"16393216Ki", "32786432Ki", "131890244Ki"}[j.node%3]),
		corev1.ResourcePods: quantity("110"), corev1.ResourceEphemeralStorage: quantity("203056560Ki"),
	}
	o.Status.Capacity = capacity
	o.Status.Allocatable = capacity
	hb := sec(w.createdAt(w.total).Add(-time.Duration(r.intn(40))*time.Second + time.Duration(j.variant)*10*time.Minute))
	since := sec(created.Add(time.Minute))
	o.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	o.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
	o.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: r.hex(32), SystemUUID: string(uidFor(r.u64())), BootID: string(uidFor(r.u64())),
		KernelVersion: "6.8.0-57-generic", OSImage: "Ubuntu 24.04.2 LTS", ContainerRuntimeVersion: "containerd://1.7.27",
		KubeletVersion: "v1.34.2", OperatingSystem: "linux", Architecture: "amd64"}
	for i, n := 0, r.between(8, 30); i < n; i++ {
		img := fmt.Sprintf("%s/%s-%s", r.pick(imageRegistries), r.pick(appWords), r.pick(appWords))
		o.Status.Images = append(o.Status.Images, corev1.ContainerImage{
			Names:     []string{img + "@sha256:" + r.hex(64), fmt.Sprintf("%s:%d.%d.%d", img, r.between(1, 4), r.intn(30), r.intn(20))},
			SizeBytes: int64(r.between(5_000_000, 900_000_000)),
		})
	}
	o.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kubeadm", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
			[]byte(`{"f:metadata":{"f:annotations":{"f:kubeadm.alpha.kubernetes.io/cri-socket":{}}}}`)),
		managed("kubelet", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
			[]byte(`{"f:metadata":{"f:annotations":{".":{},"f:volumes.kubernetes.io/controller-managed-attach-detach":{}},"f:labels":{".":{},"f:beta.kubernetes.io/arch":{},"f:beta.kubernetes.io/os":{},"f:kubernetes.io/arch":{},"f:kubernetes.io/hostname":{},"f:kubernetes.io/os":{},"f:node.kubernetes.io/instance-type":{},"f:topology.kubernetes.io/zone":{}}}}`)),
		managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "v1", created.Add(5*time.Second), "",
			[]byte(`{"f:metadata":{"f:annotations":{"f:node.alpha.kubernetes.io/ttl":{}}},"f:spec":{"f:podCIDR":{},"f:podCIDRs":{".":{},"v:\"`+cidr+`\"":{}}}}`)),
		managed("flanneld", metav1.ManagedFieldsOperationUpdate, "v1", created.Add(time.Minute), "",
			[]byte(`{"f:metadata":{"f:annotations":{"f:flannel.alpha.coreos.com/backend-data":{},"f:flannel.alpha.coreos.com/backend-type":{},"f:flannel.alpha.coreos.com/kube-subnet-manager":{},"f:flannel.alpha.coreos.com/public-ip":{}}}}`)),
		managed("kubelet", metav1.ManagedFieldsOperationUpdate, "v1", hb.Time, "status",
			[]byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"PIDPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{}}},"f:images":{}}}`)),
	}
	return o
}

func (w *world) nodeLease(j *job) runtime.Object {
	n := w.nodes[j.node]
	created := initTime.Add(n.created)
	o := &coordinationv1.Lease{TypeMeta: typeMeta(gvLease), ObjectMeta: w.meta(kNodeLease, int64(j.node), "kube-node-lease", n.name, created)}
	o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: w.uid(kNode, int64(j.node))}}
	renew := metav1.NewMicroTime(w.createdAt(w.total).Add(time.Duration(j.variant)*10*time.Second + time.Duration(j.node)*time.Millisecond*37).Truncate(time.Microsecond))
	o.Spec = coordinationv1.LeaseSpec{HolderIdentity: new(n.name), LeaseDurationSeconds: new(int32(40)), RenewTime: &renew}
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed("kubelet", metav1.ManagedFieldsOperationUpdate, "coordination.k8s.io/v1", renew.Time, "",
		[]byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"`+string(w.uid(kNode, int64(j.node)))+`\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`))}
	return o
}

var tolerations = []corev1.Toleration{
	{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
	{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
}

var podConditions = []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled}

func (w *world) pod(j *job) runtime.Object {
	a := w.app(j)
	n := w.nodes[j.node]
	r := newRNG(w.seed, 5, uint64(j.idx))
	sfx := uniqueSuffix(j.idx)
	name := a.name + "-" + a.rsHash + "-" + sfx
	created := w.createdAt(j.idx)
	o := &corev1.Pod{TypeMeta: typeMeta(gvPod), ObjectMeta: w.meta(kPod, j.idx, a.ns, name, created)}
	o.GenerateName = a.name + "-" + a.rsHash + "-"
	o.Labels = a.labels
	rs := a.name + "-" + a.rsHash
	o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
		UID: a.rsUID, Controller: new(true), BlockOwnerDeletion: new(true)}}
	if w.largePods {
		o.Annotations = largePodAnnotations(r, j.variant)
	} else if r.chance(300) {
		o.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": sec(created.Add(-time.Hour)).UTC().Format(time.RFC3339),
			"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "checksum/config": r.hex(64)}
	}
	vol := "kube-api-access-" + r.alnum(5)
	spec := &o.Spec
	spec.Containers = make([]corev1.Container, len(a.containers))
	for i, c := range a.containers {
		c.VolumeMounts = append(append([]corev1.VolumeMount(nil), c.VolumeMounts...), sample.KubeAPIAccessMount(vol))
		spec.Containers[i] = c
	}
	spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: a.name + "-config"}, DefaultMode: new(int32(420))}}},
		sample.KubeAPIAccessVolume(vol),
	}
	podSpecDefaults(spec, a.sa, n.name)

	started := sec(created.Add(time.Duration(3+r.intn(20)) * time.Second))
	st := &o.Status
	st.Phase = corev1.PodRunning
	for _, c := range podConditions {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: started})
	}
	host, ip := n.ip.String(), j.ip.String()
	st.HostIP, st.HostIPs = host, []corev1.HostIP{{IP: host}}
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	st.StartTime = new(sec(created.Add(time.Second)))
	st.QOSClass = corev1.PodQOSBurstable
	for _, c := range a.containers {
		cs := corev1.ContainerStatus{Name: c.Name, Ready: true, Image: c.Image, ImageID: c.Image + "@sha256:" + r.hex(64),
			ContainerID: "containerd://" + r.hex(64), Started: new(true), RestartCount: j.variant,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}
		if j.variant > 0 {
			at := sec(started.Add(time.Duration(j.variant) * 17 * time.Minute))
			cs.State.Running.StartedAt = at
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
				StartedAt: started, FinishedAt: at, ContainerID: "containerd://" + r.hex(64)}}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	o.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "v1", created, "", a.kcmFields),
		managed("kubelet", metav1.ManagedFieldsOperationUpdate, "v1", started.Time, "status",
			[]byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"`+ip+`\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)),
	}
	return o
}

// podSpecDefaults fills what the apiserver defaults in a scheduled Pod's
// spec, for service account sa on node.
func podSpecDefaults(spec *corev1.PodSpec, sa, node string) {
	spec.RestartPolicy = corev1.RestartPolicyAlways
	spec.TerminationGracePeriodSeconds = new(int64(30))
	spec.DNSPolicy = corev1.DNSClusterFirst
	spec.ServiceAccountName = sa
	spec.DeprecatedServiceAccount = sa
	spec.NodeName = node
	spec.SecurityContext = &corev1.PodSecurityContext{}
	spec.SchedulerName = corev1.DefaultSchedulerName
	spec.Tolerations = tolerations
	spec.Priority = new(int32(0))
	spec.EnableServiceLinks = new(true)
	spec.PreemptionPolicy = new(corev1.PreemptLowerPriority)
}

func (w *world) event(j *job) runtime.Object {
	a := w.app(j)
	r := newRNG(w.seed, 6, uint64(j.idx))
	pod := a.name + "-" + a.rsHash + "-" + uniqueSuffix(j.idx)
	name := pod + "." + fmt.Sprintf("%016x", mix(uint64(j.idx)))[:16]
	created := w.createdAt(j.idx)
	o := &corev1.Event{TypeMeta: typeMeta(gvEvent), ObjectMeta: w.meta(kEvent, j.idx, a.ns, name, created)}
	e := eventReasons[r.intn(len(eventReasons))]
	node := w.nodes[j.node].name
	c := a.containers[0]
	var msg string
	switch e.reason {
	case "Scheduled":
		msg = fmt.Sprintf(e.msg, a.ns+"/"+pod, node)
	case "Pulling", "Pulled":
		msg = fmt.Sprintf(e.msg, c.Image)
	case "BackOff":
		msg = fmt.Sprintf(e.msg, c.Name, pod+"_"+a.ns+"("+string(uidFor(r.u64()))+")")
	case "Unhealthy":
		msg = fmt.Sprintf(e.msg, j.ip)
	default:
		msg = fmt.Sprintf(e.msg, c.Name)
	}
	o.InvolvedObject = corev1.ObjectReference{Kind: "Pod", Namespace: a.ns, Name: pod, UID: w.uid(kPod, j.idx), APIVersion: "v1",
		ResourceVersion: strconv.FormatInt(j.create-1, 10), FieldPath: "spec.containers{" + c.Name + "}"}
	o.Reason, o.Message, o.Type = e.reason, msg, e.typ
	o.Source = corev1.EventSource{Component: "kubelet", Host: node}
	o.FirstTimestamp = sec(created)
	o.LastTimestamp = sec(created.Add(time.Duration(j.variant) * 5 * time.Minute))
	o.Count = 1 + j.variant
	o.ReportingController, o.ReportingInstance = "kubelet", node
	if e.reason == "Scheduled" {
		o.Source = corev1.EventSource{Component: "default-scheduler"}
		o.ReportingController, o.ReportingInstance = "default-scheduler", "default-scheduler-cp1"
		o.InvolvedObject.FieldPath = ""
	}
	return o
}

func (w *world) configMap(j *job) runtime.Object {
	a := w.app(j)
	r := newRNG(w.seed, 7, uint64(j.idx))
	name := a.name + "-" + textWords[mix(uint64(j.idx))%uint64(len(textWords))] + "-" + uniqueSuffix(j.idx)
	created := w.createdAt(j.idx)
	o := &corev1.ConfigMap{TypeMeta: typeMeta(gvConfigMap), ObjectMeta: w.meta(kConfigMap, j.idx, a.ns, name, created)}
	o.Labels = map[string]string{"app.kubernetes.io/name": a.name, "app.kubernetes.io/managed-by": "Helm"}
	o.Annotations = map[string]string{"meta.helm.sh/release-name": a.name, "meta.helm.sh/release-namespace": a.ns}
	size := r.between(150, 1500)
	if r.chance(30) {
		size = r.between(4000, 12000)
	}
	o.Data = map[string]string{"application.yaml": yamlText(r, size), "revision": strconv.Itoa(int(j.variant) + 1)}
	if r.chance(300) {
		o.Data["logging.properties"] = yamlText(r, r.between(100, 600))
	}
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed("helm", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
		[]byte(`{"f:data":{".":{},"f:application.yaml":{},"f:revision":{}},"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},"f:meta.helm.sh/release-namespace":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{}}}}`))}
	return o
}

// yamlText returns about n bytes of configuration-looking YAML.
func yamlText(r *rng, n int) string {
	b := make([]byte, 0, n+64)
	depth := 0
	for len(b) < n {
		for i := 0; i < depth; i++ {
			b = append(b, "  "...)
		}
		b = append(b, textWords[r.intn(len(textWords))]...)
		b = append(b, '_')
		b = append(b, textWords[r.intn(len(textWords))]...)
		switch r.intn(6) {
		case 0:
			b = append(b, ":\n"...)
			if depth < 3 {
				depth++
			}
			continue
		case 1:
			b = append(b, ": "...)
			b = strconv.AppendInt(b, int64(r.intn(100000)), 10)
		case 2:
			b = append(b, ": "...)
			b = append(b, []string{"true", "false"}[r.intn(2)]...)
		default:
			b = append(b, ": "...)
			b = append(b, textWords[r.intn(len(textWords))]...)
			b = append(b, '-')
			b = append(b, textWords[r.intn(len(textWords))]...)
		}
		b = append(b, '\n')
		if depth > 0 && r.intn(4) == 0 {
			depth--
		}
	}
	return string(b)
}

var secretKinds = []string{"credentials", "tls", "registry", "helm-release"}

func (w *world) secret(j *job) runtime.Object {
	a := w.app(j)
	r := newRNG(w.seed, 8, uint64(j.idx), uint64(j.variant))
	name := a.name + "-" + secretKinds[j.sub] + "-" + uniqueSuffix(j.idx)
	created := w.createdAt(j.idx)
	o := &corev1.Secret{TypeMeta: typeMeta(gvSecret), ObjectMeta: w.meta(kSecret, j.idx, a.ns, name, created)}
	random := func(n int) []byte { b := make([]byte, n); r.fill(b); return b }
	switch j.sub {
	case 0:
		o.Type = corev1.SecretTypeOpaque
		o.Data = map[string][]byte{}
		for i, n := 0, r.between(1, 5); i < n; i++ {
			o.Data[[]string{"username", "password", "api-key", "client-secret", "token"}[i]] = random(r.between(16, 300))
		}
	case 1:
		o.Type = corev1.SecretTypeTLS
		o.Data = map[string][]byte{"tls.crt": []byte(fakeCert(r, name)), "tls.key": []byte("-----BEGIN PRIVATE KEY-----\n" + r.base64ish(1620) + "\n-----END PRIVATE KEY-----\n"),
			"ca.crt": []byte(fakeCert(r, "ca"))}
		o.Annotations = map[string]string{"cert-manager.io/certificate-name": a.name, "cert-manager.io/issuer-name": "letsencrypt", "cert-manager.io/issuer-kind": "ClusterIssuer",
			"cert-manager.io/common-name": a.name + "." + a.ns + ".example.com"}
	case 2:
		o.Type = corev1.SecretTypeDockerConfigJson
		o.Data = map[string][]byte{".dockerconfigjson": []byte(`{"auths":{"registry.example.com":{"username":"robot$` + a.name + `","password":"` + r.base64ish(40) + `","auth":"` + r.base64ish(72) + `"}}}`)}
	case 3:
		// Helm 3 release: base64 of gzip of the release JSON (chart, values, manifest).
		o.Type = "helm.sh/release.v1"
		o.Labels = map[string]string{"name": a.name, "owner": "helm", "status": "deployed", "version": strconv.Itoa(int(j.variant) + 1)}
		o.Data = map[string][]byte{"release": []byte(r.base64ish(r.between(8000, 40000)))}
	}
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed("helm", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
		[]byte(`{"f:data":{},"f:type":{}}`))}
	return o
}

func (w *world) lease(j *job) runtime.Object {
	a := w.app(j)
	r := newRNG(w.seed, 9, uint64(j.idx))
	name := a.name + "-lock-" + uniqueSuffix(j.idx)
	created := w.createdAt(j.idx)
	o := &coordinationv1.Lease{TypeMeta: typeMeta(gvLease), ObjectMeta: w.meta(kLease, j.idx, a.ns, name, created)}
	holder := a.name + "-" + a.rsHash + "-" + r.alnum(5) + "_" + string(uidFor(r.u64()))
	acquire := metav1.NewMicroTime(created.Add(2 * time.Second).Truncate(time.Microsecond))
	renew := metav1.NewMicroTime(created.Add(time.Duration(j.variant)*time.Minute + 5*time.Second + time.Duration(r.intn(1e6))*time.Microsecond).Truncate(time.Microsecond))
	o.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: new(int32(15)), AcquireTime: &acquire, RenewTime: &renew,
		LeaseTransitions: new(j.variant)}
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed(a.name, metav1.ManagedFieldsOperationUpdate, "coordination.k8s.io/v1", renew.Time, "",
		[]byte(`{"f:spec":{"f:acquireTime":{},"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:leaseTransitions":{},"f:renewTime":{}}}`))}
	return o
}

var (
	singleStack = corev1.IPFamilyPolicySingleStack
	itpCluster  = corev1.ServiceInternalTrafficPolicyCluster
)

func (w *world) service(j *job) runtime.Object {
	a := w.app(j)
	name := a.name + "-" + uniqueSuffix(j.idx)
	created := w.createdAt(j.idx)
	o := &corev1.Service{TypeMeta: typeMeta(gvService), ObjectMeta: w.meta(kService, j.idx, a.ns, name, created)}
	o.Labels = map[string]string{"app.kubernetes.io/name": a.name, "app.kubernetes.io/managed-by": "Helm"}
	o.Annotations = map[string]string{"meta.helm.sh/release-name": a.name, "meta.helm.sh/release-namespace": a.ns}
	if j.variant > 0 {
		o.Annotations["snapshift.example.com/touched"] = strconv.Itoa(int(j.variant))
	}
	ip := j.ip.String()
	o.Spec = corev1.ServiceSpec{
		Ports: a.ports, Selector: map[string]string{"app.kubernetes.io/name": a.name, "app.kubernetes.io/instance": a.name + "-" + a.ns},
		ClusterIP: ip, ClusterIPs: []string{ip}, Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
		IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &singleStack, InternalTrafficPolicy: &itpCluster,
	}
	o.ManagedFields = []metav1.ManagedFieldsEntry{managed("helm", metav1.ManagedFieldsOperationUpdate, "v1", created, "",
		[]byte(`{"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},"f:meta.helm.sh/release-namespace":{}},"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{}}},"f:spec":{"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`))}
	return o
}

func (w *world) ipAddress(j *job) runtime.Object {
	a := w.app(j)
	created := w.createdAt(j.idx)
	o := &networkingv1.IPAddress{TypeMeta: typeMeta(gvIPAddress), ObjectMeta: w.meta(kIPAddress, j.idx, "", j.ip.String(), created)}
	o.Labels = map[string]string{networkingv1.LabelIPAddressFamily: string(corev1.IPv4Protocol), networkingv1.LabelManagedBy: "ipallocator.k8s.io"}
	o.Spec.ParentRef = &networkingv1.ParentReference{Resource: "services", Namespace: a.ns, Name: a.name + "-" + uniqueSuffix(j.idx)}
	return o
}

// crdInfo is a custom resource kind the generator writes, with its CustomResourceDefinition.
type crdInfo struct {
	group, version, plural, singular, kind string
}

var crds = []crdInfo{
	{"monitoring.coreos.com", "v1", "servicemonitors", "servicemonitor", "ServiceMonitor"},
	{"cert-manager.io", "v1", "certificates", "certificate", "Certificate"},
}

// crd writes a CustomResourceDefinition as apiextensions-apiserver stores it (JSON, v1beta1).
func (w *world) crd(j *job) ([]byte, error) {
	c := crds[j.sub]
	created := initTime.Add(bulkStart - 90*time.Minute).UTC().Format(time.RFC3339)
	names := map[string]any{"plural": c.plural, "singular": c.singular, "kind": c.kind, "listKind": c.kind + "List"}
	obj := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": c.plural + "." + c.group, "uid": string(w.uid(kCRD, int64(j.sub))), "generation": int64(1), "creationTimestamp": created},
		"spec": map[string]any{"group": c.group, "version": c.version, "names": names, "scope": "Namespaced",
			"validation": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			"versions":   []any{map[string]any{"name": c.version, "served": true, "storage": true}}, "conversion": map[string]any{"strategy": "None"},
			"preserveUnknownFields": false},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "NamesAccepted", "status": "True", "lastTransitionTime": created, "reason": "NoConflicts", "message": "no conflicts found"},
			map[string]any{"type": "Established", "status": "True", "lastTransitionTime": created, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
		}, "acceptedNames": names, "storedVersions": []any{c.version}},
	}
	return w.codec.EncodeJSON(&unstructured.Unstructured{Object: obj})
}

// custom writes a custom resource as the apiserver stores it: JSON of the object, keys sorted.
func (w *world) custom(j *job) ([]byte, error) {
	a := w.app(j)
	c := crds[j.sub]
	r := newRNG(w.seed, 10, uint64(j.idx))
	name := a.name + "-" + uniqueSuffix(j.idx)
	created := w.createdAt(j.idx).UTC().Format(time.RFC3339)
	meta := map[string]any{"name": name, "namespace": a.ns, "uid": string(w.uid(kCustom, j.idx)), "generation": int64(1 + j.variant),
		"creationTimestamp": created, "labels": map[string]any{"app.kubernetes.io/name": a.name, "release": "kube-prometheus-stack"},
		"managedFields": []any{map[string]any{"manager": "helm", "operation": "Update", "apiVersion": c.group + "/" + c.version, "time": created,
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:app.kubernetes.io/name": map[string]any{}, "f:release": map[string]any{}}}, "f:spec": map[string]any{".": map[string]any{}}}}}}
	obj := map[string]any{"apiVersion": c.group + "/" + c.version, "kind": c.kind, "metadata": meta}
	switch j.sub {
	case 0:
		var eps []any
		for i, n := 0, r.between(1, 3); i < n; i++ {
			eps = append(eps, map[string]any{"port": []string{"http", "metrics"}[i%2], "path": "/metrics", "interval": "30s", "scheme": "http",
				"relabelings": []any{map[string]any{"action": "replace", "sourceLabels": []any{"__meta_kubernetes_pod_node_name"}, "targetLabel": "node"}}})
		}
		obj["spec"] = map[string]any{"endpoints": eps, "namespaceSelector": map[string]any{"matchNames": []any{a.ns}},
			"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": a.name}}}
	default:
		host := a.name + "." + a.ns + ".example.com"
		obj["spec"] = map[string]any{"dnsNames": []any{host, "www." + host}, "secretName": a.name + "-tls",
			"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"}}
		obj["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready",
			"message": "Certificate is up to date and has not expired", "lastTransitionTime": created, "observedGeneration": int64(1 + j.variant)}},
			"notAfter": w.createdAt(j.idx).Add(90 * 24 * time.Hour).UTC().Format(time.RFC3339), "revision": int64(1 + j.variant)}
	}
	return w.codec.EncodeJSON(&unstructured.Unstructured{Object: obj})
}
