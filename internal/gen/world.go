package gen

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/snapshift/snapshift/codec"
	"github.com/snapshift/snapshift/internal/sample"
)

// world is the fixed part of a generated cluster, decided before the first bulk key is written
// and read-only afterwards (shared by the encoding goroutines).
type world struct {
	seed  int64
	total int64 // Config.Keys, to spread creation times
	codec *codec.Codec

	namespaces []string
	apps       [][]*appSpec // per namespace
	nodes      []nodeInfo
	podNodes   []int32 // nodes that run workload Pods
	largePods  bool    // ProfileServices: Pods carry a few KiB of annotations
}

type nodeInfo struct {
	name    string
	cidr    netip.Prefix
	ip      netip.Addr
	created time.Duration
	sample  bool
}

// appSpec is one Deployment's Pod template: its Pods share everything here.
type appSpec struct {
	ns, name, rsHash string
	labels           map[string]string
	containers       []corev1.Container
	kcmFields        []byte // managedFields of kube-controller-manager for its Pods
	ports            []corev1.ServicePort
	sa               string
	rsUID            types.UID // the ReplicaSet owning its Pods
}

const appsPerNamespace = 8

// initTime is internal/sample's `kubeadm init` time; bulk objects come after the sample's apps.
var initTime = time.Date(2025, time.September, 15, 9, 0, 0, 0, time.UTC)

const (
	bulkStart = 2 * time.Hour
	bulkSpan  = 70 * time.Hour
)

// createdAt is when bulk object idx was created.
func (w *world) createdAt(idx int64) time.Time {
	return initTime.Add(bulkStart + time.Duration(float64(bulkSpan)*float64(idx)/float64(max(w.total, 1))))
}

func newWorld(seed int64, keys int64, nodes int, c *codec.Codec) (*world, error) {
	w := &world{seed: seed, total: keys, codec: c}
	nns := int(max(4, keys/2500))
	for i := 0; i < nns; i++ {
		w.namespaces = append(w.namespaces, fmt.Sprintf("team-%s-%d", teamWords[i%len(teamWords)], i/len(teamWords)))
	}
	for i, ns := range w.namespaces {
		var apps []*appSpec
		for a := 0; a < appsPerNamespace; a++ {
			apps = append(apps, newApp(newRNG(seed, 1, uint64(i), uint64(a)), ns, a))
		}
		w.apps = append(w.apps, apps)
	}

	// Nodes: the sample's, then one per thousand keys with CIDRs around them.
	alloc, err := newPodCIDRAllocator(netip.MustParsePrefix(sample.PodCIDR))
	if err != nil {
		return nil, err
	}
	for _, n := range sample.Nodes() {
		p := netip.MustParsePrefix(n.PodCIDR)
		if err := alloc.reserve(p); err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, nodeInfo{name: n.Name, cidr: p, ip: netip.MustParseAddr(n.InternalIP), sample: true})
		if !n.Fake && n.Name != "cp1" {
			w.podNodes = append(w.podNodes, int32(len(w.nodes)-1))
		}
	}
	nn := int(max(2, keys/1000))
	if nodes > 0 {
		nn = nodes
	}
	for j := 0; j < nn; j++ {
		p, err := alloc.next(j, nn-j-1)
		if err != nil {
			return nil, err
		}
		u := uint32(0x0a010000) + uint32(j) + 10 // hosts in 10.1.0.0/16, outside both networks
		ip := netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
		w.nodes = append(w.nodes, nodeInfo{name: fmt.Sprintf("worker-%04d", j), cidr: p, ip: ip,
			created: bulkStart - 30*time.Minute + time.Duration(j)*time.Second})
		w.podNodes = append(w.podNodes, int32(len(w.nodes)-1))
	}
	return w, nil
}

