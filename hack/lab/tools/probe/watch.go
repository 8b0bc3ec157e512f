package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sample is one probe's result at one tick, one JSON line of a watch file.
type Sample struct {
	T      int64  `json:"t"` // Unix milliseconds
	Node   string `json:"node"`
	Pod    string `json:"pod,omitempty"`
	Probe  string `json:"probe"`
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	MS     int64  `json:"ms"`
	Answer string `json:"answer,omitempty"`
	Err    string `json:"err,omitempty"`
}

// watch probes every -every until SIGTERM, appending one line per probe
// and tick to DIR/<node>-<pod>.jsonl (issue 48: the window's outages, seen
// from inside a pod on each node and from the operator's machine):
//
//	-readyz URL      kube-apiserver's /readyz (the certificate is not checked: the CA may change)
//	-dns NAME        NAME's A records from the pod's resolver; the answer is kept
//	-vip PORT        HTTP to the address -dns last answered, on PORT (a Service's VIP)
//	-nodeport LIST   HTTP to each ADDR:PORT of LIST that is not this node's (HOST_IP)
//	-peers NAME      HTTP to each address of headless Service NAME but this pod's (POD_IP), port -serve
//	-serve PORT      answer HTTP on PORT (what the peers probe)
func watch(args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	dir := fs.String("dir", "/probes", "where the watch file goes")
	every := fs.Duration("every", 500*time.Millisecond, "how often")
	w := &watcher{}
	fs.StringVar(&w.readyz, "readyz", "", "kube-apiserver /readyz URL")
	fs.StringVar(&w.dnsName, "dns", "", "a Service's DNS name")
	fs.StringVar(&w.vipPort, "vip", "", "the Service's port, for HTTP to its VIP")
	nodePorts := fs.String("nodeport", "", "ADDR:PORT,... of the NodePort")
	fs.StringVar(&w.peers, "peers", "", "a headless Service naming the probing pods")
	fs.StringVar(&w.serve, "serve", "", "port to answer HTTP on")
	fs.StringVar(&w.node, "node", os.Getenv("NODE_NAME"), "the node's name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if w.node == "" {
		w.node = "operator"
	}
	w.pod, w.podIP, w.hostIP = os.Getenv("POD_NAME"), os.Getenv("POD_IP"), os.Getenv("HOST_IP")
	w.nodePorts = strings.Split(*nodePorts, ",")
	if w.serve != "" {
		go http.ListenAndServe(":"+w.serve, http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintf(rw, "%s %s\n", w.pod, w.podIP) }))
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	name := w.node
	if w.pod != "" {
		name += "-" + w.pod
	}
	f, err := os.OpenFile(filepath.Join(*dir, name+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	out := bufio.NewWriter(f)
	enc := json.NewEncoder(out)
	w.timeout = *every * 4 / 5
	w.client = &http.Client{Timeout: w.timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	w.resolver = resolverOf()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return out.Flush()
		case <-tick.C:
		}
		for _, s := range w.tick(n) {
			enc.Encode(s)
		}
		out.Flush()
	}
}

// watcher is what watch probes, and what it learnt (the VIP DNS answered,
// the peers' addresses).
type watcher struct {
	readyz, dnsName, vipPort, peers, serve string
	nodePorts                              []string
	node, pod, podIP, hostIP               string
	timeout                                time.Duration
	client                                 *http.Client
	resolver                               *net.Resolver

	mu      sync.Mutex
	lastVIP string
	peerIPs []string
	out     []Sample
	now     time.Time
}

// tick runs every probe once, at once, and returns their samples.
func (w *watcher) tick(n int) []Sample {
	w.now, w.out = time.Now(), nil
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	w.mu.Lock()
	vip, ips := w.lastVIP, slices.Clone(w.peerIPs)
	w.mu.Unlock()
	if w.readyz != "" {
		run(func() { w.get(ctx, "readyz", w.readyz) })
	}
	if w.dnsName != "" {
		run(func() { w.lookup(ctx) })
	}
	if w.vipPort != "" && vip != "" {
		run(func() { w.get(ctx, "vip", "http://"+net.JoinHostPort(vip, w.vipPort)+"/") })
	}
	for _, np := range w.nodePorts {
		if np != "" && !strings.HasPrefix(np, w.hostIP+":") {
			run(func() { w.get(ctx, "nodeport", "http://"+np+"/") })
		}
	}
	for _, ip := range ips {
		if ip != w.podIP {
			run(func() { w.get(ctx, "pod", "http://"+net.JoinHostPort(ip, w.serve)+"/") })
		}
	}
	if w.peers != "" && n%10 == 0 {
		run(func() { w.refreshPeers(ctx) })
	}
	wg.Wait()
	slices.SortFunc(w.out, func(a, b Sample) int { return strings.Compare(a.Probe+a.Target, b.Probe+b.Target) })
	return w.out
}

func (w *watcher) record(s Sample) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.T, s.Node, s.Pod = w.now.UnixMilli(), w.node, w.pod
	w.out = append(w.out, s)
}

// get is one HTTP probe: a 2xx answer within the tick.
func (w *watcher) get(ctx context.Context, probe, url string) {
	t := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := w.client.Do(req)
	s := Sample{Probe: probe, Target: url, MS: time.Since(t).Milliseconds()}
	if err == nil {
		resp.Body.Close()
		s.OK = resp.StatusCode/100 == 2
		if !s.OK {
			s.Err = resp.Status
		}
	} else {
		s.Err = shortErr(err)
	}
	w.record(s)
}

// lookup is the DNS probe; its answer is the VIP the next tick probes.
func (w *watcher) lookup(ctx context.Context) {
	t := time.Now()
	addrs, err := w.resolver.LookupIP(ctx, "ip4", w.dnsName)
	s := Sample{Probe: "dns", Target: w.dnsName, MS: time.Since(t).Milliseconds()}
	if err == nil && len(addrs) > 0 {
		s.OK, s.Answer = true, addrs[0].String()
		w.mu.Lock()
		w.lastVIP = s.Answer
		w.mu.Unlock()
	} else if err != nil {
		s.Err = shortErr(err)
	}
	w.record(s)
}

// refreshPeers reads the peers' addresses, every 5 s: kept when DNS fails
// (the pod probe then measures the network, not DNS).
func (w *watcher) refreshPeers(ctx context.Context) {
	addrs, err := w.resolver.LookupIP(ctx, "ip4", w.peers)
	if err != nil {
		return
	}
	var s []string
	for _, a := range addrs {
		s = append(s, a.String())
	}
	slices.Sort(s)
	w.mu.Lock()
	w.peerIPs = s
	w.mu.Unlock()
}

// resolverOf asks resolv.conf's first nameserver (the cluster DNS in a
// pod), Go's own resolver, no search list: the name is absolute.
func resolverOf() *net.Resolver {
	server, err := firstNameserver("/etc/resolv.conf")
	if err != nil {
		return net.DefaultResolver
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(server, "53"))
	}}
}

// shortErr is the last part of an error: "connection refused", "i/o
// timeout", "no such host".
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}
