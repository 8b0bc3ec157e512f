package manifests

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/cidr"
)

// Update returns a copy of set with the flags, annotations, probes and
// volumes that ch moves changed, and the list of what changed (and what was
// kept on purpose). It is pure: set is not modified and nothing is written.
// Every other flag keeps its value, spelling and place. It fails, before
// changing anything, when ch is invalid, when a manifest ch needs is not in
// the set, or when the result would not start (an --initial-cluster
// without the member, a Pod CIDR too small for the node CIDR size).
func Update(set *Set, ch Changes) (*Set, []Change, error) {
	if err := ch.Validate(); err != nil {
		return nil, nil, fmt.Errorf("manifest changes: %w", err)
	}
	u := &updater{set: set.clone()}
	steps := []func(Changes) error{u.serviceCIDR, u.podCIDR, u.etcd, u.etcdServers, u.advertiseAddress}
	for _, step := range steps {
		if err := step(ch); err != nil {
			return nil, nil, err
		}
	}
	return u.set, u.changes, nil
}

type updater struct {
	set     *Set
	changes []Change
	// oldClientURLs are etcd's --advertise-client-urls before the update.
	oldClientURLs []string
}

// need returns component's manifest and command line, failing with what
// needs it when it is missing.
func (u *updater) need(component, what string) (*Manifest, cmdLine, error) {
	m, err := u.set.Get(component)
	if err != nil {
		return nil, cmdLine{}, fmt.Errorf("changing %s: %w", what, err)
	}
	c, err := m.Container()
	if err != nil {
		return nil, cmdLine{}, err
	}
	return m, cmdLine{c: c, component: component}, nil
}

func fileOf(m *Manifest) string {
	if m.Path != "" {
		return m.Path
	}
	return FileName(m.Component)
}

func (u *updater) record(m *Manifest, field string, action Action, old, new, note string) {
	u.changes = append(u.changes, Change{Component: m.Component, File: fileOf(m), Field: field, Action: action, Old: old, New: new, Note: note})
}

// setFlag sets flag name to value; an absent flag is added when add is set.
// It reports whether the flag is (now) present.
func (u *updater) setFlag(m *Manifest, l cmdLine, name, value string, add bool, note string) (bool, error) {
	old, found, err := l.set(name, value)
	if err != nil {
		return false, err
	}
	switch {
	case found && old != value:
		u.record(m, "--"+name, ActionSet, old, value, note)
	case !found && add:
		if err := l.add(name, value); err != nil {
			return false, err
		}
		u.record(m, "--"+name, ActionAdd, "", value, note)
		return true, nil
	}
	return found, nil
}

// setFlagOrKeep is setFlag for a flag that may stay absent: when it is
// absent and not added, that is recorded as kept, with why.
func (u *updater) setFlagOrKeep(m *Manifest, l cmdLine, name, value string, add bool, absent string) error {
	found, err := u.setFlag(m, l, name, value, add, "")
	if err == nil && !found {
		u.record(m, "--"+name, ActionKeep, "", "", absent)
	}
	return err
}

func (u *updater) setAnnotation(m *Manifest, key, value string) {
	old, found := m.Pod.Annotations[key]
	if found && old == value {
		return
	}
	if m.Pod.Annotations == nil {
		m.Pod.Annotations = map[string]string{}
	}
	m.Pod.Annotations[key] = value
	if found {
		u.record(m, "annotation "+key, ActionSet, old, value, "")
	} else {
		u.record(m, "annotation "+key, ActionAdd, "", value, "")
	}
}

// completeFlag is the new value of a CIDR-list flag: the named ranges, and
// the flag's current range of every family they do not name, in the
// flag's order (one family of a dual-stack cluster moves; the flag keeps
// both, or kube-apiserver reports an inconsistent ServiceCIDR and
// kube-controller-manager exits on a node CIDR of the missing family).
func completeFlag(l cmdLine, name, named string) (string, error) {
	want, err := cidr.ParseList(named)
	if err != nil {
		return "", err
	}
	cur, ok, err := l.get(name)
	if err != nil || !ok {
		return named, err
	}
	recorded, err := cidr.ParseList(cur)
	if err != nil {
		return "", fmt.Errorf("%s: --%s=%q: %w", l.component, name, cur, err)
	}
	return cidr.Join(cidr.Complete(want, recorded)), nil
}

