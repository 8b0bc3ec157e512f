package manifests

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/option"
)

// kubeadm v1.36's defaults (cmd/kubeadm/app/constants and
// apis/kubeadm/v1beta4/defaults.go).
const (
	DefaultImageRepository  = "registry.k8s.io"
	DefaultAPIServerPort    = 6443
	DefaultServiceCIDR      = "10.96.0.0/12"
	DefaultDNSDomain        = "cluster.local"
	DefaultClusterName      = "kubernetes"
	DefaultCertDir          = "/etc/kubernetes/pki"
	DefaultKubeconfigDir    = "/etc/kubernetes"
	DefaultEtcdDataDir      = "/var/lib/etcd"
	DefaultNodeCIDRMaskSize = 24
	// DefaultEtcdImageTag is the etcd kubeadm v1.34-v1.36 deploy
	// (constants.SupportedEtcdVersion).
	DefaultEtcdImageTag = "3.6.8-0"
	// DefaultHealthCheckTimeout is kubeadm's control-plane component health
	// check timeout; the startup probes allow for it.
	DefaultHealthCheckTimeout = 4 * time.Minute

	etcdClientPort            = 2379
	etcdPeerPort              = 2380
	etcdMetricsPort           = 2381
	kubeControllerManagerPort = 10257
	kubeSchedulerPort         = 10259
	probePort                 = "probe-port"
	// systemNodeCriticalPriority is the value of the system-node-critical
	// PriorityClass, which kubeadm writes beside the class name.
	systemNodeCriticalPriority int32 = 2000001000
)

// Arg is one extra command-line argument, as kubeadm's extraArgs: Name is
// the flag without dashes. An extra argument replaces the default one of the
// same name; extra arguments follow the sorted defaults in their own order.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HostPathMount is one extra hostPath volume of a component, as kubeadm's
// extraVolumes: mounted at MountPath, PathType as given (empty: no check).
// One with the name of a default volume replaces it.
type HostPathMount struct {
	Name      string              `json:"name"`
	HostPath  string              `json:"hostPath"`
	MountPath string              `json:"mountPath"`
	ReadOnly  bool                `json:"readOnly,omitempty"`
	PathType  corev1.HostPathType `json:"pathType,omitempty"`
}

// OldestKubernetesVersion is the oldest Kubernetes snapshift supports: the
// oldest release make e2e migrates and judges with its own kubeadm,
// kube-apiserver and kube-controller-manager (hack/e2e.sh's versions; a
// test keeps the two the same). kubeadm and the apiserver of an older
// release have never judged what snapshift writes for it.
const OldestKubernetesVersion = "v1.30"

// NewestKubernetesVersion is the newest Kubernetes make e2e judges (its
// newest default version; a test keeps the two the same). A newer one is
// taken, with a note: its manifests carry this release's flags.
const NewestKubernetesVersion = "v1.36"

// NewerThanTested reports whether v (a version CheckKubernetesVersion
// accepts) is a minor release after NewestKubernetesVersion.
func NewerThanTested(v string) bool {
	sv, err := version.ParseSemantic(strings.TrimPrefix(v, "v"))
	if err != nil {
		return false
	}
	newest := version.MustParseGeneric(strings.TrimPrefix(NewestKubernetesVersion, "v"))
	return sv.Major() > newest.Major() || sv.Major() == newest.Major() && sv.Minor() > newest.Minor()
}

// CheckKubernetesVersion says what is wrong with a control plane version,
// as a clause after the version's name: not a version like v1.36.3, or one
// older than OldestKubernetesVersion.
func CheckKubernetesVersion(v string) error {
	sv, err := version.ParseSemantic(strings.TrimPrefix(v, "v"))
	if err != nil || !strings.HasPrefix(v, "v") {
		return fmt.Errorf("%q is not a version like v1.36.3", v)
	}
	oldest := version.MustParseGeneric(strings.TrimPrefix(OldestKubernetesVersion, "v"))
	if sv.Major() < oldest.Major() || sv.Major() == oldest.Major() && sv.Minor() < oldest.Minor() {
		return fmt.Errorf("%q is older than %s, the oldest Kubernetes snapshift supports", v, OldestKubernetesVersion)
	}
	return nil
}