var (
	// Quantities are shared by every Pod of an app; String() fills their cache up front so
	// concurrent encoders only ever read them.
	cpuSteps = []string{"50m", "100m", "250m", "500m", "1", "2"}
	memSteps = []string{"64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
)

func quantity(s string) resource.Quantity {
	q := resource.MustParse(s)
	_ = q.String()
	return q
}

func newApp(r *rng, ns string, a int) *appSpec {
	name := appWords[r.intn(len(appWords))] + "-" + appWords[r.intn(len(appWords))]
	if a > 0 {
		name += fmt.Sprintf("-%d", a)
	}
	app := &appSpec{ns: ns, name: name, rsHash: r.alnum(9) + "b", sa: name, rsUID: uidFor(r.u64())}
	app.labels = map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name + "-" + ns,
		"app.kubernetes.io/part-of": strings.TrimPrefix(ns, "team-"), "pod-template-hash": app.rsHash}
	nc := 1
	switch x := r.intn(20); {
	case x >= 19:
		nc = 3
	case x >= 14:
		nc = 2
	}
	envN := r.between(1, 10)
	if r.chance(50) {
		envN = r.between(14, 36)
	}
	type set = fieldSet
	leaf, item := leafSet, fieldItem
	probe := set{".": leaf, "f:failureThreshold": leaf, "f:httpGet": item("path", "port", "scheme"), "f:initialDelaySeconds": leaf,
		"f:periodSeconds": leaf, "f:successThreshold": leaf, "f:timeoutSeconds": leaf}
	containers := set{}
	for c := 0; c < nc; c++ {
		cname := name
		if c > 0 {
			cname = []string{"sidecar", "proxy", "log-shipper"}[c-1]
		}
		image := fmt.Sprintf("%s/%s:%d.%d.%d", r.pick(imageRegistries), cname, r.between(1, 4), r.intn(30), r.intn(20))
		cont := corev1.Container{
			Name:                     cname,
			Image:                    image,
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: quantity(r.pick(cpuSteps)), corev1.ResourceMemory: quantity(r.pick(memSteps))},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: quantity(r.pick(memSteps[2:]))},
			},
		}
		cf := set{".": leaf, "f:image": leaf, "f:imagePullPolicy": leaf, "f:name": leaf, "f:terminationMessagePath": leaf,
			"f:terminationMessagePolicy": leaf, "f:resources": set{".": leaf, "f:limits": item("memory"), "f:requests": item("cpu", "memory")}}
		n := envN
		if c > 0 {
			n = (envN + 2) / 3
		}
		env := set{".": leaf}
		for e := 0; e < n; e++ {
			en := envNames[(a*7+e)%len(envNames)] // distinct: n < len(envNames)
			cont.Env = append(cont.Env, corev1.EnvVar{Name: en, Value: envValue(r, en, ns)})
			env[`k:{"name":"`+en+`"}`] = item("name", "value")
		}
		cf["f:env"] = env
		if c == 0 {
			app.mainContainer(r, &cont, cf, probe)
		}
		containers[`k:{"name":"`+cname+`"}`] = cf
		app.containers = append(app.containers, cont)
	}
	fields := set{
		"f:metadata": set{"f:generateName": leaf, "f:labels": item("app.kubernetes.io/instance", "app.kubernetes.io/name", "app.kubernetes.io/part-of", "pod-template-hash"),
			"f:ownerReferences": set{".": leaf, `k:{"uid":"` + string(app.rsUID) + `"}`: leaf}},
		"f:spec": set{"f:containers": containers, "f:dnsPolicy": leaf, "f:enableServiceLinks": leaf, "f:restartPolicy": leaf, "f:schedulerName": leaf,
			"f:securityContext": leaf, "f:serviceAccount": leaf, "f:serviceAccountName": leaf, "f:terminationGracePeriodSeconds": leaf,
			"f:volumes": set{".": leaf, `k:{"name":"config"}`: set{".": leaf, "f:configMap": item("defaultMode", "name"), "f:name": leaf}}},
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	app.kcmFields = raw
	return app
}

// kube-controller-manager's managedFields: a field set, serialized as
// structured-merge-diff does (keys sorted, "." first).
type fieldSet = map[string]any

// leafSet is a field set's leaf; fieldItem a set of the given leaf fields.
var leafSet = fieldSet{}

func fieldItem(fields ...string) fieldSet {
	s := fieldSet{".": leafSet}
	for _, f := range fields {
		s["f:"+f] = leafSet
	}
	return s
}

// mainContainer gives an app's first container its ports, probes and
// config mount (and their managed fields cf), and the app its Service
// ports.
func (app *appSpec) mainContainer(r *rng, cont *corev1.Container, cf, probe fieldSet) {
	type set = fieldSet
	leaf, item, name := leafSet, fieldItem, app.name
	cont.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz",
		Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
		InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	cont.ReadinessProbe, cont.LivenessProbe = p, p
	cont.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name, ReadOnly: true}}
	app.ports = []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")}}
	if r.chance(400) {
		app.ports = append(app.ports, corev1.ServicePort{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)})
	}
	cf["f:livenessProbe"], cf["f:readinessProbe"] = probe, probe
	cf["f:ports"] = set{".": leaf, `k:{"containerPort":8080,"protocol":"TCP"}`: item("containerPort", "name", "protocol"),
		`k:{"containerPort":9090,"protocol":"TCP"}`: item("containerPort", "name", "protocol")}
	cf["f:volumeMounts"] = set{".": leaf, `k:{"mountPath":"/etc/` + name + `"}`: item("mountPath", "name", "readOnly")}
}

func envValue(r *rng, name, ns string) string {
	switch {
	case strings.HasSuffix(name, "_PORT"):
		return fmt.Sprint(r.between(1024, 9999))
	case strings.HasSuffix(name, "_URL"), strings.HasSuffix(name, "ENDPOINT"), strings.HasSuffix(name, "BROKERS"):
		return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d/%s", r.pick(appWords), ns, r.between(1024, 9999), r.pick(textWords))
	case strings.HasSuffix(name, "_ENABLED"):
		return []string{"true", "false"}[r.intn(2)]
	case name == "JAVA_OPTS":
		return "-XX:MaxRAMPercentage=75.0 -XX:+UseG1GC -Dfile.encoding=UTF-8 -Duser.timezone=UTC"
	case name == "SENTRY_DSN":
		return "https://" + r.hex(32) + "@sentry.example.com/" + fmt.Sprint(r.between(1, 400))
	}
	return r.pick(textWords) + "-" + r.pick(textWords) + "-" + fmt.Sprint(r.intn(1000))
}
