package rebuild

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/state"
)

// A move the installer's own configuration does not know about is undone
// by the installer's next run (kubespray re-renders the old ranges from its
// inventory, k3s and RKE2 read config.yaml at every start, kubeadm upgrade
// re-renders the static pods from kubeadm-config). The bundle's installer/
// holds, for the installer the snapshot and the configuration show, the
// change to the files that drive its next run; the runbook says when to
// apply it: before the installer runs again.

// InstallerDir is the bundle's directory of the installer's files.
const InstallerDir = "installer"

// Installer is the rebuild file's installer section.
type Installer struct {
	// Kubespray lists the operator's kubespray group_vars files to patch
	// (inventory/<cluster>/group_vars/k8s_cluster/k8s-cluster.yml and, for
	// Calico's pool, k8s-net-calico.yml): each is copied into the bundle
	// with the moved ranges, line by line, comments and order kept.
	Kubespray KubesprayInstaller `json:"kubespray,omitzero"`
}

// KubesprayInstaller names the group_vars files.
type KubesprayInstaller struct {
	GroupVars []string `json:"groupVars,omitempty"`
}

// InstallerFile is one file of the bundle's installer/, in report.json.
type InstallerFile struct {
	// Installer is kubespray, k3s, rke2 or kubeadm.
	Installer string `json:"installer"`
	// Path is the file in the bundle ("" for kubeadm: nothing to apply).
	Path string `json:"path,omitempty"`
	// ApplyTo is where it goes, in the operator's words.
	ApplyTo string `json:"applyTo"`
	// Changes are the keys changed or added, "key: old -> new".
	Changes []string `json:"changes"`
}

// installerValues are the values an installer's files carry after the move.
type installerValues struct {
	service, pod string // the new ranges, comma-joined per family; "" when not moved
	oldService   string
	dns, oldDNS  string // the kubelets' clusterDNS, new and old
}

func (r *run) installerValues() installerValues {
	var v installerValues
	p := r.report.Plan
	if p == nil {
		return v
	}
	join := func(ps []netip.Prefix) string {
		var s []string
		for _, x := range ps {
			s = append(s, x.String())
		}
		return strings.Join(s, ",")
	}
	if p.Service != nil {
		v.service, v.oldService = join(p.Service.New), join(p.Service.Old)
		if r.report.Operation != nil {
			v.dns = r.report.Operation.ClusterDNS
		}
	}
	if p.Pod != nil {
		v.pod = join(p.Pod.New)
	}
	return v
}

