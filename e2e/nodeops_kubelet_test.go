//go:build e2e

package e2e

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The host of a node under test: a root directory holding a kubeadm-shaped
// node, and recorders for the host's service manager (systemctl), container
// runtime (crictl) and network (ip) first in PATH. A fake kubelet plays the
// kubelet: while the systemctl recorder says it is active, it runs a real
// etcd and a real kube-apiserver from exactly the static-pod manifests in
// root/etc/kubernetes/manifests (each manifest's command, its hostPaths
// mapped into the root), restarts them when they exit or their manifest
// changes, stops them when their manifest goes, and tells the crictl
// recorder which containers run.

// recorderScripts are the recorders; __ROOT__ is the node's root. Every
// call is logged to recorder/calls.log with the state the assertions need:
// the etcd data dir's inode and the manifests present.
var recorderScripts = map[string]string{
	"systemctl": `#!/bin/sh
R='__ROOT__'
echo "systemctl $* | etcd=$(stat -c %i "$R/var/lib/etcd" 2>/dev/null || echo absent) manifests=$(ls "$R/etc/kubernetes/manifests" 2>/dev/null | tr '\n' ',')" >> "$R/recorder/calls.log"
case "$1 $2" in
"start kubelet") touch "$R/recorder/kubelet.active" ;;
"stop kubelet") rm -f "$R/recorder/kubelet.active" ;;
"stop snapshift-rollback-"*|"reset-failed snapshift-rollback-"*|"show --property=Version") ;;
*) echo "systemctl recorder: $* not supported" >&2; exit 1 ;;
esac
`,
	"systemd-run": `#!/bin/sh
echo "systemd-run $*" >> '__ROOT__/recorder/calls.log'
`,
	"crictl": `#!/bin/sh
R='__ROOT__'
name=""
while [ $# -gt 0 ]; do
  case "$1" in --name) name="$2"; shift ;; esac
  shift
done
n=$(echo "$name" | tr -d '^$')
if grep -qx "$n" "$R/recorder/containers" 2>/dev/null; then
  echo "container-$n"
  echo "crictl ps --name $n | running" >> "$R/recorder/calls.log"
else
  echo "crictl ps --name $n | none" >> "$R/recorder/calls.log"
fi
`,
	"ip": `#!/bin/sh
R='__ROOT__'
echo "ip $*" >> "$R/recorder/calls.log"
case "$1 $2" in
"link show") grep -qx "$3" "$R/recorder/links" || { echo "Device \"$3\" does not exist." >&2; exit 1; } ;;
"link delete") grep -vx "$3" "$R/recorder/links" > "$R/recorder/links.new"; mv "$R/recorder/links.new" "$R/recorder/links" ;;
esac
`,
}

