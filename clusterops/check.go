package clusterops

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snapshift/snapshift/restart"
)

// CheckConfig are the check's own options.
type CheckConfig struct {
	// ProbeImage runs the DNS probe pod (nslookup). Default busybox:1.36.
	ProbeImage string
	// ProbeNamespace is where the probe pod runs. Default "default".
	ProbeNamespace string
	// ClusterDomain is the cluster's DNS domain. Default cluster.local.
	ClusterDomain string
	// Etcd, when set, adds the etcd-identity check.
	Etcd *EtcdCheck
}

// CheckResult is one check.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Read says what to read when it failed.
	Read string `json:"read,omitempty"`
	// Seconds is the check's time (the DNS probe's includes its pod's
	// start).
	Seconds float64 `json:"seconds"`
}

// Check runs every check of the cluster after its restart. Failed checks
// are results, not errors; the error is for what stops the checks (the
// API unreachable).
func Check(ctx context.Context, cfg Config, cc CheckConfig) ([]CheckResult, error) {
	cfg.defaults()
	if cc.ProbeImage == "" {
		cc.ProbeImage = "busybox:1.36"
	}
	if cc.ProbeNamespace == "" {
		cc.ProbeNamespace = "default"
	}
	if cc.ClusterDomain == "" {
		cc.ClusterDomain = "cluster.local"
	}
	if _, err := cfg.Client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("the API server does not answer: %w", err)
	}
	var err error
	if cfg.down, err = downNodes(ctx, &cfg); err != nil {
		return nil, err
	}
	checks := []func() CheckResult{
		func() CheckResult { return checkNodes(ctx, &cfg) },
		func() CheckResult { return checkPods(ctx, &cfg) },
		func() CheckResult { return checkKubernetesService(ctx, &cfg) },
		func() CheckResult { return checkDNSService(ctx, &cfg) },
		func() CheckResult { return checkDNSProbe(ctx, &cfg, cc) },
		func() CheckResult { return checkEvents(ctx, &cfg) },
		func() CheckResult { return checkInstallerRanges(ctx, &cfg) },
	}
	if cc.Etcd != nil {
		checks = append(checks, func() CheckResult { return checkEtcdIdentity(ctx, cc.Etcd) })
	}
	checks = append(checks,
		func() CheckResult {
			return checkRolePods(ctx, &cfg, "cni-pods", func(r string) bool { return restart.StageOf(r) <= restart.StageKubeProxy && r != "" })
		},
		func() CheckResult {
			return checkRolePods(ctx, &cfg, "dns-pods", func(r string) bool { return r == restart.RoleClusterDNS || r == restart.RoleNodeLocalDNS })
		})
	out := make([]CheckResult, 0, len(checks))
	for _, check := range checks {
		start := cfg.Now()
		r := check()
		r.Seconds = secs(cfg.Now().Sub(start))
		out = append(out, r)
	}
	return out, nil
}

func fail(name, read, format string, args ...any) CheckResult {
	return CheckResult{Name: name, Detail: fmt.Sprintf(format, args...), Read: read}
}

func pass(name, format string, args ...any) CheckResult {
	return CheckResult{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)}
}