// GenerateConfig describes the control plane Generate builds. Each field
// documents its default; SetDefaults applies them.
type GenerateConfig struct {
	// KubernetesVersion is the control plane's version, e.g. v1.36.3: the
	// tag of the kube-apiserver, kube-controller-manager and kube-scheduler
	// images. Required.
	KubernetesVersion string `json:"kubernetesVersion"`
	// ImageRepository holds the control-plane and etcd images. Default
	// registry.k8s.io.
	ImageRepository string `json:"imageRepository,omitempty"`
	// EtcdImageRepository overrides ImageRepository for etcd.
	EtcdImageRepository string `json:"etcdImageRepository,omitempty"`
	// EtcdImageTag is the etcd image tag. Default 3.6.8-0 (kubeadm v1.34 to
	// v1.36). It must be at least the version that wrote the snapshot.
	EtcdImageTag string `json:"etcdImageTag,omitempty"`

	// NodeName is this control-plane node's name: etcd's --name unless the
	// local member is given. Required when EtcdMembers is empty.
	NodeName string `json:"nodeName,omitempty"`
	// AdvertiseAddress is the API server's advertise address (and, without
	// EtcdMembers, the local etcd member's). Required.
	AdvertiseAddress string `json:"advertiseAddress"`
	// BindPort is the API server's secure port. Default 6443.
	BindPort int32 `json:"bindPort,omitempty"`

	// ServiceCIDR is the Service CIDR (kubeadm's serviceSubnet),
	// comma-separated for dual stack. Default 10.96.0.0/12.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// PodCIDR is the Pod CIDR (kubeadm's podSubnet). Optional: when set,
	// kube-controller-manager allocates node CIDRs from it
	// (--allocate-node-cidrs, --cluster-cidr, --service-cluster-ip-range).
	PodCIDR string `json:"podCIDR,omitempty"`
	// NodeCIDRMaskSize is the size of each node's Pod CIDR for a
	// single-stack PodCIDR. Default 24 for IPv4 and 64 for IPv6 —
	// kube-controller-manager's own defaults, so that, as with kubeadm, no
	// flag is written; another value is written as --node-cidr-mask-size.
	NodeCIDRMaskSize int `json:"nodeCIDRMaskSize,omitempty"`
	// DNSDomain is the cluster DNS domain (service-account-issuer). Default
	// cluster.local.
	DNSDomain string `json:"dnsDomain,omitempty"`
	// ClusterName is kube-controller-manager's --cluster-name. Default kubernetes.
	ClusterName string `json:"clusterName,omitempty"`

	// CertDir is the certificate directory. Default /etc/kubernetes/pki.
	CertDir string `json:"certDir,omitempty"`
	// KubeconfigDir holds controller-manager.conf and scheduler.conf.
	// Default /etc/kubernetes.
	KubeconfigDir string `json:"kubeconfigDir,omitempty"`
	// CACertPaths are the extra CA directories mounted read-only into
	// kube-apiserver and kube-controller-manager beside /etc/ssl/certs
	// (kubeadm mounts those of /etc/pki/ca-trust, /etc/pki/tls/certs,
	// /etc/ca-certificates, /usr/share/ca-certificates and
	// /usr/local/share/ca-certificates that exist on the node, because
	// /etc/ssl/certs may link into them). Default none.
	CACertPaths []string `json:"caCertPaths,omitempty"`

	// EtcdMembers are the members of the restored etcd cluster; the local
	// one is named NodeName (or is the only one) and its URLs are etcd's
	// advertise and listen URLs. Default: NodeName at AdvertiseAddress,
	// ports 2379 and 2380, as kubeadm's stacked etcd.
	EtcdMembers []EtcdMember `json:"etcdMembers,omitempty"`
	// EtcdDataDir is etcd's data dir on the host. Default /var/lib/etcd.
	EtcdDataDir string `json:"etcdDataDir,omitempty"`
	// EtcdServers is kube-apiserver's --etcd-servers. Default the local
	// etcd on loopback (https://127.0.0.1:2379, or [::1] for an IPv6
	// advertise address), as kubeadm.
	EtcdServers []string `json:"etcdServers,omitempty"`

	// Extra arguments per component (kubeadm's extraArgs).
	APIServerExtraArgs         []Arg `json:"apiServerExtraArgs,omitempty"`
	ControllerManagerExtraArgs []Arg `json:"controllerManagerExtraArgs,omitempty"`
	SchedulerExtraArgs         []Arg `json:"schedulerExtraArgs,omitempty"`
	EtcdExtraArgs              []Arg `json:"etcdExtraArgs,omitempty"`
	// Extra hostPath volumes per component (kubeadm's extraVolumes), added
	// after the defaults.
	APIServerExtraVolumes         []HostPathMount `json:"apiServerExtraVolumes,omitempty"`
	ControllerManagerExtraVolumes []HostPathMount `json:"controllerManagerExtraVolumes,omitempty"`
	SchedulerExtraVolumes         []HostPathMount `json:"schedulerExtraVolumes,omitempty"`
	// Env is set in kube-apiserver, kube-controller-manager and
	// kube-scheduler, sorted by name (kubeadm copies its own *_proxy
	// variables there). Default none.
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Extra environment variables per component (kubeadm's extraEnvs:
	// apiServer, controllerManager, scheduler, etcd.local), merged after
	// Env (one of the same name replaces it) and sorted by name, as
	// kubeadm's MergeKubeadmEnvVars. etcd gets only EtcdEnv.
	APIServerEnv         []corev1.EnvVar `json:"apiServerEnv,omitempty"`
	ControllerManagerEnv []corev1.EnvVar `json:"controllerManagerEnv,omitempty"`
	SchedulerEnv         []corev1.EnvVar `json:"schedulerEnv,omitempty"`
	EtcdEnv              []corev1.EnvVar `json:"etcdEnv,omitempty"`

	// Components are the manifests to build. Default all four; leave out
	// etcd for an external etcd.
	Components []string `json:"components,omitempty"`
}

// SetDefaults fills the defaulted fields that are zero.
func (c *GenerateConfig) SetDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.ImageRepository, DefaultImageRepository)
	def(&c.EtcdImageRepository, c.ImageRepository)
	def(&c.EtcdImageTag, DefaultEtcdImageTag)
	def(&c.ServiceCIDR, DefaultServiceCIDR)
	def(&c.DNSDomain, DefaultDNSDomain)
	def(&c.ClusterName, DefaultClusterName)
	def(&c.CertDir, DefaultCertDir)
	def(&c.KubeconfigDir, DefaultKubeconfigDir)
	def(&c.EtcdDataDir, DefaultEtcdDataDir)
	if c.BindPort == 0 {
		c.BindPort = DefaultAPIServerPort
	}
	if len(c.Components) == 0 {
		c.Components = Components()
	}
}

