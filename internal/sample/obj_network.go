package sample

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serviceDetail is what a Service has besides the facts in Services().
type serviceDetail struct {
	created      time.Duration
	ports        []corev1.ServicePort
	selector     map[string]string
	labels       map[string]string
	annotations  map[string]string
	externalName string
	lbIngressIP  string
	managed      []metav1.ManagedFieldsEntry
}

func tcp(name string, port int32, target int) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt(target)}
}

// webLastApplied is the kubectl.kubernetes.io/last-applied-configuration of demo/web: the manifest
// pinned its clusterIP, so the old address also lives in this annotation.
const webLastApplied = `{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"labels":{"app":"web"},"name":"web","namespace":"demo"},"spec":{"clusterIP":"192.168.3.7","ports":[{"name":"http","port":80,"targetPort":8080}],"selector":{"app":"web"}}}
`

func serviceDetails() map[string]serviceDetail {
	out := systemServiceDetails()
	maps.Copy(out, appServiceDetails())
	return out
}

// systemServiceDetails are the control plane's and the add-ons' Services.
func systemServiceDetails() map[string]serviceDetail {
	return map[string]serviceDetail{
		"default/kubernetes": {
			created: tInit,
			ports:   []corev1.ServicePort{tcp("https", 443, 6443)},
			labels:  map[string]string{"component": "apiserver", "provider": "kubernetes"},
			managed: []metav1.ManagedFieldsEntry{managed("kube-apiserver", metav1.ManagedFieldsOperationUpdate, "v1", tInit, "",
				`{"f:metadata":{"f:labels":{".":{},"f:component":{},"f:provider":{}}},"f:spec":{"f:clusterIP":{},"f:internalTrafficPolicy":{},"f:ipFamilyPolicy":{},"f:ports":{".":{},"k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:sessionAffinity":{},"f:type":{}}}`)},
		},
		"kube-system/kube-dns": {
			created: tAddons,
			ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt(53)},
				tcp("dns-tcp", 53, 53),
				tcp("metrics", 9153, 9153),
			},
			selector: map[string]string{"k8s-app": "kube-dns"},
			labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
				"kubernetes.io/name": "CoreDNS"},
			annotations: map[string]string{"prometheus.io/port": "9153", "prometheus.io/scrape": "true"},
			managed: []metav1.ManagedFieldsEntry{managed("kubeadm", metav1.ManagedFieldsOperationUpdate, "v1", tAddons, "",
				`{"f:metadata":{"f:annotations":{".":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:labels":{".":{},"f:k8s-app":{},"f:kubernetes.io/cluster-service":{},"f:kubernetes.io/name":{}}},"f:spec":{"f:clusterIP":{},"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":53,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}},"k:{\"port\":53,\"protocol\":\"UDP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}},"k:{\"port\":9153,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`)},
		},
		"kube-system/metrics-server": {
			created:  tApps,
			ports:    []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromString("https")}},
			selector: map[string]string{"k8s-app": "metrics-server"},
			labels:   map[string]string{"k8s-app": "metrics-server"},
		},
	}
}

// appService is a workload's plain Service: labelled app=app, selecting the Pods labelled so.
func appService(created time.Duration, app string, ports ...corev1.ServicePort) serviceDetail {
	return serviceDetail{created: created, ports: ports,
		selector: map[string]string{"app": app}, labels: map[string]string{"app": app}}
}

