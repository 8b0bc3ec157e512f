//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/snapshift/snapshift/clusterops"
	"github.com/snapshift/snapshift/internal/etcdtest"
	"github.com/snapshift/snapshift/restart"
)

// Scale: the pods per node of Kubernetes' scalability thresholds
// (sig-scalability's configs-and-limits: 30 per node on average).
const scalePodsPerNode = 30

// scalePodRange is the new pod range of the rehearsal: a /24 per node,
// room for 16,384 nodes.
var scalePodRange = netip.MustParsePrefix("10.64.0.0/10")

// BenchmarkClusterCheck: `cluster check` against a real kube-apiserver
// (the newest e2e version, on a real etcd) that holds a large cluster's
// Nodes (SNAPSHIFT_SCALE_NODES, default 1,000), 30 Pods per Node and
// kube-proxy's DaemonSet with a pod on each, every one Ready at its new
// address. Each op runs the checks as the CLI's client does (protobuf, its
// QPS, a page of 500 per list) and reports the seconds of the checks that
// read the cluster (the DNS probe, which needs a kubelet, left out), the
// requests sent, and the peak of the Go heap's live objects during the
// op. The baseline in the same run is one unpaged list of every Pod, as
// the check read them before (issue 48 item 4: at most 60 s and 256 MiB
// at 5,000 nodes). make bench-scale runs it.
func BenchmarkClusterCheck(b *testing.B) {
	nodes := 1000
	if v := os.Getenv("SNAPSHIFT_SCALE_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 16384 {
			b.Fatalf("SNAPSHIFT_SCALE_NODES=%q: give a number of nodes from 1 to 16384", v)
		}
		nodes = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ver := versions()[0]
	bin, dir := binDir(b, ver), b.TempDir()
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		b.Fatal(err)
	}
	etcd := etcdtest.StartT(b)
	pk := newPKI(b, dir)
	api := startAPIServer(ctx, b, bin, etcd, pk, "172.24.0.0/16", logDir)
	defer api.stop()
	start := time.Now()
	populateScale(ctx, b, api.config, nodes)
	b.Logf("%d Nodes, %d Pods and kube-proxy's %d pods created and Ready in %s", nodes, nodes*scalePodsPerNode, nodes, time.Since(start).Round(time.Second))

	var requests atomic.Int64
	cfg := rest.CopyConfig(api.config)
	clusterops.TuneClient(cfg) // as the CLI's client
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) { requests.Add(1); return rt.RoundTrip(r) })
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	in := &restart.Input{Created: start.Add(-time.Hour),
		Service: restart.Ranges{Old: []string{"192.168.0.0/16"}, New: []string{"172.24.0.0/16"}},
		Pod:     restart.Ranges{Old: []string{"10.244.0.0/16"}, New: []string{scalePodRange.String()}},
		Workloads: []restart.Workload{{Kind: "DaemonSet", Namespace: "kube-system", Name: "kube-proxy", Selector: "k8s-app=kube-proxy",
			Role: restart.RoleKubeProxy}}}

	// The baseline: every Pod in one response.
	var listSecs float64
	listPeak := peakHeap(func() {
		t0 := time.Now()
		l, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		listSecs = time.Since(t0).Seconds()
		runtime.KeepAlive(l)
	})

	// Rounds of their own, whatever b.N (run it with -benchtime 1x: the
	// cluster is built once per call): the median of three.
	b.ResetTimer()
	var secs []float64
	var peak uint64
	requests.Store(0)
	const rounds = 3
	for range rounds {
		var res []clusterops.CheckResult
		p := peakHeap(func() {
			var err error
			res, err = clusterops.Check(ctx, clusterops.Config{Client: client, Input: in, Timeout: 2 * time.Second, Poll: 100 * time.Millisecond}, clusterops.CheckConfig{})
			if err != nil {
				b.Fatal(err)
			}
		})
		peak = max(peak, p)
		sum := 0.0
		for _, r := range res {
			switch r.Name {
			case "dns-lookup", "dns-service", "kubernetes-service":
				continue // no kubelet runs the probe; the Services are not this rehearsal's
			}
			if !r.OK {
				b.Errorf("%s: %s", r.Name, r.Detail)
			}
			sum += r.Seconds
		}
		secs = append(secs, sum)
	}
	b.StopTimer()
	slices.Sort(secs)
	n := float64(rounds)
	b.ReportMetric(secs[rounds/2], "check-s/op")
	b.ReportMetric(float64(requests.Load())/n, "requests/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(listSecs, "unpaged-list-s")
	b.ReportMetric(float64(listPeak)/(1<<20), "unpaged-list-peak-heap-MiB")
	b.ReportMetric(float64(peak)/float64(listPeak), "heap-ratio")

	// The window at this size: the snapshot, snapshift's one pass and
	// restore moving the service range (restore with a rule flag, as
	// rebuild runs it), and the apiserver on the restored member until
	// /readyz, then one round of the checks (every client's first relist).
	snap := filepath.Join(dir, "scale.db")
	t0 := time.Now()
	if err := etcd.SaveSnapshot(ctx, snap); err != nil {
		b.Fatal(err)
	}
	saveSecs := time.Since(t0).Seconds()
	fi, err := os.Stat(snap)
	if err != nil {
		b.Fatal(err)
	}
	api.stop()
	port, err := etcdtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	peerURL, dataDir := fmt.Sprintf("http://127.0.0.1:%d", port), filepath.Join(dir, "restored")
	t0 = time.Now()
	run(b, "restore", snap, "--name", "scale", "--data-dir", dataDir, "--initial-cluster", "scale="+peerURL, "--service-cidr", "172.25.0.0/16", "--quiet")
	restoreSecs := time.Since(t0).Seconds()
	etcd2 := etcdtest.StartRestoredT(b, etcdtest.RestoredConfig{DataDir: dataDir, Name: "scale", PeerURL: peerURL})
	t0 = time.Now()
	logDir2 := filepath.Join(dir, "logs-restored")
	if err := os.MkdirAll(logDir2, 0o755); err != nil {
		b.Fatal(err)
	}
	api2 := startAPIServer(ctx, b, bin, etcd2, pk, "172.25.0.0/16", logDir2)
	defer api2.stop()
	readySecs := time.Since(t0).Seconds()
	in.Service.Old, in.Service.New = []string{"172.24.0.0/16"}, []string{"172.25.0.0/16"}
	after := rest.CopyConfig(api2.config)
	clusterops.TuneClient(after)
	res, err := clusterops.Check(ctx, clusterops.Config{Client: kubernetes.NewForConfigOrDie(after), Input: in, Timeout: 2 * time.Second, Poll: 100 * time.Millisecond}, clusterops.CheckConfig{})
	if err != nil {
		b.Fatal(err)
	}
	firstSecs := 0.0
	for _, r := range res {
		if r.Name == "nodes" || r.Name == "pods" || r.Name == "cni-pods" {
			firstSecs += r.Seconds
			if !r.OK {
				b.Errorf("after the restore, %s: %s", r.Name, r.Detail)
			}
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "snapshot-MiB")
	b.ReportMetric(saveSecs, "snapshot-s")
	b.ReportMetric(restoreSecs, "migrate-restore-s")
	b.ReportMetric(readySecs, "apiserver-ready-s")
	b.ReportMetric(firstSecs, "first-check-s")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// peakHeap runs fn and returns the largest live heap (the Go heap's
// object bytes, sampled every 5 ms) seen while it ran, from a collected
// heap at its start.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	sample := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { rtmetrics.Read(sample); return sample[0].Value.Uint64() }
	var peak atomic.Uint64
	peak.Store(read())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if v := read(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	return max(peak.Load(), read())
}

// populateScale creates nodes Ready Nodes with a /24 each of
// scalePodRange, scalePodsPerNode Ready Pods on each at addresses of its
// /24, and kube-proxy's DaemonSet (status: every pod scheduled, updated and
// available) with a host-network pod on each Node, through 32 clients at
// once, with no rate limit of the client's.
func populateScale(ctx context.Context, b *testing.B, base *rest.Config, nodes int) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the apiserver's own
	cfg.ContentType = k8sruntime.ContentTypeProtobuf
	c := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range []string{"scale", "kube-system"} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && ns != "kube-system" {
			b.Fatal(err)
		}
		// kube-controller-manager, which is not running, would make it
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	proxy := map[string]string{"k8s-app": "kube-proxy"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-proxy", Labels: proxy},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: proxy},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: proxy}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:v1.36.3"}}}}}}
	ds, err := c.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := int32(nodes)
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: n, CurrentNumberScheduled: n, UpdatedNumberScheduled: n, NumberReady: n, NumberAvailable: n}
	if _, err := c.AppsV1().DaemonSets("kube-system").UpdateStatus(ctx, ds, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}

	type job struct {
		node int
		pod  int // -1: the Node; 0..scalePodsPerNode-1: a pod; scalePodsPerNode: kube-proxy's
	}
	jobs := make(chan job, 1024)
	var wg sync.WaitGroup
	var first atomic.Value
	fail := func(err error) {
		first.CompareAndSwap(nil, err)
	}
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for range 32 {
		wg.Go(func() {
			for j := range jobs {
				if first.Load() != nil {
					continue
				}
				block := scalePodRange.Addr().As4()
				block[1] += byte(j.node >> 8)
				block[2] = byte(j.node)
				name := fmt.Sprintf("node-%05d", j.node)
				if j.pod < 0 {
					cidr := netip.PrefixFrom(netip.AddrFrom4(block), 24).String()
					nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}}}
					nd, err := c.CoreV1().Nodes().Create(ctx, nd, metav1.CreateOptions{})
					if err != nil {
						fail(err)
						continue
					}
					nd.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
					if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, nd, metav1.UpdateOptions{}); err != nil {
						fail(err)
					}
					continue
				}
				p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
				block[3] = byte(1 + j.pod)
				ip := netip.AddrFrom4(block).String()
				if j.pod == scalePodsPerNode {
					p.Namespace, p.Name, p.Labels, p.Spec.HostNetwork = "kube-system", "kube-proxy-"+name, proxy, true
					ip = fmt.Sprintf("10.1.%d.%d", j.node>>8, j.node&0xff) // the node's own address
				} else {
					p.Namespace, p.Name = "scale", fmt.Sprintf("app-%05d-%02d", j.node, j.pod)
				}
				p, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					fail(err)
					continue
				}
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, Conditions: ready}
				if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					fail(err)
				}
			}
		})
	}
	for i := range nodes {
		for p := -1; p <= scalePodsPerNode; p++ {
			jobs <- job{i, p}
		}
	}
	close(jobs)
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		b.Fatal(err)
	}
}
