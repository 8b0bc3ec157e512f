package rebuild

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/bundle"
	"github.com/snapshift/snapshift/manifests"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/wellknown"
)

// DefaultEncryptionConfigPath is where a rebuild that adds
// --encryption-provider-config puts the file on each node.
const DefaultEncryptionConfigPath = "/etc/kubernetes/enc/encryption-config.yaml"

// MissingFile is a file a manifest flag names that the bundle does not
// hold (an audit policy, an OIDC CA...).
type MissingFile struct {
	Component string `json:"component"`
	Flag      string `json:"flag"`
	Path      string `json:"path"`
}

// readConfig reads the snapshot's kubeadm ClusterConfiguration: its
// extraArgs, extraVolumes and SANs are carried into every node's bundle.
func (r *run) readConfig(ctx context.Context) error {
	var names []string
	for _, n := range r.cfg.Nodes() {
		names = append(names, n.NodeName)
	}
	oldToken, from, err := oldEtcdToken(r.cfg)
	if err != nil {
		return err
	}
	rec, err := readRecorded(ctx, r.cfg.Snapshot, r.cfg.SkipHashCheck, r.enc, names, oldToken)
	if err != nil {
		return err
	}
	if err := r.chooseEtcdToken(rec.oldEtcd, oldToken, from); err != nil {
		return err
	}
	r.noteMoves(rec)
	r.restart, r.cnis, r.detected = rec.workloads.workloads, rec.workloads.cnis, rec.workloads
	r.cgroupV1 = rec.cgroupV1
	for _, n := range rec.nodeNames {
		if !slices.Contains(names, n) && !slices.Contains(r.workers, n) {
			r.workers = append(r.workers, n)
		}
	}
	slices.Sort(r.workers)
	cc := rec.cc
	r.cc, r.etcdPrefix = cc, rec.etcdPrefix
	if err := r.honourClusterConfiguration(cc); err != nil {
		return err
	}
	r.noteMemberNames()
	if cc == nil {
		r.report.ClusterConfiguration = append(r.report.ClusterConfiguration, "the snapshot has no kubeadm-config ClusterConfiguration: manifests are kubeadm's defaults plus this rebuild's values")
		return nil
	}
	note := func(f string, a ...any) {
		r.report.ClusterConfiguration = append(r.report.ClusterConfiguration, fmt.Sprintf(f, a...))
	}
	note("read kubeadm-config ClusterConfiguration %s (kubernetesVersion %s)", cc.APIVersion, cc.KubernetesVersion)
	if r.cfg.Networking.ControlPlaneEndpoint == "" && cc.ControlPlaneEndpoint != "" {
		ep := r.movedEndpoint(cc.ControlPlaneEndpoint)
		r.cfg.Networking.ControlPlaneEndpoint, r.cfg.PKI.ControlPlaneEndpoint = ep, ep
		if ep == cc.ControlPlaneEndpoint {
			note("controlPlaneEndpoint %s kept (admin.conf, the join command and every apiserver certificate use it)", ep)
		} else {
			note("controlPlaneEndpoint %s -> %s: its node moved (give networking.controlPlaneEndpoint to choose another)", cc.ControlPlaneEndpoint, ep)
		}
	}
	for _, c := range []struct {
		name string
		comp ControlPlaneComponent
	}{{"apiServer", cc.APIServer.ControlPlaneComponent}, {"controllerManager", cc.ControllerManager}, {"scheduler", cc.Scheduler}} {
		if len(c.comp.ExtraArgs)+len(c.comp.ExtraVolumes)+len(c.comp.ExtraEnvs) > 0 {
			note("%s: %d extraArgs, %d extraVolumes, %d extraEnvs %s", c.name, len(c.comp.ExtraArgs), len(c.comp.ExtraVolumes), len(c.comp.ExtraEnvs), r.carried())
		}
	}
	if l := cc.Etcd.Local; l != nil && len(l.ExtraArgs)+len(l.ExtraEnvs) > 0 {
		note("etcd.local: %d extraArgs, %d extraEnvs %s (member flags are this rebuild's)", len(l.ExtraArgs), len(l.ExtraEnvs), r.carried())
	}
	if cc.Etcd.External != nil {
		note("etcd.external: the cluster uses an external etcd; the bundle's etcd manifests are for the restored members")
	}
	if len(cc.APIServer.CertSANs) > 0 {
		note("apiServer.certSANs %s added to every apiserver certificate", strings.Join(cc.APIServer.CertSANs, ", "))
	}
	if len(cc.FeatureGates) > 0 {
		note("kubeadm featureGates %v are kubeadm's own, not component flags: not applied", cc.FeatureGates)
	}
	return nil
}

