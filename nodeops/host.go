package nodeops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// Config is one apply or rollback on one node.
type Config struct {
	// Bundle is the rebuild bundle (at least report.json, the node's
	// kubernetes/<node>/ and its etcd/<member>/). Required.
	Bundle string
	// Node is the control-plane node's name, as report.json names it. Required.
	Node string
	// Root is where the host's file system is. Default "/"; a test gives a
	// directory.
	Root string
	// Timeout bounds each wait: for the static pods to stop, for etcd, for
	// the apiserver. Default 5 minutes.
	Timeout time.Duration
	// PreflightOnly runs the checks and changes nothing (apply only).
	PreflightOnly bool
	// SkipHealth skips the health gates after the kubelet starts, and the
	// peer check before it (both talk to etcd over the network).
	SkipHealth bool
	// StopOnly (apply only) backs up and stops the old control plane (its
	// etcd data dir moved into the backup) and stops there: the first of
	// the two phases of a multi-member apply. The next apply goes on.
	StopOnly bool
	// RollbackAfter, when > 0, arms a systemd timer (apply only) that
	// rolls the node back that long after the backup unless confirmed.
	RollbackAfter time.Duration
	// Executable is the snapshift binary the timer runs. Default: this
	// process's own (os.Executable).
	Executable string
	// Out receives "[phase] ..." lines. Default io.Discard.
	Out io.Writer
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Validate fills the defaults and checks the required fields.
func (c *Config) Validate() error {
	var missing []string
	if c.Bundle == "" {
		missing = append(missing, "Bundle")
	}
	if c.Node == "" {
		missing = append(missing, "Node")
	}
	if len(missing) > 0 {
		return fmt.Errorf("nodeops: %s required", strings.Join(missing, " and "))
	}
	if c.Root == "" {
		c.Root = "/"
	}
	if !filepath.IsAbs(c.Root) {
		abs, err := filepath.Abs(c.Root)
		if err != nil {
			return err
		}
		c.Root = abs
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// host is the node being changed: its root and its tools.
type host struct {
	cfg *Config
}

// path is host path p under the root.
func (h *host) path(p string) string { return filepath.Join(h.cfg.Root, p) }

func (h *host) logf(phase, format string, args ...any) {
	fmt.Fprintf(h.cfg.Out, "[%s] %s\n", phase, fmt.Sprintf(format, args...))
}

// run runs a host tool found through PATH and returns its standard output
// alone: crictl warns on stderr (no /etc/crictl.yaml: "Config ... does not
// exist", "runtime connect using default endpoints"), and a warning read as
// a container ID kept `running` waiting until the timeout. Stderr goes into
// the error.
func (h *host) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()+" "+stderr.String()))
	}
	return out.String(), nil
}

// systemctl runs `systemctl <verb> kubelet`.
func (h *host) systemctl(ctx context.Context, verb string) error {
	h.logf("kubelet", "systemctl %s kubelet", verb)
	_, err := h.run(ctx, "systemctl", verb, "kubelet")
	return err
}

// kubeletStopGrace is how long stopStaticPods leaves the kubelet to stop
// the static pods whose manifests went before it stops them itself: half
// the timeout, at most a minute (the kubelet gives kube-apiserver 30 s).
func kubeletStopGrace(timeout time.Duration) time.Duration { return min(timeout/2, time.Minute) }

