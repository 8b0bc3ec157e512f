package nodeops

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/bundle"
)

// hostEtcd is what a node shows of an etcd that systemd runs from the host
// (kubespray's default, etcd_deployment_type: host) rather than the kubelet
// from a static pod: its unit file, the unit's environment file and the
// data dir that file names, and kube-apiserver's --etcd-* files outside
// kubeadm's directories.
type hostEtcd struct {
	unit, env, dataDir string
	apiserver          []string
}

// found: a unit or its environment file is on the node. kube-apiserver's
// flags alone do not make an etcd a host one (an external etcd elsewhere
// is configured the same way); they are named when the others are found.
func (e hostEtcd) found() bool { return e.unit != "" || e.env != "" }

func (e hostEtcd) String() string {
	var what []string
	if e.unit != "" {
		what = append(what, "the unit "+e.unit)
	}
	if e.env != "" {
		s := "its environment file " + e.env
		if e.dataDir != "" {
			s += " (ETCD_DATA_DIR=" + e.dataDir + ")"
		}
		what = append(what, s)
	}
	if len(e.apiserver) > 0 {
		what = append(what, "kube-apiserver's "+strings.Join(e.apiserver, " "))
	}
	return strings.Join(what, ", ")
}

// findHostEtcd looks for a host etcd under the root: etcd.service in
// systemd's unit directories, the EnvironmentFile it names (else
// /etc/etcd.env), and kube-apiserver.yaml's --etcd-cafile, --etcd-certfile
// and --etcd-keyfile. A file that cannot be read is an error; a manifest
// that is not a Pod is only not looked into (checkRoot names the manifests
// it needs).
func (h *host) findHostEtcd() (hostEtcd, error) {
	var e hostEtcd
	envFile := bundle.HostEtcdEnv
	for _, dir := range bundle.SystemdUnitDirs {
		p := path.Join(dir, bundle.HostEtcdUnit)
		data, err := os.ReadFile(h.path(p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return e, err
		}
		e.unit = p
		if f := unitEnvironmentFile(data); f != "" {
			envFile = f
		}
		break
	}
	data, err := os.ReadFile(h.path(envFile))
	switch {
	case err == nil:
		e.env = envFile
		e.dataDir = envValue(data, "ETCD_DATA_DIR")
	case !errors.Is(err, fs.ErrNotExist):
		return e, err
	}
	if data, err := os.ReadFile(h.path(filepath.Join(ManifestsDir, "kube-apiserver.yaml"))); err == nil {
		e.apiserver = etcdFilesOutsideKubeadm(apiserverArgs(data))
	}
	return e, nil
}

// apiserverArgs are the command and args of a kube-apiserver static pod's
// kube-apiserver container (nil when the manifest is not a Pod with one).
func apiserverArgs(manifest []byte) []string {
	var pod struct {
		Spec struct {
			Containers []struct {
				Name    string   `json:"name"`
				Command []string `json:"command"`
				Args    []string `json:"args"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if yaml.Unmarshal(manifest, &pod) != nil {
		return nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "kube-apiserver" {
			return append(append([]string{}, c.Command...), c.Args...)
		}
	}
	return nil
}

// unitEnvironmentFile is the last EnvironmentFile= of a unit's [Service]
// section, without the "-" that makes it optional.
func unitEnvironmentFile(unit []byte) string {
	f := ""
	sc := bufio.NewScanner(bytes.NewReader(unit))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "EnvironmentFile="); ok {
			f = strings.TrimPrefix(strings.TrimSpace(v), "-")
		}
	}
	return f
}

// envValue is KEY's value in a systemd environment file (KEY=VALUE lines,
// # comments, values optionally quoted).
func envValue(env []byte, key string) string {
	v := ""
	sc := bufio.NewScanner(bytes.NewReader(env))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, val, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == key {
			v = strings.Trim(strings.TrimSpace(val), `"'`)
		}
	}
	return v
}

// etcdFilesOutsideKubeadm lists kube-apiserver's --etcd-cafile,
// --etcd-certfile and --etcd-keyfile whose file is outside kubeadm's
// /etc/kubernetes/pki and /etc/kubernetes/pki/etcd (kubespray's
// /etc/ssl/etcd/ssl), as flag=value.
func etcdFilesOutsideKubeadm(args []string) []string {
	var out []string
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || (name != "etcd-cafile" && name != "etcd-certfile" && name != "etcd-keyfile") {
			continue
		}
		if d := path.Dir(value); d != bundle.KubeadmEtcdPKI && d != bundle.KubeadmAPIServerEtcdPKI {
			out = append(out, "--"+name+"="+value)
		}
	}
	return out
}

// checkHostEtcd refuses a node whose etcd systemd runs from the host: apply
// installs etcd as a static pod and moves the data dir into the backup, so
// it would pull the data dir from under the running service and start a
// second etcd beside it. A node that also has a static-pod etcd has two
// etcds configured, and both are named.
func (a *applyRun) checkHostEtcd(where string) error {
	e, err := a.findHostEtcd()
	if err != nil {
		return err
	}
	if !e.found() {
		return nil
	}
	both := ""
	if ok, _ := exists(a.path(filepath.Join(ManifestsDir, "etcd.yaml"))); ok {
		both = fmt.Sprintf("; %s is a static-pod etcd too, so two etcds are configured on this node: remove the one that does not run, then run apply again", filepath.Join(ManifestsDir, "etcd.yaml"))
	}
	return fmt.Errorf("etcd on node %s%s runs as a host service, not as kubeadm's static pod (found %s): node apply supports only the static-pod etcd (kubespray's etcd_deployment_type: kubeadm), and here it would move the data dir from under %s and start a second etcd beside it%s", a.b.node.Name, where, e, bundle.HostEtcdUnit, both)
}
