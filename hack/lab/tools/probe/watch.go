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
	readyz := fs.String("readyz", "", "kube-apiserver /readyz URL")
	dnsName := fs.String("dns", "", "a Service's DNS name")
	vipPort := fs.String("vip", "", "the Service's port, for HTTP to its VIP")
	nodePorts := fs.String("nodeport", "", "ADDR:PORT,... of the NodePort")
	peers := fs.String("peers", "", "a headless Service naming the probing pods")
	serve := fs.String("serve", "", "port to answer HTTP on")
	node := fs.String("node", os.Getenv("NODE_NAME"), "the node's name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *node == "" {
		*node = "operator"
	}
	pod, podIP, hostIP := os.Getenv("POD_NAME"), os.Getenv("POD_IP"), os.Getenv("HOST_IP")
	if *serve != "" {
		go http.ListenAndServe(":"+*serve, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "%s %s\n", pod, podIP) }))
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	name := *node
	if pod != "" {
		name += "-" + pod
	}
	f, err := os.OpenFile(filepath.Join(*dir, name+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	client := &http.Client{Timeout: *every * 4 / 5, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	resolver := resolverOf()
	var mu sync.Mutex
	lastVIP := ""
	var peerIPs []string
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return w.Flush()
		case <-tick.C:
		}
		now := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), *every*4/5)
		var wg sync.WaitGroup
		var out []Sample
		record := func(s Sample) {
			mu.Lock()
			defer mu.Unlock()
			s.T, s.Node, s.Pod = now.UnixMilli(), *node, pod
			out = append(out, s)
		}
		get := func(probe, url string) {
			defer wg.Done()
			t := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
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
			record(s)
		}
		if *readyz != "" {
			wg.Add(1)
			go get("readyz", *readyz)
		}
		mu.Lock()
		vip, ips := lastVIP, slices.Clone(peerIPs)
		mu.Unlock()
		if *dnsName != "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				addrs, err := resolver.LookupIP(ctx, "ip4", *dnsName)
				s := Sample{Probe: "dns", Target: *dnsName, MS: time.Since(t).Milliseconds()}
				if err == nil && len(addrs) > 0 {
					s.OK, s.Answer = true, addrs[0].String()
					mu.Lock()
					lastVIP = s.Answer
					mu.Unlock()
				} else if err != nil {
					s.Err = shortErr(err)
				}
				record(s)
			}()
		}
		if *vipPort != "" && vip != "" {
			wg.Add(1)
			go get("vip", "http://"+net.JoinHostPort(vip, *vipPort)+"/")
		}
		for _, np := range strings.Split(*nodePorts, ",") {
			if np == "" || strings.HasPrefix(np, hostIP+":") {
				continue
			}
			wg.Add(1)
			go get("nodeport", "http://"+np+"/")
		}
		for _, ip := range ips {
			if ip == podIP {
				continue
			}
			wg.Add(1)
			go get("pod", "http://"+net.JoinHostPort(ip, *serve)+"/")
		}
		if *peers != "" && n%10 == 0 {
			// The peers' addresses, every 5 s: kept when DNS fails (the
			// pod probe then measures the network, not DNS).
			wg.Add(1)
			go func() {
				defer wg.Done()
				addrs, err := resolver.LookupIP(ctx, "ip4", *peers)
				if err == nil {
					var s []string
					for _, a := range addrs {
						s = append(s, a.String())
					}
					slices.Sort(s)
					mu.Lock()
					peerIPs = s
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		cancel()
		slices.SortFunc(out, func(a, b Sample) int { return strings.Compare(a.Probe+a.Target, b.Probe+b.Target) })
		for _, s := range out {
			enc.Encode(s)
		}
		w.Flush()
	}
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
