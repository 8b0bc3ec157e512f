package nodeops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/internal/parseerr"
)

// readHint is what to read when a gate fails.
const readHint = "read: crictl ps -a; crictl logs <container id>; journalctl -u kubelet; /var/log/pods/kube-system_%s-*"

// staticPodCommand is the command line of a static pod manifest's first
// container, read from under the root.
func (h *host) staticPodCommand(component string) ([]string, error) {
	p := filepath.Join(ManifestsDir, component+".yaml")
	b, err := os.ReadFile(h.path(p))
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		return nil, fmt.Errorf("%s: %w", p, parseerr.Explain(err))
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, fmt.Errorf("%s has no container", p)
	}
	c := pod.Spec.Containers[0]
	return append(append([]string(nil), c.Command...), c.Args...), nil
}

// flagValue is --name's value in a command line.
func flagValue(cmd []string, name string) (string, bool) {
	for _, a := range cmd {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// waitFor retries check every two seconds until it succeeds or the
// timeout passes, then returns its last error.
func (h *host) waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(h.cfg.Timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return fmt.Errorf("%s: %w", what, p.error)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: not healthy after %s: %w", what, h.cfg.Timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// permanent is a gate's finding that waiting does not change.
type permanent struct{ error }

// etcdGate waits until the local etcd member lists want members (0: any)
// including itself, and answers a linearizable read (etcdctl endpoint
// health), with pki/etcd/healthcheck-client.crt; with an identity, its
// cluster ID and every member's ID must be the identity's (at once: that
// is no matter of time).
func (h *host) etcdGate(ctx context.Context, want int, id *bundle.EtcdCluster) error {
	cmd, err := h.staticPodCommand("etcd")
	if err != nil {
		return err
	}
	name, _ := flagValue(cmd, "name")
	urls, _ := flagValue(cmd, "advertise-client-urls")
	tlsInfo := transport.TLSInfo{CertFile: h.path(KubernetesDir + "/pki/etcd/healthcheck-client.crt"),
		KeyFile: h.path(KubernetesDir + "/pki/etcd/healthcheck-client.key"), TrustedCAFile: h.path(KubernetesDir + "/pki/etcd/ca.crt")}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return err
	}
	endpoint := strings.Split(urls, ",")[0]
	if !strings.HasPrefix(endpoint, "https://") {
		tlsConfig = nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, TLS: tlsConfig, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	return h.waitFor(ctx, "etcd member "+name+" at "+endpoint, func(ctx context.Context) error {
		ml, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		var names []string
		self := false
		for _, m := range ml.Members {
			names = append(names, m.Name)
			self = self || m.Name == name
		}
		if !self || (want > 0 && len(ml.Members) != want) {
			return fmt.Errorf("member list %v (want %d members with %s)", names, want, name)
		}
		if id != nil {
			if err := sameIdentity(ml, *id); err != nil {
				return permanent{err}
			}
		}
		if _, err := cli.Get(ctx, "health"); err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
			return err
		}
		h.logf("health", "etcd: cluster %s, member list %s; %s healthy (linearizable read)", types.ID(ml.Header.ClusterId), strings.Join(names, ", "), name)
		return nil
	})
}

// apiserverGate waits until the local kube-apiserver (its manifest's
// advertise address, or bind address, and secure port) answers /readyz
// with 200 to admin.conf's credentials.
func (h *host) apiserverGate(ctx context.Context) error {
	cmd, err := h.staticPodCommand("kube-apiserver")
	if err != nil {
		return err
	}
	addr, _ := flagValue(cmd, "advertise-address")
	if b, ok := flagValue(cmd, "bind-address"); ok && b != "0.0.0.0" && b != "::" {
		addr = b
	}
	port, ok := flagValue(cmd, "secure-port")
	if !ok {
		port = "6443"
	}
	cfg, err := h.adminConfig()
	if err != nil {
		return err
	}
	cfg.Host = "https://" + net.JoinHostPort(addr, port)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	return h.waitFor(ctx, "kube-apiserver at "+cfg.Host, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: HTTP %d", resp.StatusCode)
		}
		h.logf("health", "kube-apiserver %s/readyz: ok (as admin.conf's user)", cfg.Host)
		return nil
	})
}

// adminConfig is admin.conf's client configuration, its file references
// resolved under the root.
func (h *host) adminConfig() (*rest.Config, error) {
	kc, err := clientcmd.LoadFromFile(h.path(KubernetesDir + "/admin.conf"))
	if err != nil {
		return nil, err
	}
	under := func(p *string) {
		if *p != "" && filepath.IsAbs(*p) {
			*p = h.path(*p)
		}
	}
	for _, c := range kc.Clusters {
		under(&c.CertificateAuthority)
	}
	for _, a := range kc.AuthInfos {
		under(&a.ClientCertificate)
		under(&a.ClientKey)
	}
	return clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// sameIdentity compares a member list with the cluster report.json
// records: the cluster ID (when known) and every member's ID.
func sameIdentity(ml *clientv3.MemberListResponse, id bundle.EtcdCluster) error {
	var live []bundle.EtcdMember
	for _, m := range ml.Members {
		live = append(live, bundle.EtcdMember{Name: m.Name, ID: types.ID(m.ID).String(), PeerURLs: m.PeerURLs})
	}
	if err := id.Differs(types.ID(ml.Header.ClusterId).String(), live); err != nil {
		return fmt.Errorf("%w (roll back every control-plane node; etcdctl endpoint status -w table on each shows which cluster it is in)", err)
	}
	return nil
}

// gates runs both gates; on failure the error says what to read.
func (h *host) gates(ctx context.Context, members int, id *bundle.EtcdCluster) error {
	if err := h.etcdGate(ctx, members, id); err != nil {
		return fmt.Errorf("%w (%s)", err, fmt.Sprintf(readHint, "etcd"))
	}
	if err := h.apiserverGate(ctx); err != nil {
		return fmt.Errorf("%w (%s)", err, fmt.Sprintf(readHint, "kube-apiserver"))
	}
	return nil
}