// stopControlPlaneContainers stops, with crictl, every running container
// of the control plane's static pods (the kubelet is stopped first).
func (h *host) stopControlPlaneContainers(ctx context.Context) error {
	var ids []string
	for _, name := range staticPodContainers {
		out, err := h.run(ctx, "crictl", "ps", "--quiet", "--state", "Running", "--name", "^"+name+"$")
		if err != nil {
			return err
		}
		ids = append(ids, strings.Fields(out)...)
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := h.run(ctx, "crictl", append([]string{"--timeout", "30s", "stop"}, ids...)...)
	return err
}

// staticPodContainers are the containers of kubeadm's static pods.
var staticPodContainers = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// controlPlaneContainers are the static pods that must be gone before the
// etcd data dir and the certificates change.
var controlPlaneContainers = []string{"etcd", "kube-apiserver"}

// running lists the control-plane containers crictl shows running.
// stopOldCAContainers: with a new CA, every container still running on
// the node once the static pods and the kubelet are stopped (kube-proxy,
// the CNI agent, any pod that talks to the API) holds the old CA in
// memory, read once at its start, and trusts no certificate of the
// restored cluster until it restarts: the lab saw kube-proxy on a
// control-plane node fail every TLS handshake, so the new kubernetes
// Service VIP was never programmed there and flannel, which reaches the
// API through it, could not start, holding the staged restart's first
// stage for minutes. They are stopped here, as kubeadm reset stops the
// workers'; the kubelet starts them again, on the new CA.
func (h *host) stopOldCAContainers(ctx context.Context) error {
	out, err := h.run(ctx, "crictl", "ps", "--quiet", "--state", "Running")
	if err != nil {
		return err
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return nil
	}
	h.logf("stop", "the CA changes: crictl stop %d containers still running (each trusts the old CA; the kubelet starts them again)", len(ids))
	_, err = h.run(ctx, "crictl", append([]string{"--timeout", "60s", "stop"}, ids...)...)
	return err
}

func (h *host) running(ctx context.Context) ([]string, error) {
	var out []string
	for _, name := range controlPlaneContainers {
		ids, err := h.run(ctx, "crictl", "ps", "--quiet", "--state", "Running", "--name", "^"+name+"$")
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(ids) != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// stopStaticPods moves every manifest out of the kubelet's manifest
// directory into aside (the kubelet then stops the pods) and waits until
// crictl shows no etcd and no kube-apiserver running, then stops the
// kubelet.
func (h *host) stopStaticPods(ctx context.Context, aside string) error {
	dir := h.path(ManifestsDir)
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		if err := os.MkdirAll(h.path(aside), 0o700); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(h.path(aside), e.Name())); err != nil {
			return err
		}
	}
	if len(entries) > 0 { // durable before it is recorded: a reboot must not bring the old pods back
		if err := fsutil.SyncDir(h.path(aside)); err != nil {
			return err
		}
		if err := fsutil.SyncDir(dir); err != nil {
			return err
		}
	}
	h.logf("stop", "moved %d manifests from %s to %s; waiting for the kubelet to stop etcd and kube-apiserver", len(entries), ManifestsDir, aside)
	start := time.Now()
	deadline, grace := start.Add(h.cfg.Timeout), start.Add(kubeletStopGrace(h.cfg.Timeout))
	forced := false
	for {
		names, err := h.running(ctx)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			break
		}
		if !forced && time.Now().After(grace) {
			// A kubelet that has not reached its apiserver since it started
			// never stops a static pod whose manifest went ("skipping delete
			// because sources aren't ready yet"): the deadline's rollback
			// after an apiserver that never came up meets exactly that. The
			// kubelet stopped, the containers are stopped here, and nothing
			// starts them again.
			forced = true
			h.logf("stop", "the kubelet has not stopped %s after %s (a kubelet that never reached its apiserver since it started keeps static pods whose manifests went): stopping the kubelet, then them with crictl stop",
				strings.Join(names, " and "), time.Since(start).Round(time.Second))
			if err := h.systemctl(ctx, "stop"); err != nil {
				return err
			}
			if err := h.stopControlPlaneContainers(ctx); err != nil {
				return err
			}
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s, crictl still shows %s running (read: crictl ps -a; journalctl -u kubelet): is the kubelet running? stop them with crictl stop, then run again", h.cfg.Timeout, strings.Join(names, " and "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	h.logf("stop", "no etcd or kube-apiserver container runs")
	return h.systemctl(ctx, "stop")
}