// Validate checks the configuration (defaults applied first).
func (c GenerateConfig) Validate() error {
	c.SetDefaults()
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.KubernetesVersion == "" {
		add(option.Errorf("KubernetesVersion", "{} is required"))
	} else if err := CheckKubernetesVersion(c.KubernetesVersion); err != nil {
		add(option.Errorf("KubernetesVersion", "{} %w", err))
	}
	if a, err := netip.ParseAddr(c.AdvertiseAddress); err != nil || a.Zone() != "" || a.Is4In6() {
		add(option.Errorf("AdvertiseAddress", "{} %q is not %s", c.AdvertiseAddress, parseerr.IP))
	}
	if c.BindPort < 1 || c.BindPort > 65535 {
		add(option.Errorf("BindPort", "{} %d is not in 1-65535", c.BindPort))
	}
	if _, err := cidr.ParseUsable(c.ServiceCIDR); err != nil {
		add(option.Errorf("ServiceCIDR", "{}: %w", err))
	}
	if c.PodCIDR != "" {
		ps, err := cidr.ParseUsable(c.PodCIDR)
		if err != nil {
			add(option.Errorf("PodCIDR", "{}: %w", err))
		} else if c.NodeCIDRMaskSize != 0 {
			if len(ps) > 1 {
				add(option.Errorf("NodeCIDRMaskSize", "{} applies to a single-stack {PodCIDR}; give --node-cidr-mask-size-ipv4/-ipv6 as controller-manager extra args"))
			} else if m := c.NodeCIDRMaskSize; m < ps[0].Bits() || m-ps[0].Bits() > 16 || m > ps[0].Addr().BitLen() {
				add(option.Errorf("NodeCIDRMaskSize", "{} /%d does not fit the pod CIDR %s (between /%d and /%d)", m, ps[0], ps[0].Bits(), ps[0].Bits()+16))
			}
		}
	}
	errs = append(errs, c.pathErrors()...)
	seen := map[string]bool{}
	for i, m := range c.EtcdMembers {
		switch {
		case m.Name == "":
			add(option.Errorf("EtcdMembers", "{}: member %d has no name", i))
		case seen[m.Name]:
			add(option.Errorf("EtcdMembers", "{}: member %q is listed twice", m.Name))
		case m.PeerURL == "":
			add(option.Errorf("EtcdMembers", "{}: member %q has no peer URL", m.Name))
		}
		seen[m.Name] = true
		if m.PeerURL != "" {
			if err := checkURL(m.PeerURL); err != nil {
				add(option.Errorf("EtcdMembers", "{}: member %q: %w", m.Name, err))
			}
		}
		if m.ClientURL != "" {
			if err := checkURL(m.ClientURL); err != nil {
				add(option.Errorf("EtcdMembers", "{}: member %q: %w", m.Name, err))
			}
		}
	}
	if len(c.EtcdMembers) == 0 && c.NodeName == "" && slices.Contains(c.Components, Etcd) {
		add(option.Errorf("NodeName", "{} is required (it names the etcd member)"))
	}
	if len(c.EtcdMembers) > 0 && slices.Contains(c.Components, Etcd) {
		if _, err := c.localMember(); err != nil {
			add(err)
		}
	}
	for _, s := range c.EtcdServers {
		if err := checkURL(s); err != nil {
			add(option.Errorf("EtcdServers", "{}: %w", err))
		}
	}
	for _, comp := range c.Components {
		add(checkComponent(comp))
	}
	if len(errs) > 0 {
		return errs[0] // one sentence, naming its option
	}
	return nil
}