// carried says where kubeadm-config's per-component settings went: into
// the generated manifests, or nowhere (the nodes' own manifests are
// rewritten, and hold what they hold).
func (r *run) carried() string {
	if r.cfg.Manifests.Source != "" {
		return "in kubeadm-config, not applied: manifests.source's manifests are kept as they are but for the migration's flags"
	}
	return "carried into that component's generated manifest"
}

// noteMemberNames notes each etcd member that runs under its node's name
// (etcd --name, the restore's member name and --initial-cluster), as
// kubeadm renders it: the next kubeadm upgrade renders --name=<node>.
func (r *run) noteMemberNames() {
	for _, n := range r.cfg.Nodes() {
		if n.Name != n.NodeName {
			r.report.ClusterConfiguration = append(r.report.ClusterConfiguration, fmt.Sprintf(
				"etcd member %s is restored and run as %s, its node's name, as kubeadm names every stacked etcd member (its data dir in the bundle keeps the name %s)",
				n.Name, n.NodeName, n.Name))
		}
	}
}

// noteMoves records the nodes whose recorded address is not their new one:
// the control-plane-address rule moves them in the snapshot.
func (r *run) noteMoves(rec *recorded) {
	r.moved = map[netip.Addr]netip.Addr{}
	for _, n := range r.cfg.Nodes() {
		old, ok := rec.addrs[n.NodeName]
		if !ok || old.String() == n.AdvertiseAddress {
			continue
		}
		r.moved[old] = netip.MustParseAddr(n.AdvertiseAddress)
		r.report.ClusterConfiguration = append(r.report.ClusterConfiguration,
			fmt.Sprintf("node %s moves from %s to %s: the snapshot's copies of its address move with it (rule %s)", n.NodeName, old, n.AdvertiseAddress, rules.NameControlPlaneAddress))
	}
}

// movedEndpoint is the recorded endpoint with its host moved when it is a
// moved node's address.
func (r *run) movedEndpoint(ep string) string {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		host, port = ep, ""
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return ep
	}
	n, ok := r.moved[a.Unmap()]
	switch {
	case !ok:
		return ep
	case port == "":
		return n.String()
	}
	return net.JoinHostPort(n.String(), port)
}

// manifests writes each node's static-pod manifests: the existing ones
// rewritten (only the flags that change, the node's own addresses) or,
// with no source, kubeadm's defaults plus the snapshot's
// ClusterConfiguration plus this rebuild's values.
func (r *run) manifests(context.Context) error {
	c := r.cfg
	var src *manifests.Set
	if c.Manifests.Source != "" {
		var err error
		if src, err = manifests.Read(c.Manifests.Source); err != nil {
			return err
		}
	} else if r.serviceCIDR() == "" || r.podCIDR() == "" {
		return fmt.Errorf("generating manifests needs networking.serviceSubnet and networking.podSubnet (give the current ones if they do not change)")
	}
	if v := c.Manifests.KubernetesVersion; manifests.NewerThanTested(v) {
		r.logf("manifests", "note: kubernetesVersion %s is newer than %s, the newest release snapshift's tests judge: that release's kubeadm and kube-apiserver have never checked these manifests; compare them with what its kubeadm writes before the window",
			v, manifests.NewestKubernetesVersion)
	}
	for _, n := range c.Nodes() {
		if err := r.nodeManifests(n, src); err != nil {
			return fmt.Errorf("node %s: %w", n.NodeName, err)
		}
	}
	r.report.MissingFiles = r.missingFiles()
	return nil
}

func (r *run) nodeManifests(n Node, src *manifests.Set) error {
	c := r.cfg
	var set *manifests.Set
	if src != nil {
		var changes []manifests.Change
		var err error
		set, changes, err = manifests.Update(src, manifests.Changes{
			ServiceCIDR: c.Networking.ServiceCIDR, PodCIDR: c.Networking.PodNetworkCIDR,
			EtcdMember:     manifests.EtcdMember{Name: n.NodeName, PeerURL: n.PeerURL, ClientURL: n.ClientURL},
			InitialCluster: c.InitialCluster(), InitialClusterToken: r.etcdToken, DataDir: c.Etcd.DataDir, AdvertiseAddress: n.AdvertiseAddress,
		})
		if err != nil {
			return err
		}
		for _, ch := range changes {
			r.report.Manifests = append(r.report.Manifests, n.NodeName+": "+ch.String())
		}
	} else {
		gc, err := r.generateConfig(n)
		if err != nil {
			return err
		}
		if set, err = manifests.Generate(gc); err != nil {
			return err
		}
		r.report.Manifests = append(r.report.Manifests, fmt.Sprintf("%s: generated kubeadm-equivalent manifests (advertise %s, etcd member %s)", n.NodeName, n.AdvertiseAddress, n.NodeName))
	}
	res := bundle.Node{Name: n.NodeName, EtcdMember: n.Name, AdvertiseAddress: n.AdvertiseAddress, Dir: bundle.NodeDir(n.NodeName)}
	if err := r.placeEncryptionConfig(n, set, &res); err != nil {
		return err
	}
	// The bundle's directory is new: backups, if any, go outside the
	// manifest dir (kubelet would load a .bak there as a static pod).
	w, err := manifests.WriteWith(set, manifests.WriteOptions{Dir: r.nodePath(n, "manifests"), Force: true, BackupDir: r.nodePath(n, "manifests-backup")})
	if err != nil {
		return err
	}
	for _, p := range w.Written() {
		r.report.Manifests = append(r.report.Manifests, "wrote "+p)
	}
	r.report.Nodes = append(r.report.Nodes, res)
	r.logf("manifests", "%s: %d manifests in %s", n.NodeName, len(w.Written()), filepath.Join(bundle.KubeDir, n.NodeName, "manifests"))
	return nil
}