func (u *updater) serviceCIDR(ch Changes) error {
	if ch.ServiceCIDR == "" {
		return nil
	}
	const what = "the Service CIDR"
	api, apiLine, err := u.need(KubeAPIServer, what)
	if err != nil {
		return err
	}
	kcm, kcmLine, err := u.need(KubeControllerManager, what)
	if err != nil {
		return err
	}
	apiValue, err := completeFlag(apiLine, "service-cluster-ip-range", ch.ServiceCIDR)
	if err != nil {
		return err
	}
	if _, err := u.setFlag(api, apiLine, "service-cluster-ip-range", apiValue, true, ""); err != nil {
		return err
	}
	kcmValue, err := completeFlag(kcmLine, "service-cluster-ip-range", ch.ServiceCIDR)
	if err != nil {
		return err
	}
	return u.setFlagOrKeep(kcm, kcmLine, "service-cluster-ip-range", kcmValue, false,
		"absent, not added: kubeadm sets it only with a Pod CIDR, for node CIDR allocation")
}

func (u *updater) podCIDR(ch Changes) error {
	if ch.PodCIDR == "" {
		return nil
	}
	m, l, err := u.need(KubeControllerManager, "the Pod CIDR")
	if err != nil {
		return err
	}
	alloc, hasAlloc, err := l.get("allocate-node-cidrs")
	if err != nil {
		return err
	}
	allocOn := hasAlloc && strings.EqualFold(alloc, "true")
	value, err := completeFlag(l, "cluster-cidr", ch.PodCIDR)
	if err != nil {
		return err
	}
	if allocOn {
		if err := checkNodeMask(l, value); err != nil {
			return err
		}
	}
	if err := u.setFlagOrKeep(m, l, "cluster-cidr", value, allocOn,
		"absent and node CIDR allocation is off: not added"); err != nil {
		return err
	}
	if allocOn {
		u.record(m, "--allocate-node-cidrs", ActionKeep, alloc, "",
			"already on: kube-controller-manager allocates new nodes' CIDRs from the new --cluster-cidr")
	} else {
		note := "absent: not added; kube-controller-manager does not allocate node CIDRs, so nodes' podCIDRs come from elsewhere"
		if hasAlloc {
			note = "not true: left as is; kube-controller-manager does not allocate node CIDRs"
		}
		u.record(m, "--allocate-node-cidrs", ActionKeep, alloc, "", note)
	}
	return nil
}

// checkNodeMask refuses a cluster CIDR that cannot hold node CIDRs of the
// configured size, which kube-controller-manager would exit on
// (nodeipam/ipam/cidrset: the node mask must be at least the cluster mask
// and at most 16 bits longer).
func checkNodeMask(l cmdLine, podCIDR string) error {
	prefixes, err := cidr.ParseList(podCIDR)
	if err != nil {
		return err
	}
	for _, p := range prefixes {
		flag, mask := "node-cidr-mask-size-ipv4", 24
		if p.Addr().Is6() {
			flag, mask = "node-cidr-mask-size-ipv6", 64
		}
		names := []string{flag}
		if len(prefixes) == 1 {
			// single stack: --node-cidr-mask-size wins (kube-controller-manager's setNodeCIDRMaskSizes)
			names = []string{"node-cidr-mask-size", flag}
		} else if _, ok, _ := l.get("node-cidr-mask-size"); ok {
			return fmt.Errorf("%s: --node-cidr-mask-size is not allowed with a dual-stack Pod CIDR (%s): kube-controller-manager would exit; use --node-cidr-mask-size-ipv4 and -ipv6",
				l.component, podCIDR)
		}
		for _, n := range names {
			v, ok, err := l.get(n)
			if err != nil {
				return err
			}
			if ok {
				if mask, err = strconv.Atoi(v); err != nil {
					return fmt.Errorf("%s: --%s=%q is not a number", l.component, n, v)
				}
				flag = n
				break
			}
		}
		if p.Bits() > mask || mask-p.Bits() > 16 {
			return fmt.Errorf("%s: the Pod CIDR %s cannot hold node CIDRs of /%d (--%s): kube-controller-manager would exit; the node mask must be between /%d and /%d",
				l.component, p, mask, flag, p.Bits(), p.Bits()+16)
		}
	}
	return nil
}

func (ch Changes) touchesEtcd() bool {
	return !ch.EtcdMember.isZero() || ch.InitialCluster != "" || ch.DataDir != ""
}

