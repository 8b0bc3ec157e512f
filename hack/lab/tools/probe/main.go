// Command probe runs the lab's checks from inside a pod:
//
//	probe sleep                 wait for SIGTERM (the pod's main process)
//	probe dns NAME [SERVER]     print NAME's A records, asking SERVER:53 (default: resolv.conf's first nameserver)
//	probe http URL              GET URL, print the body; non-zero on an error or a non-2xx status
//	probe watch FLAGS...        probe every 0.5 s until SIGTERM, one JSON line per probe (watch.go)
//
// Each failure is one sentence on stderr and exit status 1.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: probe sleep | dns NAME [SERVER] | http URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch args[0] {
	case "watch":
		return watch(args[1:])
	case "sleep":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		<-ch
		return nil
	case "dns":
		if len(args) < 2 {
			return errors.New("usage: probe dns NAME [SERVER]")
		}
		server := ""
		if len(args) > 2 {
			server = args[2]
		} else {
			s, err := firstNameserver("/etc/resolv.conf")
			if err != nil {
				return err
			}
			server = s
		}
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort(server, "53"))
		}}
		ips, err := r.LookupIP(ctx, "ip4", args[1])
		if err != nil {
			return fmt.Errorf("dns %s at %s: %w", args[1], server, err)
		}
		for _, ip := range ips {
			fmt.Println(ip)
		}
		return nil
	case "http":
		if len(args) != 2 {
			return errors.New("usage: probe http URL")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[1], nil)
		if err != nil {
			return fmt.Errorf("http %s: %w", args[1], err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("http %s: %w", args[1], err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("http %s: reading the body: %w", args[1], err)
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("http %s: status %s", args[1], resp.Status)
		}
		fmt.Print(string(body))
		return nil
	}
	return fmt.Errorf("unknown check %q (sleep, dns, http, watch)", args[0])
}

func firstNameserver(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("dns: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("dns: no nameserver in %s", path)
}