// pathErrors checks that every host path is absolute.
func (c GenerateConfig) pathErrors() []error {
	var errs []error
	for _, d := range []struct{ name, path string }{{"CertDir", c.CertDir}, {"KubeconfigDir", c.KubeconfigDir}, {"EtcdDataDir", c.EtcdDataDir}} {
		if !filepath.IsAbs(d.path) {
			errs = append(errs, option.Errorf(d.name, "{} %q is not an absolute path", d.path))
		}
	}
	for _, p := range c.CACertPaths {
		if !filepath.IsAbs(p) {
			errs = append(errs, option.Errorf("CACertPaths", "{} %q is not an absolute path", p))
		}
	}
	for _, vs := range [][]HostPathMount{c.APIServerExtraVolumes, c.ControllerManagerExtraVolumes, c.SchedulerExtraVolumes} {
		for _, v := range vs {
			if v.Name == "" || !filepath.IsAbs(v.HostPath) || !filepath.IsAbs(v.MountPath) {
				errs = append(errs, option.Errorf("ExtraVolumes", "{} %q needs a name and absolute hostPath and mountPath (got %q, %q)", v.Name, v.HostPath, v.MountPath))
			}
		}
	}
	return errs
}

// localMember is this node's etcd member, with its client URL defaulted
// to its peer URL's host on the client port.
func (c GenerateConfig) localMember() (EtcdMember, error) {
	if len(c.EtcdMembers) == 0 {
		return EtcdMember{Name: c.NodeName, PeerURL: hostURL(c.AdvertiseAddress, etcdPeerPort), ClientURL: hostURL(c.AdvertiseAddress, etcdClientPort)}, nil
	}
	var m EtcdMember
	var names []string
	found := false
	for _, x := range c.EtcdMembers {
		names = append(names, x.Name)
		if x.Name == c.NodeName {
			m, found = x, true
		}
	}
	if !found {
		if len(c.EtcdMembers) != 1 {
			return EtcdMember{}, option.Errorf("NodeName", "no etcd member is named after {} %q (members: %s)", c.NodeName, strings.Join(names, ", "))
		}
		m = c.EtcdMembers[0]
	}
	if m.ClientURL == "" {
		m.ClientURL = hostURL(urlHost(m.PeerURL), etcdClientPort)
	}
	return m, nil
}

func hostURL(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// Generate builds kubeadm v1.36's static Pods for cfg, as
// cmd/kubeadm/app/phases/controlplane/manifests.go and phases/etcd/local.go
// do (without kubeadm's patches and rootless mode): the same flags, sorted,
// extra arguments last; the same probes, ports, resource requests, hostPath
// volumes and mounts; priorityClassName system-node-critical, hostNetwork
// and the RuntimeDefault seccomp profile. It is pure.
func Generate(cfg GenerateConfig) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("generating manifests: %w", err)
	}
	cfg.SetDefaults()
	set := &Set{}
	for _, comp := range Components() {
		if !slices.Contains(cfg.Components, comp) {
			continue
		}
		var pod *corev1.Pod
		switch comp {
		case KubeAPIServer:
			pod = apiServerPod(cfg)
		case KubeControllerManager:
			pod = controllerManagerPod(cfg)
		case KubeScheduler:
			pod = schedulerPod(cfg)
		case Etcd:
			m, err := cfg.localMember()
			if err != nil {
				return nil, err
			}
			pod = etcdPod(cfg, m)
		}
		set.Manifests = append(set.Manifests, &Manifest{Component: comp, Pod: pod})
	}
	return set, nil
}