// checkNodes: every Node Ready, its podCIDRs inside the new pod range.
func checkNodes(ctx context.Context, cfg *Config) CheckResult {
	const name, read = "nodes", "kubectl describe node NAME; on that node: journalctl -u kubelet"
	newRanges := parsePrefixes(cfg.Input.Pod.New)
	var notReady, outside []string
	up := 0
	err := eachNode(ctx, cfg.Client, func(n *corev1.Node) {
		if cfg.down[n.Name] {
			return
		}
		up++
		if !nodeReady(n) {
			notReady = append(notReady, n.Name)
		}
		for _, c := range n.Spec.PodCIDRs {
			if len(newRanges) > 0 && !prefixInside(c, newRanges) {
				outside = append(outside, n.Name+" "+c)
			}
		}
	})
	if err != nil {
		return fail(name, read, "listing Nodes: %v", err)
	}
	var probs []string
	if len(notReady) > 0 {
		probs = append(probs, fmt.Sprintf("%d of %d Nodes not Ready (%s)", len(notReady), up, capNames(notReady)))
	}
	if len(outside) > 0 {
		probs = append(probs, fmt.Sprintf("podCIDR outside %s: %s", strings.Join(cfg.Input.Pod.New, ","), capNames(outside)))
	}
	if len(probs) > 0 {
		return fail(name, read, "%s", strings.Join(probs, "; "))
	}
	downs := ""
	if len(cfg.Down) > 0 {
		downs = fmt.Sprintf(" (down, not checked: %s)", strings.Join(cfg.Down, ", "))
	}
	if len(newRanges) == 0 {
		return pass(name, "%d Nodes Ready (the pod range did not move)%s", up, downs)
	}
	return pass(name, "%d Nodes Ready, every podCIDR inside %s%s", up, strings.Join(cfg.Input.Pod.New, ","), downs)
}

// checkPods: every pod not on the host network has an address in the new
// pod range.
func checkPods(ctx context.Context, cfg *Config) CheckResult {
	const name, read = "pods", "kubectl get pods -A -o wide; snapshift cluster restart (it deletes the pods no controller restarts)"
	newRanges := parsePrefixes(cfg.Input.Pod.New)
	if len(newRanges) == 0 {
		return pass(name, "the pod range did not move")
	}
	var old []string
	on, waiting, leaving := 0, 0, 0
	err := eachPod(ctx, cfg.Client, "", metav1.ListOptions{}, func(p *corev1.Pod) {
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || cfg.down[p.Spec.NodeName] {
			return
		}
		if p.DeletionTimestamp != nil {
			// Terminating: the restart replaced it, and a slow kubelet is
			// still stopping it (the lab saw one under load). It serves
			// nothing new; the workload checks leave it out too.
			leaving++
			return
		}
		if p.Status.PodIP == "" {
			waiting++
			return
		}
		if inAny(p.Status.PodIP, newRanges) {
			on++
		} else {
			old = append(old, p.Namespace+"/"+p.Name+" "+p.Status.PodIP)
		}
	})
	if err != nil {
		return fail(name, read, "listing pods: %v", err)
	}
	if len(old) > 0 {
		return fail(name, read, "%d pods outside %s: %s", len(old), strings.Join(cfg.Input.Pod.New, ","), capNames(old))
	}
	terminating := ""
	if leaving > 0 {
		terminating = fmt.Sprintf(", %d terminating, not counted", leaving)
	}
	return pass(name, "%d pods in %s (%d without an address yet%s)", on, strings.Join(cfg.Input.Pod.New, ","), waiting, terminating)
}

// checkKubernetesService: default/kubernetes at the new range's first
// address.
func checkKubernetesService(ctx context.Context, cfg *Config) CheckResult {
	const name, read = "kubernetes-service", "kubectl get svc kubernetes -o yaml; kube-apiserver's --service-cluster-ip-range"
	s, err := cfg.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return fail(name, read, "reading default/kubernetes: %v", err)
	}
	ranges := parsePrefixes(cfg.Input.Service.New)
	if len(ranges) == 0 {
		return pass(name, "default/kubernetes at %s (the service range did not move)", s.Spec.ClusterIP)
	}
	want := ranges[0].Masked().Addr().Next().String()
	if s.Spec.ClusterIP != want {
		return fail(name, read, "default/kubernetes at %s, want %s (the first address of %s)", s.Spec.ClusterIP, want, ranges[0])
	}
	return pass(name, "default/kubernetes at %s, the first address of %s", want, ranges[0])
}

// dnsWant is the cluster DNS Service and the address it must end at.
func dnsWant(in *restart.Input) (ns, svc, addr string) {
	if in.DNS == nil {
		return "", "", ""
	}
	ns, svc, _ = strings.Cut(in.DNS.Service, "/")
	addr = in.DNS.Address
	if in.DNS.BridgeAddress != "" {
		addr = in.DNS.BridgeAddress
	}
	return ns, svc, addr
}