// appServiceDetails are the workloads' Services.
func appServiceDetails() map[string]serviceDetail {
	return map[string]serviceDetail{
		"demo/web": {
			created:     tApps + 10*time.Minute,
			ports:       []corev1.ServicePort{tcp("http", 80, 8080)},
			selector:    map[string]string{"app": "web"},
			labels:      map[string]string{"app": "web"},
			annotations: map[string]string{corev1.LastAppliedConfigAnnotation: webLastApplied},
			managed: []metav1.ManagedFieldsEntry{managed("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "v1", tApps+10*time.Minute, "",
				`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:clusterIP":{},"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}`)},
		},
		"demo/api":          appService(tApps+12*time.Minute, "api", tcp("grpc", 9090, 9090), tcp("http", 8080, 8080)),
		"demo/db-headless":  appService(tApps+14*time.Minute, "db", tcp("postgres", 5432, 5432)),
		"demo/web-nodeport": appService(tApps+16*time.Minute, "web", tcp("http", 80, 8080)),
		"demo/external-db": {
			created:      tApps + 18*time.Minute,
			externalName: "db.example.com",
		},
		"demo/dual-echo": appService(tApps+20*time.Minute, "echo", tcp("http", 80, 5678)),
		"ingress-nginx/ingress-nginx-controller": {
			created: tApps + 5*time.Minute,
			ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"), AppProtocol: new("http")},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromString("https"), AppProtocol: new("https")},
			},
			selector: map[string]string{"app.kubernetes.io/component": "controller", "app.kubernetes.io/instance": "ingress-nginx",
				"app.kubernetes.io/name": "ingress-nginx"},
			labels: map[string]string{"app.kubernetes.io/component": "controller", "app.kubernetes.io/instance": "ingress-nginx",
				"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/part-of": "ingress-nginx", "app.kubernetes.io/version": "1.12.1"},
			lbIngressIP: "203.0.113.10",
		},
		"demo/temp-debug": appService(tHistory, "debug", tcp("http", 8080, 8080)),
	}
}

// findService returns the facts of a Service of Services() or TempService().
func findService(namespace, name string) (Service, bool) {
	for _, s := range append(Services(), TempService()) {
		if s.Namespace == namespace && s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// serviceObject builds the stored Service, with the defaults kube-apiserver fills in on create.
func serviceObject(f Service, d serviceDetail) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: objectMeta("Service", f.Namespace, f.Name, d.created),
	}
	svc.Labels = d.labels
	svc.Annotations = d.annotations
	svc.ManagedFields = d.managed
	spec := &svc.Spec
	spec.Type = f.Type
	spec.Selector = d.selector
	spec.SessionAffinity = corev1.ServiceAffinityNone
	spec.Ports = slices.Clone(d.ports)
	for i, p := range f.NodePorts {
		spec.Ports[i].NodePort = p
	}
	if f.Type == corev1.ServiceTypeExternalName {
		spec.ExternalName = d.externalName
		return svc
	}
	spec.ClusterIP = f.ClusterIPs[0]
	spec.ClusterIPs = f.ClusterIPs
	for _, ip := range f.ClusterIPs {
		fam := corev1.IPv4Protocol
		if a, err := netip.ParseAddr(ip); err == nil && a.Is6() {
			fam = corev1.IPv6Protocol
		}
		spec.IPFamilies = append(spec.IPFamilies, fam)
	}
	policy := corev1.IPFamilyPolicySingleStack
	if len(f.ClusterIPs) == 2 {
		policy = corev1.IPFamilyPolicyRequireDualStack
	}
	spec.IPFamilyPolicy = &policy
	spec.InternalTrafficPolicy = new(corev1.ServiceInternalTrafficPolicyCluster)
	if f.Type == corev1.ServiceTypeNodePort || f.Type == corev1.ServiceTypeLoadBalancer {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if f.Type == corev1.ServiceTypeLoadBalancer {
		spec.AllocateLoadBalancerNodePorts = new(true)
		if d.lbIngressIP != "" {
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: d.lbIngressIP, IPMode: new(corev1.LoadBalancerIPModeVIP)}}
		}
	}
	return svc
}

// serviceEntries returns the entries that creating a Service writes: an IPAddress per IPv4 cluster IP
// (allocated first), then the Service.
func (b *builder) serviceEntries(namespace, name string) []Entry {
	f, ok := findService(namespace, name)
	if !ok {
		b.fail("no facts for Service %s/%s", namespace, name)
		return nil
	}
	d := serviceDetails()[namespace+"/"+name]
	start := len(b.entries)
	for _, ip := range f.ClusterIPs {
		a, err := netip.ParseAddr(ip)
		if err != nil || !a.Is4() { // "None", or the IPv6 address the single-stack allocator does not track
			continue
		}
		b.add(IPAddressKey(ip), ipAddressObject(a, f, d.created))
	}
	b.add(f.Key(), serviceObject(f, d))
	if b.err != nil {
		return nil
	}
	out := slices.Clone(b.entries[start:])
	b.entries = b.entries[:start]
	return out
}