// generateConfig is node n's manifests: kubeadm's defaults, then the
// snapshot's ClusterConfiguration, then this rebuild's values.
func (r *run) generateConfig(n Node) (manifests.GenerateConfig, error) {
	c := r.cfg
	var ms []manifests.EtcdMember
	for _, m := range c.Etcd.Members {
		ms = append(ms, manifests.EtcdMember{Name: m.NodeName, PeerURL: m.PeerURL, ClientURL: m.ClientURL})
	}
	gc := manifests.GenerateConfig{
		KubernetesVersion: c.Manifests.KubernetesVersion, ImageRepository: c.Manifests.ImageRepository,
		NodeName: n.NodeName, AdvertiseAddress: n.AdvertiseAddress,
		ServiceCIDR: r.serviceCIDR(), PodCIDR: r.podCIDR(), DNSDomain: c.Networking.DNSDomain,
		EtcdMembers: ms, EtcdDataDir: c.Etcd.DataDir,
	}
	if cc := r.cc; cc != nil {
		gc.APIServerExtraArgs = r.ownArgs(cc.APIServer.ExtraArgs, "advertise-address", "service-cluster-ip-range", "etcd-servers")
		gc.ControllerManagerExtraArgs = r.ownArgs(cc.ControllerManager.ExtraArgs, "cluster-cidr", "service-cluster-ip-range")
		gc.SchedulerExtraArgs = cc.Scheduler.ExtraArgs
		gc.APIServerExtraVolumes = cc.APIServer.ExtraVolumes
		gc.ControllerManagerExtraVolumes = cc.ControllerManager.ExtraVolumes
		gc.SchedulerExtraVolumes = cc.Scheduler.ExtraVolumes
		gc.APIServerEnv, gc.ControllerManagerEnv, gc.SchedulerEnv = cc.APIServer.ExtraEnvs, cc.ControllerManager.ExtraEnvs, cc.Scheduler.ExtraEnvs
		if cc.ClusterName != "" {
			gc.ClusterName = cc.ClusterName
		}
		if c.Manifests.ImageRepository == "" && cc.ImageRepository != "" {
			gc.ImageRepository = cc.ImageRepository
		}
		if l := cc.Etcd.Local; l != nil {
			gc.EtcdExtraArgs = r.ownArgs(l.ExtraArgs, "name", "initial-cluster", "initial-cluster-state", "initial-advertise-peer-urls",
				"advertise-client-urls", "listen-client-urls", "listen-peer-urls", "data-dir")
			gc.EtcdImageTag, gc.EtcdImageRepository = l.ImageTag, l.ImageRepository
			gc.EtcdEnv = l.ExtraEnvs
		}
	}
	if p := r.etcdPrefix; p != "" && p != wellknown.DefaultPrefix {
		// The cluster kept its objects under another prefix: so must the new apiserver.
		if _, ok := argValue(gc.APIServerExtraArgs, "etcd-prefix"); !ok {
			gc.APIServerExtraArgs = append(gc.APIServerExtraArgs, manifests.Arg{Name: "etcd-prefix", Value: strings.TrimSuffix(p, "/")})
		}
	}
	if c.EncryptionConfig != "" {
		if _, ok := argValue(gc.APIServerExtraArgs, "encryption-provider-config"); !ok {
			gc.APIServerExtraArgs = append(gc.APIServerExtraArgs, manifests.Arg{Name: "encryption-provider-config", Value: DefaultEncryptionConfigPath})
		}
		p, _ := argValue(gc.APIServerExtraArgs, "encryption-provider-config")
		if !mounted(gc, p) {
			gc.APIServerExtraVolumes = append(gc.APIServerExtraVolumes, manifests.HostPathMount{Name: "encryption-config",
				HostPath: filepath.Dir(p), MountPath: filepath.Dir(p), ReadOnly: true, PathType: corev1.HostPathDirectoryOrCreate})
		}
	}
	return gc, nil
}