// checkDNSService: the DNS Service at the kubelets' clusterDNS (after the
// handover, the bridge's address), the bridge gone.
func checkDNSService(ctx context.Context, cfg *Config) CheckResult {
	const name, read = "dns-service", "kubectl -n kube-system get svc -o wide; snapshift cluster restart (its DNS stage)"
	ns, svc, want := dnsWant(cfg.Input)
	if svc == "" {
		return pass(name, "the bundle names no cluster DNS Service")
	}
	s, err := cfg.Client.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return fail(name, read, "reading %s/%s: %v", ns, svc, err)
	}
	if want != "" && s.Spec.ClusterIP != want {
		return fail(name, read, "%s/%s at %s, want %s (the kubelets' clusterDNS)", ns, svc, s.Spec.ClusterIP, want)
	}
	if b := cfg.Input.DNS.Bridge; b != "" {
		bns, bname, _ := strings.Cut(b, "/")
		if _, err := cfg.Client.CoreV1().Services(bns).Get(ctx, bname, metav1.GetOptions{}); err == nil {
			return fail(name, read, "the bridge %s is still there", b)
		}
	}
	return pass(name, "%s/%s at %s", ns, svc, s.Spec.ClusterIP)
}

// checkDNSProbe: from a short-lived pod, the cluster DNS answers
// kubernetes.default with its address.
func checkDNSProbe(ctx context.Context, cfg *Config, cc CheckConfig) CheckResult {
	const name = "dns-lookup"
	read := fmt.Sprintf("kubectl -n %s describe pod -l app.kubernetes.io/name=snapshift-dns-probe; kubectl -n kube-system logs -l k8s-app=kube-dns", cc.ProbeNamespace)
	svc, err := cfg.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return fail(name, read, "reading default/kubernetes: %v", err)
	}
	host := "kubernetes.default.svc." + cc.ClusterDomain
	pods := cfg.Client.CoreV1().Pods(cc.ProbeNamespace)
	deadline := int64(cfg.Timeout.Seconds()) + 30
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "snapshift-dns-probe-", Labels: map[string]string{"app.kubernetes.io/name": "snapshift-dns-probe"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, ActiveDeadlineSeconds: &deadline,
			Containers: []corev1.Container{{Name: "nslookup", Image: cc.ProbeImage, Command: []string{"nslookup", host}}}},
	}
	pod, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fail(name, read, "creating the probe pod: %v", err)
	}
	defer func() {
		zero := int64(0)
		pods.Delete(context.WithoutCancel(ctx), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}) //nolint:errcheck // best effort; labelled for by-hand cleanup
	}()
	wctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	phase, why := corev1.PodPending, ""
	for phase != corev1.PodSucceeded && phase != corev1.PodFailed {
		select {
		case <-wctx.Done():
			return fail(name, read, "the probe pod %s did not finish within %s (phase %s%s)", pod.Name, cfg.Timeout, phase, why)
		case <-time.After(cfg.Poll):
		}
		p, err := pods.Get(wctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		phase, why = p.Status.Phase, podWhy(p)
	}
	logs, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fail(name, read, "reading the probe pod's log: %v", err)
	}
	if phase != corev1.PodSucceeded || !strings.Contains(string(logs), svc.Spec.ClusterIP) {
		return fail(name, read, "nslookup %s (%s) did not answer %s: %s", host, phase, svc.Spec.ClusterIP, strings.Join(strings.Fields(string(logs)), " "))
	}
	return pass(name, "nslookup %s from pod %s answered %s", host, pod.Name, svc.Spec.ClusterIP)
}

func podWhy(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return ": " + c.Message
		}
	}
	return ""
}