// service adds a Service of Services() with its IPAddress objects.
func (b *builder) service(namespace, name string) {
	b.entries = append(b.entries, b.serviceEntries(namespace, name)...)
}

// IPAddressKey returns the etcd key of the IPAddress object of ip.
func IPAddressKey(ip string) string { return "/registry/ipaddresses/" + ip }

func ipAddressObject(ip netip.Addr, f Service, created time.Duration) *networkingv1.IPAddress {
	family := string(corev1.IPv4Protocol)
	if ip.Is6() {
		family = string(corev1.IPv6Protocol)
	}
	obj := &networkingv1.IPAddress{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "IPAddress"),
		ObjectMeta: objectMeta("IPAddress", "", ip.String(), created),
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Group: "", Resource: "services", Namespace: f.Namespace, Name: f.Name,
		}},
	}
	obj.Labels = map[string]string{
		networkingv1.LabelIPAddressFamily: family,
		networkingv1.LabelManagedBy:       "ipallocator.k8s.io",
	}
	return obj
}

// serviceCIDR adds the default ServiceCIDR the apiserver creates from its flags.
func (b *builder) serviceCIDR() {
	obj := &networkingv1.ServiceCIDR{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "ServiceCIDR"),
		ObjectMeta: objectMeta("ServiceCIDR", "", "kubernetes", tInit),
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{ServiceCIDR}},
		Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{{
			Type:               networkingv1.ServiceCIDRConditionReady,
			Status:             metav1.ConditionTrue,
			LastTransitionTime: at(tInit + time.Second),
			Message:            "Kubernetes default Service CIDR is ready",
		}}},
	}
	obj.Finalizers = []string{"networking.k8s.io/service-cidr-finalizer"}
	obj.ManagedFields = []metav1.ManagedFieldsEntry{
		managed("kube-apiserver", metav1.ManagedFieldsOperationUpdate, "networking.k8s.io/v1", tInit, "",
			`{"f:spec":{"f:cidrs":{}}}`),
		managed("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "networking.k8s.io/v1", tInit+time.Second, "",
			`{"f:metadata":{"f:finalizers":{".":{},"v:\"networking.k8s.io/service-cidr-finalizer\"":{}}}}`),
		managed("kubernetes-service-cidr-controller", metav1.ManagedFieldsOperationApply, "networking.k8s.io/v1", tInit+time.Second, "status",
			`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`),
	}
	b.add("/registry/servicecidrs/kubernetes", obj)
}

// serviceRanges adds the legacy allocator bitmaps for the Service IPs and NodePorts of Services().
func (b *builder) serviceRanges() {
	cidr := netip.MustParsePrefix(ServiceCIDR)
	var ips []netip.Addr
	var ports []int32
	for _, s := range Services() {
		for _, ip := range s.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil && cidr.Contains(a) {
				ips = append(ips, a)
			}
		}
		ports = append(ports, s.NodePorts...)
	}
	data, err := ServiceIPBitmap(cidr, ips)
	if err != nil {
		b.fail("service IP bitmap: %v", err)
		return
	}
	b.add(ServiceIPRangeKey, &corev1.RangeAllocation{TypeMeta: typeMeta("v1", "RangeAllocation"), Range: ServiceCIDR, Data: data})
	b.add(NodePortRangeKey, &corev1.RangeAllocation{TypeMeta: typeMeta("v1", "RangeAllocation"), Range: NodePortRange,
		Data: NodePortBitmap(NodePortBase, ports)})
}

// The keys of the legacy allocator bitmaps.
const (
	ServiceIPRangeKey = "/registry/ranges/serviceips"
	NodePortRangeKey  = "/registry/ranges/servicenodeports"
)