// writeRecorders installs the recorders under root/recorder/bin and
// returns that directory.
func writeRecorders(t *testing.T, root string, links []string) string {
	t.Helper()
	dir := filepath.Join(root, "recorder", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range recorderScripts {
		write(t, filepath.Join(dir, name), []byte(strings.ReplaceAll(s, "__ROOT__", root)), 0o755)
	}
	write(t, filepath.Join(root, "recorder", "links"), []byte(strings.Join(links, "\n")+"\n"), 0o644)
	return dir
}

// calls reads the recorded calls.
func calls(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "recorder", "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// fakeKubelet runs a node's static pods from its manifests.
type fakeKubelet struct {
	t            *testing.T
	root, addr   string
	name, logDir string
	bins         map[string]string // component -> binary
	mu           sync.Mutex
	pods         map[string]*podProc
	stop, done   chan struct{}
	starts       int
}

type podProc struct {
	p    *proc
	hash [32]byte
}

// staticComponents are the static pods the fake kubelet runs (the
// controller-manager and scheduler are not under test here).
var staticComponents = []string{"etcd", "kube-apiserver"}

func startFakeKubelet(t *testing.T, name, root, addr, logDir string, bins map[string]string) *fakeKubelet {
	k := &fakeKubelet{t: t, root: root, addr: addr, name: name, logDir: logDir, bins: bins, pods: map[string]*podProc{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go k.loop()
	t.Cleanup(k.close)
	return k
}

func (k *fakeKubelet) close() {
	select {
	case <-k.stop:
		return
	default:
	}
	close(k.stop)
	<-k.done
	for _, p := range k.pods {
		p.p.stop()
	}
}

func (k *fakeKubelet) loop() {
	defer close(k.done)
	for {
		select {
		case <-k.stop:
			return
		case <-time.After(700 * time.Millisecond):
		}
		k.sync()
	}
}

// sync is one pass of the kubelet's static-pod loop.
func (k *fakeKubelet) sync() {
	_, err := os.Stat(filepath.Join(k.root, "recorder", "kubelet.active"))
	active := err == nil
	for _, comp := range staticComponents {
		if !active {
			break // a stopped kubelet leaves its containers running
		}
		b, err := os.ReadFile(filepath.Join(k.root, "etc", "kubernetes", "manifests", comp+".yaml"))
		cur := k.pods[comp]
		if cur != nil && (err != nil || sha256.Sum256(b) != cur.hash) {
			cur.p.stop()
			delete(k.pods, comp)
			cur = nil
		}
		if err != nil {
			continue
		}
		if cur != nil {
			if done, _ := cur.p.exited(); !done {
				continue
			}
		}
		args, err := podArgs(b, k.root, k.addr)
		if err != nil {
			k.t.Errorf("[kubelet %s] %s: %v", k.name, comp, err)
			continue
		}
		k.starts++
		p, err := startProc(fmt.Sprintf("%s-%s-%d", k.name, comp, k.starts), k.bins[comp], args, k.logDir)
		if err != nil {
			k.t.Errorf("[kubelet %s] %v", k.name, err)
			continue
		}
		k.pods[comp] = &podProc{p: p, hash: sha256.Sum256(b)}
	}
	var running []string
	for comp, p := range k.pods {
		if done, _ := p.p.exited(); !done {
			running = append(running, comp)
		}
	}
	sort.Strings(running)
	os.WriteFile(filepath.Join(k.root, "recorder", "containers.new"), []byte(strings.Join(running, "\n")+"\n"), 0o644)
	os.Rename(filepath.Join(k.root, "recorder", "containers.new"), filepath.Join(k.root, "recorder", "containers"))
}

// startProc is start without t.Fatal (it runs on the kubelet's goroutine)
// and without a cleanup of its own: the fake kubelet stops what it started.
func startProc(name, bin string, args []string, logDir string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		err := p.cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil // the kubelet stops it (a test cleanup would race the kubelet restarting it)
}

// podArgs is a static pod's command line as the kubelet would run it on
// this test host: every flag value under a hostPath mount points to the
// same path under root, and the test environment's two overrides: the
// node's loopback address (127.0.0.1, shared by every node on this
// machine) becomes the node's own 127.0.22.x address, and kube-apiserver
// binds only that address and writes no kubernetes Endpoints (a loopback
// address may not be an Endpoint).
func podArgs(manifest []byte, root, addr string) ([]string, error) {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(manifest, &pod); err != nil {
		return nil, err
	}
	if len(pod.Spec.Containers) != 1 {
		return nil, fmt.Errorf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	hostPath := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			hostPath[v.Name] = v.HostPath.Path
		}
	}
	type mount struct{ in, host string }
	var mounts []mount
	for _, m := range c.VolumeMounts {
		if hp, ok := hostPath[m.Name]; ok {
			mounts = append(mounts, mount{m.MountPath, filepath.Join(root, hp)})
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].in) > len(mounts[j].in) })
	cmd := append(append([]string(nil), c.Command...), c.Args...)
	var args []string
	for _, a := range cmd[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			args = append(args, a)
			continue
		}
		var parts []string
		seen := map[string]bool{}
		for _, v := range strings.Split(value, ",") {
			for _, m := range mounts {
				if v == m.in || strings.HasPrefix(v, m.in+"/") {
					v = m.host + strings.TrimPrefix(v, m.in)
					break
				}
			}
			v = strings.ReplaceAll(v, "//127.0.0.1:", "//"+addr+":")
			if !seen[v] {
				seen[v] = true
				parts = append(parts, v)
			}
		}
		args = append(args, name+"="+strings.Join(parts, ","))
	}
	if filepath.Base(cmd[0]) == "kube-apiserver" {
		args = append(args, "--bind-address="+addr, "--endpoint-reconciler-type=none")
	}
	return args, nil
}