// componentPod is kubeadm's staticpod.ComponentPod.
func componentPod(c corev1.Container, volumes []corev1.Volume, annotations map[string]string) *corev1.Pod {
	sort.Slice(volumes, func(i, j int) bool { return volumes[i].Name < volumes[j].Name })
	priority := systemNodeCriticalPriority
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        c.Name,
			Namespace:   metav1.NamespaceSystem,
			Labels:      map[string]string{"component": c.Name, "tier": "control-plane"},
			Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			Containers:        []corev1.Container{c},
			Priority:          &priority,
			PriorityClassName: "system-node-critical",
			HostNetwork:       true,
			Volumes:           volumes,
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
}

// mounts collects a component's hostPath volumes and mounts by name (a
// later one replaces an earlier one of the same name), as kubeadm's
// controlPlaneHostPathMounts; both come out sorted by name.
type mounts struct {
	vols   map[string]corev1.Volume
	mounts map[string]corev1.VolumeMount
}

func (m *mounts) add(name, hostPath string, readOnly bool, t corev1.HostPathType) {
	m.addAt(name, hostPath, hostPath, readOnly, t)
}

func (m *mounts) addAt(name, hostPath, mountPath string, readOnly bool, t corev1.HostPathType) {
	if m.vols == nil {
		m.vols, m.mounts = map[string]corev1.Volume{}, map[string]corev1.VolumeMount{}
	}
	m.vols[name] = hostPathVolume(name, hostPath, t)
	m.mounts[name] = corev1.VolumeMount{Name: name, MountPath: mountPath, ReadOnly: readOnly}
}

// extra adds kubeadm's extraVolumes (AddExtraHostPathMounts).
func (m *mounts) extra(vols []HostPathMount) {
	for _, v := range vols {
		m.addAt(v.Name, v.HostPath, v.MountPath, v.ReadOnly, v.PathType)
	}
}

func (m *mounts) volumes() []corev1.Volume {
	var out []corev1.Volume
	for _, v := range m.vols {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (m *mounts) volumeMounts() []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, v := range m.mounts {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hostPathVolume(name, path string, t corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
}

// caCertMounts are the CA certificate mounts of kube-apiserver and
// kube-controller-manager: /etc/ssl/certs and the extra paths, named as
// kubeadm names them (/etc/pki/ca-trust is etc-pki-ca-trust).
func (c GenerateConfig) caCertMounts(m *mounts) {
	m.add("ca-certs", "/etc/ssl/certs", true, corev1.HostPathDirectoryOrCreate)
	for _, p := range c.CACertPaths {
		m.add(strings.ReplaceAll(p, "/", "-")[1:], p, true, corev1.HostPathDirectoryOrCreate)
	}
}

// command is kubeadm's ArgumentsToCommand: the defaults sorted by name
// (then value), those with an extra argument of the same name dropped, then
// the extra arguments in order, each as --name=value.
func command(binary string, defaults, extra []Arg) []string {
	sort.SliceStable(defaults, func(i, j int) bool {
		if defaults[i].Name == defaults[j].Name {
			return defaults[i].Value < defaults[j].Value
		}
		return defaults[i].Name < defaults[j].Name
	})
	out := []string{binary}
	for _, a := range defaults {
		if !slices.ContainsFunc(extra, func(e Arg) bool { return e.Name == a.Name }) {
			out = append(out, "--"+a.Name+"="+a.Value)
		}
	}
	for _, a := range extra {
		out = append(out, "--"+a.Name+"="+a.Value)
	}
	return out
}

// extraArg returns the last value of extra argument name.
func extraArg(extra []Arg, name string) (string, bool) {
	for i := len(extra) - 1; i >= 0; i-- {
		if extra[i].Name == name {
			return extra[i].Value, true
		}
	}
	return "", false
}

func httpProbe(host, path string, scheme corev1.URIScheme, initialDelay, timeout, failure, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: host, Path: path, Port: intstr.FromString(probePort), Scheme: scheme,
		}},
		InitialDelaySeconds: initialDelay,
		TimeoutSeconds:      timeout,
		FailureThreshold:    failure,
		PeriodSeconds:       period,
	}
}

// The probes of kubeadm's staticpod package.
func livenessProbe(host, path string, scheme corev1.URIScheme) *corev1.Probe {
	return httpProbe(host, path, scheme, 10, 15, 8, 10)
}

func readinessProbe(host, path string, scheme corev1.URIScheme) *corev1.Probe {
	return httpProbe(host, path, scheme, 0, 15, 3, 1)
}

func startupProbe(host, path string, scheme corev1.URIScheme) *corev1.Probe {
	const period = 10
	failure := int32(math.Ceil(DefaultHealthCheckTimeout.Seconds() / period))
	return httpProbe(host, path, scheme, period, 15, failure, period)
}

// probeAddress is kubeadm's getProbeAddress: a wildcard bind address probes
// the Pod IP (no host).
func probeAddress(addr string) string {
	if addr == "0.0.0.0" || addr == "::" {
		return ""
	}
	return addr
}