// endpointTarget is one backend of a Service.
type endpointTarget struct {
	ip       string
	nodeName string
	pod      string // empty for the apiserver itself
}

// endpoints adds the Endpoints and EndpointSlice of a Service with known backends.
func (b *builder) endpoints(namespace, name string) {
	d := serviceDetails()[namespace+"/"+name]
	var targets []endpointTarget
	switch namespace + "/" + name {
	case "default/kubernetes":
		targets = []endpointTarget{{ip: ControlPlaneIP}}
	case "kube-system/kube-dns":
		targets = []endpointTarget{
			{ip: "10.244.0.2", nodeName: "cp1", pod: "coredns-6f6b679f8f-9xk2q"},
			{ip: "10.244.0.3", nodeName: "cp1", pod: "coredns-6f6b679f8f-tw5zn"},
		}
	case "demo/web":
		targets = []endpointTarget{{ip: "10.244.8.5", nodeName: "worker-hw1", pod: "web-5d8f7c9b6-k2x4m"}}
	default:
		b.fail("no endpoints known for %s/%s", namespace, name)
		return
	}
	created := d.created + 30*time.Second
	if name == "kubernetes" {
		created = d.created
	}

	ep := &corev1.Endpoints{TypeMeta: typeMeta("v1", "Endpoints"), ObjectMeta: objectMeta("Endpoints", namespace, name, created)}
	ep.Labels = d.labels
	if name != "kubernetes" {
		ep.Labels = mergeLabels(d.labels, map[string]string{"endpoints.kubernetes.io/managed-by": "endpoint-controller"})
		ep.Annotations = map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": at(created).UTC().Format(time.RFC3339)}
	}
	var subset corev1.EndpointSubset
	for _, t := range targets {
		addr := corev1.EndpointAddress{IP: t.ip}
		if t.pod != "" {
			addr.NodeName = new(t.nodeName)
			addr.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: t.pod, UID: uid("Pod", namespace, t.pod)}
		}
		subset.Addresses = append(subset.Addresses, addr)
	}
	slicePorts := []discoveryv1.EndpointPort{}
	for _, p := range d.ports {
		port := p.TargetPort.IntVal
		subset.Ports = append(subset.Ports, corev1.EndpointPort{Name: p.Name, Port: port, Protocol: p.Protocol})
		slicePorts = append(slicePorts, discoveryv1.EndpointPort{Name: new(p.Name), Port: new(port), Protocol: new(p.Protocol)})
	}
	ep.Subsets = []corev1.EndpointSubset{subset}
	b.add("/registry/services/endpoints/"+namespace+"/"+name, ep)

	// The apiserver writes the kubernetes slice itself, named like the Service and without managed-by.
	sliceName := name
	sliceLabels := map[string]string{discoveryv1.LabelServiceName: name}
	if name != "kubernetes" {
		sliceName = name + "-" + map[string]string{"kube-dns": "h7q2k", "web": "x9v4c"}[name]
		sliceLabels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	}
	es := &discoveryv1.EndpointSlice{
		TypeMeta:    typeMeta("discovery.k8s.io/v1", "EndpointSlice"),
		ObjectMeta:  objectMeta("EndpointSlice", namespace, sliceName, created),
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       slicePorts,
	}
	if name != "kubernetes" {
		es.GenerateName = name + "-"
		es.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name,
			UID: uid("Service", namespace, name), Controller: new(true), BlockOwnerDeletion: new(true)}}
	}
	es.Labels = mergeLabels(d.labels, sliceLabels)
	for _, t := range targets {
		e := discoveryv1.Endpoint{
			Addresses:  []string{t.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
		}
		if t.pod != "" {
			e.NodeName = new(t.nodeName)
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: namespace, Name: t.pod, UID: uid("Pod", namespace, t.pod)}
		}
		es.Endpoints = append(es.Endpoints, e)
	}
	b.add("/registry/endpointslices/"+namespace+"/"+sliceName, es)
}

// mergeLabels returns a new map with the labels of both (b wins).
func mergeLabels(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