// writeInstaller writes installer/ and records its files in the report.
func (r *run) writeInstaller() error {
	v := r.installerValues()
	if v.service == "" && v.pod == "" {
		return nil
	}
	var files []InstallerFile
	for _, gv := range r.cfg.Installer.Kubespray.GroupVars {
		f, err := r.kubesprayGroupVars(gv, v, len(files) == 0)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	if d := r.report.Plan.Distribution(); d.IsK3sFamily() {
		f, err := r.k3sConfig(d.Program, v, d.Servers)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	if d := r.report.Plan.Distribution(); d != nil && d.Name == state.DistKubeadm {
		var ch []string
		if v.service != "" {
			ch = append(ch, "networking.serviceSubnet: "+v.service)
		}
		if v.pod != "" {
			ch = append(ch, "networking.podSubnet: "+v.pod)
		}
		files = append(files, InstallerFile{Installer: "kubeadm", ApplyTo: "nothing to apply: kube-system/kubeadm-config in the restored cluster holds them, and kubeadm upgrade renders the static pods from it", Changes: ch})
	}
	for _, f := range files {
		r.logf("installer", "%s: %s (%s)", f.Installer, orNothing(f.Path), strings.Join(f.Changes, "; "))
	}
	r.report.Installer = files
	return nil
}

func orNothing(p string) string {
	if p == "" {
		return "no file"
	}
	return p
}

// k3sConfig is a config.yaml.d drop-in for every server: k3s and RKE2 read
// /etc/rancher/<program>/config.yaml.d/*.yaml after config.yaml, in
// order, a later file's key replacing an earlier one's.
func (r *run) k3sConfig(program string, v installerValues, servers []state.NodeArgs) (InstallerFile, error) {
	rel := filepath.Join(InstallerDir, program, "config.yaml.d", "50-snapshift-ranges.yaml")
	var names []string
	for _, s := range servers {
		names = append(names, s.Node)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by snapshift rebuild: the ranges this cluster moved to. Copy this file to\n")
	fmt.Fprintf(&b, "# /etc/rancher/%s/config.yaml.d/ on every server (%s) before %s restarts or is upgraded:\n", program, strings.Join(names, ", "), program)
	fmt.Fprintf(&b, "# it replaces the same keys of config.yaml, which would bring the old ranges back.\n")
	f := InstallerFile{Installer: program, Path: filepath.ToSlash(rel), ApplyTo: fmt.Sprintf("/etc/rancher/%s/config.yaml.d/ on every server (%s)", program, strings.Join(names, ", "))}
	for _, kv := range [][2]string{{"cluster-cidr", v.pod}, {"service-cidr", v.service}, {"cluster-dns", v.dns}} {
		if kv[1] == "" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
		f.Changes = append(f.Changes, kv[0]+": "+kv[1])
	}
	return f, r.writeBundleFile(rel, []byte(b.String()))
}

// kubesprayKeys are the group_vars keys a move changes, and the value each
// takes. skydns_server is changed only when it is a literal address (its
// default is an expression of kube_service_addresses, which follows);
// nodelocaldns_ip is a link-local address no range move touches.
func kubesprayKeys(v installerValues) []struct{ key, value string } {
	var out []struct{ key, value string }
	if v.service != "" {
		out = append(out, struct{ key, value string }{"kube_service_addresses", v.service})
		if v.dns != "" {
			out = append(out, struct{ key, value string }{"skydns_server", v.dns})
		}
	}
	if v.pod != "" {
		out = append(out, struct{ key, value string }{"kube_pods_subnet", v.pod}, struct{ key, value string }{"calico_pool_cidr", v.pod})
	}
	return out
}

// groupVarsLine is a top-level "key: value  # comment" line of a
// group_vars file: the key, the separator, the value (quoted or not) and
// what follows it.
var groupVarsLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(\s*:\s*)("[^"]*"|'[^']*'|[^\s#]*)(.*)$`)

// kubesprayGroupVars patches one group_vars file by line and key: a key
// that is there gets its new value (its quotes and comment kept); in the
// first file, the two ranges that are missing are added at the end with a
// comment. The file is first read as YAML, so that one kubespray could
// not read is refused, naming its line.
func (r *run) kubesprayGroupVars(path string, v installerValues, first bool) (InstallerFile, error) {
	src := path // made relative to the rebuild file's directory by Load
	data, err := os.ReadFile(src)
	if err != nil {
		return InstallerFile{}, fmt.Errorf("installer.kubespray.groupVars: %w", err)
	}
	var parsed map[string]any
	if err := yaml.Unmarshal(data, &parsed); err != nil {
		return InstallerFile{}, fmt.Errorf("installer.kubespray.groupVars: %s is not a YAML map kubespray could read (%s): fix it, or leave it out", src, parseerr.Message(err))
	}
	rel := filepath.Join(InstallerDir, "kubespray", filepath.Base(src))
	f := InstallerFile{Installer: "kubespray", Path: filepath.ToSlash(rel), ApplyTo: src + ", before kubespray runs again"}
	found := map[string]bool{}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := groupVarsLine.FindStringSubmatch(line); m != nil {
			for _, kv := range kubesprayKeys(v) {
				if m[1] != kv.key {
					continue
				}
				found[kv.key] = true
				old := strings.Trim(m[3], `"'`)
				if kv.key == "skydns_server" && strings.Contains(old, "{{") {
					break // an expression of kube_service_addresses: it follows
				}
				if old == kv.value {
					break
				}
				q := ""
				if len(m[3]) > 0 && (m[3][0] == '"' || m[3][0] == '\'') {
					q = m[3][:1]
				}
				line = m[1] + m[2] + q + kv.value + q + m[4]
				f.Changes = append(f.Changes, fmt.Sprintf("%s: %s -> %s", kv.key, old, kv.value))
			}
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return f, err
	}
	if first {
		for _, kv := range kubesprayKeys(v) {
			if found[kv.key] || (kv.key != "kube_service_addresses" && kv.key != "kube_pods_subnet") {
				continue
			}
			fmt.Fprintf(&out, "# added by snapshift rebuild: the range the cluster moved to (%s was not set here)\n%s: %s\n", kv.key, kv.key, kv.value)
			f.Changes = append(f.Changes, fmt.Sprintf("%s: (not set) -> %s", kv.key, kv.value))
		}
	}
	if len(f.Changes) == 0 {
		f.Changes = []string{"nothing to change"}
	}
	return f, r.writeBundleFile(rel, out.Bytes())
}

// writeBundleFile writes rel in the bundle, 0600.
func (r *run) writeBundleFile(rel string, data []byte) error {
	p := r.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o600)
}