func (u *updater) etcd(ch Changes) error {
	if !ch.touchesEtcd() {
		return nil
	}
	m, l, err := u.need(Etcd, "the etcd member")
	if err != nil {
		return err
	}
	oldPeer, _, err := l.get("initial-advertise-peer-urls")
	if err != nil {
		return err
	}
	oldClient, _, err := l.get("advertise-client-urls")
	if err != nil {
		return err
	}
	u.oldClientURLs = cidr.Split(oldClient)
	mem := ch.EtcdMember
	if mem.Name != "" {
		if _, err := u.setFlag(m, l, "name", mem.Name, true, ""); err != nil {
			return err
		}
	}
	if mem.PeerURL != "" {
		if _, err := u.setFlag(m, l, "initial-advertise-peer-urls", mem.PeerURL, true, ""); err != nil {
			return err
		}
		if err := u.setListen(m, l, "listen-peer-urls", cidr.Split(oldPeer), mem.PeerURL); err != nil {
			return err
		}
	}
	if mem.ClientURL != "" {
		if _, err := u.setFlag(m, l, "advertise-client-urls", mem.ClientURL, true, ""); err != nil {
			return err
		}
		if err := u.setListen(m, l, "listen-client-urls", u.oldClientURLs, mem.ClientURL); err != nil {
			return err
		}
		u.setAnnotation(m, EtcdAdvertiseClientURLsAnnotation, mem.ClientURL)
	}
	if err := u.initialCluster(m, l, ch); err != nil {
		return err
	}
	if ch.InitialClusterToken != "" {
		if _, found, err := l.get("initial-cluster-token"); err != nil {
			return err
		} else if found {
			if _, err := u.setFlag(m, l, "initial-cluster-token", ch.InitialClusterToken, false, "the restored cluster's token"); err != nil {
				return err
			}
		}
	}
	if ch.DataDir != "" {
		return u.dataDir(m, l, ch.DataDir)
	}
	return nil
}

// setListen points etcd's listen URLs at the member's new address: entries
// on an old advertised host become newURL; loopback and other entries stay.
// When none was on an old host, newURL is added unless a wildcard address
// or newURL itself is already listened on.
func (u *updater) setListen(m *Manifest, l cmdLine, name string, oldURLs []string, newURL string) error {
	cur, found, err := l.get(name)
	if err != nil {
		return err
	}
	var oldHosts []string
	for _, o := range oldURLs {
		if h := urlHost(o); h != "" {
			oldHosts = append(oldHosts, h)
		}
	}
	var out []string
	replaced, covered := false, false
	for _, e := range cidr.Split(cur) {
		h := urlHost(e)
		if isWildcardHost(h) || sameURL(e, newURL) {
			covered = true
		}
		if slices.ContainsFunc(oldHosts, func(o string) bool { return sameHost(o, h) }) && !isWildcardHost(h) {
			if !replaced {
				out = append(out, newURL)
			}
			replaced = true
			continue
		}
		out = append(out, e)
	}
	if !replaced && !covered {
		out = append(out, newURL)
	}
	value := strings.Join(out, ",")
	if found && value == cur {
		return nil
	}
	_, err = u.setFlag(m, l, name, value, true, "")
	return err
}

func (u *updater) initialCluster(m *Manifest, l cmdLine, ch Changes) error {
	memberChanged := ch.EtcdMember.Name != "" || ch.EtcdMember.PeerURL != "" || ch.InitialCluster != ""
	if !memberChanged {
		return nil
	}
	name, _, err := l.get("name")
	if err != nil {
		return err
	}
	peers, _, err := l.get("initial-advertise-peer-urls")
	if err != nil {
		return err
	}
	want := ch.InitialCluster
	if want == "" {
		cur, _, err := l.get("initial-cluster")
		if err != nil {
			return err
		}
		if entries, err := parseInitialCluster(cur); err == nil {
			if names := clusterNames(entries); len(names) > 1 {
				return fmt.Errorf("%s: --initial-cluster lists %d members (%s): give the restored cluster's initial cluster (InitialCluster)",
					m.Component, len(names), strings.Join(names, ", "))
			}
		}
		var parts []string
		for _, p := range cidr.Split(peers) {
			parts = append(parts, name+"="+p)
		}
		want = strings.Join(parts, ",")
	}
	// etcd refuses to start when --initial-cluster does not list the
	// member's --initial-advertise-peer-urls under its --name.
	entries, err := parseInitialCluster(want)
	if err != nil {
		return fmt.Errorf("%s: --initial-cluster: %w", m.Component, err)
	}
	var listed []string
	for _, e := range entries {
		if e.name == name {
			listed = append(listed, e.url)
		}
	}
	if !sameURLSet(listed, cidr.Split(peers)) {
		return fmt.Errorf("%s: --initial-cluster %q must list member %q with its peer URLs %q (it lists %q); etcd would not start",
			m.Component, want, name, peers, strings.Join(listed, ","))
	}
	if _, err := u.setFlag(m, l, "initial-cluster", want, true, ""); err != nil {
		return err
	}
	state, found, err := l.get("initial-cluster-state")
	if err != nil {
		return err
	}
	if found && state != "new" {
		if _, err := u.setFlag(m, l, "initial-cluster-state", "new", false,
			"a restored data dir is a new cluster"); err != nil {
			return err
		}
	}
	return nil
}

func sameURLSet(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y string) bool { return sameURL(x, y) }) {
			return false
		}
	}
	return true
}