// ownArgs drops the extra arguments whose values this rebuild sets per node
// (the rebuild's values win), noting each one dropped.
func (r *run) ownArgs(extra ExtraArgs, names ...string) []manifests.Arg {
	var out []manifests.Arg
	for _, a := range extra {
		if slices.Contains(names, a.Name) {
			note := fmt.Sprintf("kubeadm-config extraArg --%s=%s replaced by this rebuild's per-node value", a.Name, a.Value)
			if !slices.Contains(r.report.ClusterConfiguration, note) {
				r.report.ClusterConfiguration = append(r.report.ClusterConfiguration, note)
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func argValue(args []manifests.Arg, name string) (string, bool) {
	for i := len(args) - 1; i >= 0; i-- {
		if args[i].Name == name {
			return args[i].Value, true
		}
	}
	return "", false
}

// mounted reports whether the apiserver container sees host path p at the
// same path: under the cert dir or an extra volume mounted as is.
func mounted(gc manifests.GenerateConfig, p string) bool {
	if under(p, "/etc/kubernetes/pki") {
		return true
	}
	for _, v := range gc.APIServerExtraVolumes {
		if v.HostPath == v.MountPath && under(p, v.HostPath) {
			return true
		}
	}
	return false
}

func under(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// bundleFor is where host path p of node n is in the bundle:
// kubernetes/<node>/ mirrors /etc/kubernetes/, kubernetes/<node>/host/
// mirrors any other path.
func bundleFor(n Node, p string) string {
	if under(p, "/etc/kubernetes") {
		rel, _ := filepath.Rel("/etc/kubernetes", p)
		return filepath.Join(bundle.KubeDir, n.NodeName, rel)
	}
	return filepath.Join(bundle.KubeDir, n.NodeName, bundle.HostDir, p)
}

// placeEncryptionConfig copies the EncryptionConfiguration (it holds keys:
// 0600) to where the node's kube-apiserver flag names it.
func (r *run) placeEncryptionConfig(n Node, set *manifests.Set, res *bundle.Node) error {
	if r.cfg.EncryptionConfig == "" {
		return nil
	}
	p, ok := manifestFlag(set, manifests.KubeAPIServer, "encryption-provider-config")
	if !ok {
		r.report.Manifests = append(r.report.Manifests, n.NodeName+": kube-apiserver has no --encryption-provider-config: add it, or the apiserver cannot read encrypted values")
		return nil
	}
	b, err := os.ReadFile(r.cfg.EncryptionConfig)
	if err != nil {
		return err
	}
	rel := bundleFor(n, p)
	if err := os.MkdirAll(filepath.Dir(r.path(rel)), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(r.path(rel), b, 0o600); err != nil {
		return err
	}
	res.Files = append(res.Files, bundle.HostFile{Bundle: rel, Host: p})
	return nil
}

// manifestFlag is the value of --name in a component's command.
func manifestFlag(set *manifests.Set, component, name string) (string, bool) {
	for _, f := range flags(set) {
		if f.comp == component && f.name == name {
			return f.value, true
		}
	}
	return "", false
}

type flag struct{ comp, name, value string }

func flags(set *manifests.Set) []flag {
	var out []flag
	for _, m := range set.Manifests {
		ctr, err := m.Container()
		if err != nil {
			continue
		}
		for _, a := range append(append([]string(nil), ctr.Command...), ctr.Args...) {
			name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if ok && strings.HasPrefix(a, "--") {
				out = append(out, flag{m.Component, name, value})
			}
		}
	}
	return out
}

// fileFlag reports whether a flag names an input file by kube
// convention (…-file, …-config, kubeconfig), not a log or data path.
func fileFlag(name string) bool {
	switch name {
	case "log-file", "audit-log-path", "data-dir", "wal-dir", "cert-dir":
		return false
	}
	return strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "-config") || strings.HasSuffix(name, "kubeconfig")
}

// missingFiles lists the files the written manifests name that no node's
// bundle directory holds.
func (r *run) missingFiles() []MissingFile {
	seen := map[MissingFile]bool{}
	var out []MissingFile
	for _, n := range r.cfg.Nodes() {
		set, err := manifests.Read(r.nodePath(n, "manifests"))
		if err != nil {
			continue
		}
		for _, f := range flags(set) {
			if !fileFlag(f.name) {
				continue
			}
			for _, p := range strings.Split(f.value, ",") {
				if !filepath.IsAbs(p) || (!r.cfg.NewPKI() && strings.HasSuffix(p, ".conf")) {
					continue // planned: the nodes keep theirs, or get new ones (moved)
				}
				if _, err := os.Stat(r.path(bundleFor(n, p))); err == nil {
					continue
				}
				mf := MissingFile{Component: f.comp, Flag: "--" + f.name, Path: p}
				if !seen[mf] {
					seen[mf] = true
					out = append(out, mf)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