// checkEvents: no ClusterIPOutOfRange or ClusterIPNotAllocated event since
// the bundle was made (the service IP repair loop's complaints).
func checkEvents(ctx context.Context, cfg *Config) CheckResult {
	const name, read = "service-ip-events", "kubectl get events -A --field-selector reason=ClusterIPOutOfRange (and reason=ClusterIPNotAllocated)"
	var found []string
	for _, reason := range []string{"ClusterIPOutOfRange", "ClusterIPNotAllocated"} {
		err := eachEvent(ctx, cfg.Client, metav1.ListOptions{FieldSelector: "reason=" + reason}, func(e *corev1.Event) {
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			if !at.Before(cfg.Input.Created) {
				found = append(found, fmt.Sprintf("%s %s/%s: %s", reason, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Message))
			}
		})
		if err != nil {
			return fail(name, read, "listing events: %v", err)
		}
	}
	if len(found) > 0 {
		return fail(name, read, "%d events: %s", len(found), capNames(found))
	}
	return pass(name, "no ClusterIPOutOfRange or ClusterIPNotAllocated event since the bundle was made")
}

// checkRolePods: the pods of the bundle's workloads with these roles are
// all Ready, and there are as many as their controller wants (a
// Deployment's or StatefulSet's replicas, a DaemonSet's desired number
// scheduled): a pod just deleted and not yet replaced does not count, and
// neither does one being deleted.
func checkRolePods(ctx context.Context, cfg *Config, name string, want func(role string) bool) CheckResult {
	read := "kubectl get pods -A -o wide -l SELECTOR; kubectl describe pod; kubectl logs"
	var bad, seen []string
	ready, total := 0, 0
	for _, w := range cfg.Input.Workloads {
		if !want(w.Role) || w.Selector == "" {
			continue
		}
		seen = append(seen, w.Namespace+"/"+w.Ref())
		desired, err := desiredPods(ctx, cfg, w)
		if err != nil {
			return fail(name, read, "reading %s/%s: %v", w.Namespace, w.Ref(), err)
		}
		n, live := 0, 0
		onDown := map[string]bool{}
		err = eachPod(ctx, cfg.Client, w.Namespace, metav1.ListOptions{LabelSelector: w.Selector}, func(p *corev1.Pod) {
			if cfg.down[p.Spec.NodeName] {
				onDown[p.Spec.NodeName] = true
				return
			}
			if p.DeletionTimestamp != nil {
				return
			}
			live++
			if podReady(p) {
				n++
			}
		})
		if err != nil {
			return fail(name, read, "listing pods of %s/%s: %v", w.Namespace, w.Ref(), err)
		}
		if w.Kind == "DaemonSet" {
			desired = max(0, desired-len(onDown)) // its pod there waits for the node
		}
		total += desired
		ready += min(n, desired)
		if desired == 0 || n < desired || n < live {
			msg := fmt.Sprintf("%s/%s %d/%d Ready", w.Namespace, w.Ref(), n, desired)
			if live != desired {
				msg += fmt.Sprintf(" (%d pods)", live)
			}
			bad = append(bad, msg)
		}
	}
	if len(seen) == 0 {
		return pass(name, "the bundle names no such workload")
	}
	if len(bad) > 0 {
		return fail(name, strings.Replace(read, "SELECTOR", "<its selector>", 1), "%s", capNames(bad))
	}
	return pass(name, "%d of %d pods Ready (%s)", ready, total, strings.Join(seen, ", "))
}

// desiredPods is how many pods w's controller wants: its replicas, or for
// a DaemonSet the number of nodes it should run on.
func desiredPods(ctx context.Context, cfg *Config, w restart.Workload) (int, error) {
	apps := cfg.Client.AppsV1()
	switch w.Kind {
	case "DaemonSet":
		ds, err := apps.DaemonSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return int(ds.Status.DesiredNumberScheduled), nil
	case "StatefulSet":
		ss, err := apps.StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return replicas(ss.Spec.Replicas), nil
	}
	d, err := apps.Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return replicas(d.Spec.Replicas), nil
}

// replicas is spec.replicas, 1 when unset (the API's default).
func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// prefixInside says whether CIDR text c lies inside one of the ranges.
func prefixInside(c string, ranges []netip.Prefix) bool {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		return false
	}
	for _, r := range ranges {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func capNames(ss []string) string {
	if len(ss) <= 10 {
		return strings.Join(ss, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(ss[:10], ", "), len(ss)-10)
}