// dataDir moves etcd to the restored data dir: --data-dir, and the hostPath
// volume mounted at the data dir, so that the container sees the new host
// directory.
func (u *updater) dataDir(m *Manifest, l cmdLine, dir string) error {
	old, found, err := l.get("data-dir")
	if err != nil {
		return err
	}
	if !found || old == "" {
		return fmt.Errorf("%s: the container has no --data-dir; set it and its volume by hand", m.Component)
	}
	c, _ := m.Container()
	oldClean := filepath.Clean(old)
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if filepath.Clean(c.VolumeMounts[i].MountPath) == oldClean {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		return fmt.Errorf("%s: no volume is mounted at the data dir %s; set the data dir and its volume by hand", m.Component, old)
	}
	var vol *corev1.Volume
	for i := range m.Pod.Spec.Volumes {
		if m.Pod.Spec.Volumes[i].Name == mount.Name {
			vol = &m.Pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.HostPath == nil {
		return fmt.Errorf("%s: the data dir %s is mounted from volume %q, which is not a hostPath volume; set it by hand", m.Component, old, mount.Name)
	}
	hostOld := vol.HostPath.Path
	if filepath.Clean(hostOld) == filepath.Clean(dir) {
		return nil
	}
	if filepath.Clean(hostOld) != oldClean {
		// The host directory is mounted at another container path: only the
		// host side moves.
		vol.HostPath.Path = dir
		u.record(m, "volume "+vol.Name+" hostPath.path", ActionSet, hostOld, dir,
			fmt.Sprintf("mounted at %s in the container, which stays the --data-dir", mount.MountPath))
		return nil
	}
	if _, err := u.setFlag(m, l, "data-dir", dir, false, ""); err != nil {
		return err
	}
	u.record(m, "volumeMount "+mount.Name+" mountPath", ActionSet, mount.MountPath, dir, "")
	mount.MountPath = dir
	u.record(m, "volume "+vol.Name+" hostPath.path", ActionSet, hostOld, dir, "")
	vol.HostPath.Path = dir
	return nil
}

func (u *updater) etcdServers(ch Changes) error {
	if len(ch.EtcdServers) > 0 {
		m, l, err := u.need(KubeAPIServer, "the etcd servers")
		if err != nil {
			return err
		}
		_, err = u.setFlag(m, l, "etcd-servers", strings.Join(ch.EtcdServers, ","), true, "")
		return err
	}
	if ch.EtcdMember.ClientURL == "" || len(u.oldClientURLs) == 0 || !u.set.Has(KubeAPIServer) {
		return nil
	}
	m, l, err := u.need(KubeAPIServer, "the etcd servers")
	if err != nil {
		return err
	}
	cur, found, err := l.get("etcd-servers")
	if err != nil || !found {
		return err
	}
	var out []string
	for _, e := range cidr.Split(cur) {
		if slices.ContainsFunc(u.oldClientURLs, func(o string) bool { return sameURL(o, e) }) {
			e = ch.EtcdMember.ClientURL
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if v := strings.Join(out, ","); v != cur {
		_, err = u.setFlag(m, l, "etcd-servers", v, false, "the etcd member's client URL moved")
	}
	return err
}

func (u *updater) advertiseAddress(ch Changes) error {
	addr := ch.AdvertiseAddress
	if addr == "" {
		return nil
	}
	m, l, err := u.need(KubeAPIServer, "the advertise address")
	if err != nil {
		return err
	}
	old, found, err := l.get("advertise-address")
	if err != nil {
		return err
	}
	endpoint, hasEndpoint := m.Pod.Annotations[APIServerAdvertiseAddressAnnotation]
	epHost, epPort, epErr := net.SplitHostPort(endpoint)
	if !found && hasEndpoint && epErr == nil {
		old = epHost
	}
	if _, err := u.setFlag(m, l, "advertise-address", addr, true, ""); err != nil {
		return err
	}
	port := epPort
	if !hasEndpoint || epErr != nil {
		port = "6443"
		if p, ok, err := l.get("secure-port"); err != nil {
			return err
		} else if ok {
			port = p
		}
	}
	u.setAnnotation(m, APIServerAdvertiseAddressAnnotation, net.JoinHostPort(addr, port))
	// kubeadm probes the apiserver at its advertise address.
	if old == "" {
		return nil
	}
	c, _ := m.Container()
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if p.probe != nil && p.probe.HTTPGet != nil && p.probe.HTTPGet.Host != addr && sameHost(p.probe.HTTPGet.Host, old) {
			u.record(m, p.name+" httpGet.host", ActionSet, p.probe.HTTPGet.Host, addr, "kubeadm probes the advertise address")
			p.probe.HTTPGet.Host = addr
		}
	}
	return nil
}