func cpuRequest(cpu string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
}

// sortedEnv is kubeadm's MergeKubeadmEnvVars: the lists merged by name (a
// later one wins), sorted by name.
func sortedEnv(envs ...[]corev1.EnvVar) []corev1.EnvVar {
	byName := map[string]corev1.EnvVar{}
	for _, env := range envs {
		for _, e := range env {
			byName[e.Name] = e
		}
	}
	var out []corev1.EnvVar
	for _, e := range byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// imageTag is kubeadm's KubernetesVersionToImageTag.
var imageTagInvalid = regexp.MustCompile(`[^-\w.]`)

func (c GenerateConfig) image(component string) string {
	return c.ImageRepository + "/" + component + ":" + imageTagInvalid.ReplaceAllString(c.KubernetesVersion, "_")
}

func loopback(advertise string) string {
	if a, err := netip.ParseAddr(advertise); err == nil && a.Is6() {
		return "::1"
	}
	return "127.0.0.1"
}

func apiServerPod(c GenerateConfig) *corev1.Pod {
	pki := func(name string) string { return filepath.Join(c.CertDir, name) }
	etcdServers := hostURL(loopback(c.AdvertiseAddress), etcdClientPort)
	if v, ok := extraArg(c.EtcdExtraArgs, "advertise-client-urls"); ok {
		etcdServers = v // as kubeadm: the local etcd's advertised URLs
	}
	if len(c.EtcdServers) > 0 {
		etcdServers = strings.Join(c.EtcdServers, ",")
	}
	args := []Arg{
		{"advertise-address", c.AdvertiseAddress},
		{"enable-admission-plugins", "NodeRestriction"},
		{"service-cluster-ip-range", c.ServiceCIDR},
		{"service-account-key-file", pki("sa.pub")},
		{"service-account-signing-key-file", pki("sa.key")},
		{"service-account-issuer", "https://kubernetes.default.svc." + c.DNSDomain},
		{"client-ca-file", pki("ca.crt")},
		{"tls-cert-file", pki("apiserver.crt")},
		{"tls-private-key-file", pki("apiserver.key")},
		{"kubelet-client-certificate", pki("apiserver-kubelet-client.crt")},
		{"kubelet-client-key", pki("apiserver-kubelet-client.key")},
		{"enable-bootstrap-token-auth", "true"},
		{"secure-port", strconv.Itoa(int(c.BindPort))},
		{"allow-privileged", "true"},
		{"kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname"},
		{"requestheader-username-headers", "X-Remote-User"},
		{"requestheader-group-headers", "X-Remote-Group"},
		{"requestheader-extra-headers-prefix", "X-Remote-Extra-"},
		{"requestheader-client-ca-file", pki("front-proxy-ca.crt")},
		{"requestheader-allowed-names", "front-proxy-client"},
		{"proxy-client-cert-file", pki("front-proxy-client.crt")},
		{"proxy-client-key-file", pki("front-proxy-client.key")},
		{"etcd-servers", etcdServers},
		{"etcd-cafile", pki("etcd/ca.crt")},
		{"etcd-certfile", pki("apiserver-etcd-client.crt")},
		{"etcd-keyfile", pki("apiserver-etcd-client.key")},
	}
	// kubeadm leaves authorization-mode to a structured authorization config.
	if _, ok := extraArg(c.APIServerExtraArgs, "authorization-config"); !ok {
		args = append(args, Arg{"authorization-mode", "Node,RBAC"})
	}
	var m mounts
	m.add("k8s-certs", c.CertDir, true, corev1.HostPathDirectoryOrCreate)
	c.caCertMounts(&m)
	m.extra(c.APIServerExtraVolumes)
	host := probeAddress(c.AdvertiseAddress)
	ctr := corev1.Container{
		Name:            KubeAPIServer,
		Image:           c.image(KubeAPIServer),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command(KubeAPIServer, args, c.APIServerExtraArgs),
		VolumeMounts:    m.volumeMounts(),
		LivenessProbe:   livenessProbe(host, "/livez", corev1.URISchemeHTTPS),
		ReadinessProbe:  readinessProbe(host, "/readyz", corev1.URISchemeHTTPS),
		StartupProbe:    startupProbe(host, "/livez", corev1.URISchemeHTTPS),
		Resources:       cpuRequest("250m"),
		Env:             sortedEnv(c.Env, c.APIServerEnv),
		Ports:           []corev1.ContainerPort{{Name: probePort, ContainerPort: c.BindPort, Protocol: corev1.ProtocolTCP}},
	}
	return componentPod(ctr, m.volumes(), map[string]string{
		APIServerAdvertiseAddressAnnotation: net.JoinHostPort(c.AdvertiseAddress, strconv.Itoa(int(c.BindPort))),
	})
}

func controllerManagerPod(c GenerateConfig) *corev1.Pod {
	kubeconfig := filepath.Join(c.KubeconfigDir, "controller-manager.conf")
	ca := filepath.Join(c.CertDir, "ca.crt")
	args := append(leaderArgs(kubeconfig), []Arg{
		{"client-ca-file", ca},
		{"requestheader-client-ca-file", filepath.Join(c.CertDir, "front-proxy-ca.crt")},
		{"root-ca-file", ca},
		{"service-account-private-key-file", filepath.Join(c.CertDir, "sa.key")},
		{"cluster-signing-cert-file", ca},
		{"cluster-signing-key-file", filepath.Join(c.CertDir, "ca.key")},
		{"use-service-account-credentials", "true"},
		{"controllers", "*,bootstrapsigner,tokencleaner"},
	}...)
	if c.PodCIDR != "" {
		args = append(args, Arg{"allocate-node-cidrs", "true"}, Arg{"cluster-cidr", c.PodCIDR})
		if c.ServiceCIDR != "" {
			args = append(args, Arg{"service-cluster-ip-range", c.ServiceCIDR})
		}
		if ps, err := cidr.ParseList(c.PodCIDR); err == nil && len(ps) == 1 && c.NodeCIDRMaskSize != 0 {
			def := DefaultNodeCIDRMaskSize
			if ps[0].Addr().Is6() {
				def = 64
			}
			if c.NodeCIDRMaskSize != def {
				args = append(args, Arg{"node-cidr-mask-size", strconv.Itoa(c.NodeCIDRMaskSize)})
			}
		}
	}
	if c.ClusterName != "" {
		args = append(args, Arg{"cluster-name", c.ClusterName})
	}
	var m mounts
	m.add("k8s-certs", c.CertDir, true, corev1.HostPathDirectoryOrCreate)
	c.caCertMounts(&m)
	m.add("kubeconfig", kubeconfig, true, corev1.HostPathFileOrCreate)
	m.extra(c.ControllerManagerExtraVolumes)
	host := loopbackProbeHost(c.ControllerManagerExtraArgs)
	ctr := corev1.Container{
		Name:            KubeControllerManager,
		Image:           c.image(KubeControllerManager),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command(KubeControllerManager, args, c.ControllerManagerExtraArgs),
		VolumeMounts:    m.volumeMounts(),
		LivenessProbe:   livenessProbe(host, "/healthz", corev1.URISchemeHTTPS),
		StartupProbe:    startupProbe(host, "/healthz", corev1.URISchemeHTTPS),
		Resources:       cpuRequest("200m"),
		Env:             sortedEnv(c.Env, c.ControllerManagerEnv),
		Ports:           []corev1.ContainerPort{{Name: probePort, ContainerPort: kubeControllerManagerPort, Protocol: corev1.ProtocolTCP}},
	}
	return componentPod(ctr, m.volumes(), nil)
}

func schedulerPod(c GenerateConfig) *corev1.Pod {
	kubeconfig := filepath.Join(c.KubeconfigDir, "scheduler.conf")
	args := leaderArgs(kubeconfig)
	var m mounts
	m.add("kubeconfig", kubeconfig, true, corev1.HostPathFileOrCreate)
	m.extra(c.SchedulerExtraVolumes)
	host := loopbackProbeHost(c.SchedulerExtraArgs)
	ctr := corev1.Container{
		Name:            KubeScheduler,
		Image:           c.image(KubeScheduler),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command(KubeScheduler, args, c.SchedulerExtraArgs),
		VolumeMounts:    m.volumeMounts(),
		LivenessProbe:   livenessProbe(host, "/livez", corev1.URISchemeHTTPS),
		ReadinessProbe:  readinessProbe(host, "/readyz", corev1.URISchemeHTTPS),
		StartupProbe:    startupProbe(host, "/livez", corev1.URISchemeHTTPS),
		Resources:       cpuRequest("100m"),
		Env:             sortedEnv(c.Env, c.SchedulerEnv),
		Ports:           []corev1.ContainerPort{{Name: probePort, ContainerPort: kubeSchedulerPort, Protocol: corev1.ProtocolTCP}},
	}
	return componentPod(ctr, m.volumes(), nil)
}

// leaderArgs are the arguments kube-controller-manager and kube-scheduler
// share: bound to loopback, leader-elected, every client identity from
// one kubeconfig.
func leaderArgs(kubeconfig string) []Arg {
	return []Arg{
		{"bind-address", "127.0.0.1"},
		{"leader-elect", "true"},
		{"kubeconfig", kubeconfig},
		{"authentication-kubeconfig", kubeconfig},
		{"authorization-kubeconfig", kubeconfig},
	}
}

// loopbackProbeHost is where the probes of a component bound to loopback
// look: 127.0.0.1, or the --bind-address extra argument.
func loopbackProbeHost(extra []Arg) string {
	if a, ok := extraArg(extra, "bind-address"); ok {
		return probeAddress(a)
	}
	return "127.0.0.1"
}

// etcdProbeEndpoint is kubeadm's GetEtcdProbeEndpoint: the first
// --listen-metrics-urls extra argument, else loopback:2381 over HTTP.
func etcdProbeEndpoint(c GenerateConfig) (string, int32, corev1.URIScheme) {
	host, port, scheme := loopback(c.AdvertiseAddress), int32(etcdMetricsPort), corev1.URISchemeHTTP
	v, ok := extraArg(c.EtcdExtraArgs, "listen-metrics-urls")
	if !ok {
		return host, port, scheme
	}
	u, err := url.Parse(strings.Split(v, ",")[0])
	if err != nil {
		return host, port, scheme
	}
	if u.Scheme == "https" {
		scheme = corev1.URISchemeHTTPS
	}
	if h := u.Hostname(); h != "" {
		host = h
	}
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil && p > 0 {
		port = int32(p)
	}
	return host, port, scheme
}

func etcdPod(c GenerateConfig, local EtcdMember) *corev1.Pod {
	etcdPKI := c.CertDir + "/etcd"
	pki := func(name string) string { return filepath.Join(c.CertDir, name) }
	lo := loopback(c.AdvertiseAddress)
	initial := local.Name + "=" + local.PeerURL
	if len(c.EtcdMembers) > 0 {
		var parts []string
		for _, m := range c.EtcdMembers {
			parts = append(parts, m.Name+"="+m.PeerURL)
		}
		initial = strings.Join(parts, ",")
	}
	args := []Arg{
		{"name", local.Name},
		{"listen-client-urls", hostURL(lo, etcdClientPort) + "," + local.ClientURL},
		{"advertise-client-urls", local.ClientURL},
		{"listen-peer-urls", local.PeerURL},
		{"initial-advertise-peer-urls", local.PeerURL},
		{"data-dir", c.EtcdDataDir},
		{"cert-file", pki("etcd/server.crt")},
		{"key-file", pki("etcd/server.key")},
		{"trusted-ca-file", pki("etcd/ca.crt")},
		{"client-cert-auth", "true"},
		{"peer-cert-file", pki("etcd/peer.crt")},
		{"peer-key-file", pki("etcd/peer.key")},
		{"peer-trusted-ca-file", pki("etcd/ca.crt")},
		{"peer-client-cert-auth", "true"},
		{"snapshot-count", "10000"},
		{"listen-metrics-urls", "http://" + net.JoinHostPort(lo, strconv.Itoa(etcdMetricsPort))},
		{"feature-gates", "InitialCorruptCheck=true"},
		{"watch-progress-notify-interval", "5s"},
		// A restored data dir is a new cluster: kubeadm's "existing" is for
		// a member joining a running cluster, so it is not written.
		{"initial-cluster", initial},
	}
	host, port, scheme := etcdProbeEndpoint(c)
	ctr := corev1.Container{
		Name:            Etcd,
		Command:         command(Etcd, args, c.EtcdExtraArgs),
		Image:           c.EtcdImageRepository + "/etcd:" + c.EtcdImageTag,
		ImagePullPolicy: corev1.PullIfNotPresent,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "etcd-data", MountPath: c.EtcdDataDir},
			{Name: "etcd-certs", MountPath: etcdPKI},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("100Mi"),
		}},
		LivenessProbe:  livenessProbe(host, "/livez", scheme),
		ReadinessProbe: readinessProbe(host, "/readyz", scheme),
		StartupProbe:   startupProbe(host, "/readyz", scheme),
		Env:            sortedEnv(c.EtcdEnv),
		Ports:          []corev1.ContainerPort{{Name: probePort, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
	}
	volumes := []corev1.Volume{
		hostPathVolume("etcd-data", c.EtcdDataDir, corev1.HostPathDirectoryOrCreate),
		hostPathVolume("etcd-certs", etcdPKI, corev1.HostPathDirectoryOrCreate),
	}
	return componentPod(ctr, volumes, map[string]string{EtcdAdvertiseClientURLsAnnotation: local.ClientURL})
}
