package clusterops

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// A move the installer's own configuration does not know about is undone
// by the installer's next run: kubeadm upgrade re-renders the static pods
// from kubeadm-config, k3s and RKE2 read config.yaml at every start (and
// k3s upgrades have re-created the default ServiceCIDR in an existing
// datastore, k3s#12877), a kube-apiserver restarted with its old flags
// re-creates the kubernetes ServiceCIDR with its old range. The
// installer-ranges check finds each of these in the running cluster.

// rangeFlags are the flags that carry a range (or, for --cluster-dns, an
// address of the service range), whichever program takes them: kubeadm's
// static pods and k3s/RKE2's node-args.
var rangeFlags = map[string]string{
	"service-cluster-ip-range": "service", "service-cidr": "service", "cluster-dns": "service-address",
	"cluster-cidr": "pod",
}

// installerFinding is one place the old (or a default) range came back.
type installerFinding struct{ where, installer, what string }

func (f installerFinding) String() string {
	return fmt.Sprintf("%s (%s): %s", f.where, f.installer, f.what)
}

// checkInstallerRanges: no component came back with a range other than
// the new one: every live ServiceCIDR (the one the rebuild kept for exempt
// Services is already terminating), the control-plane static pods' range
// flags, the k3s/RKE2 node-args annotations and kubeadm-config's
// networking all inside the new ranges.
func checkInstallerRanges(ctx context.Context, cfg *Config) CheckResult {
	const name, read = "installer-ranges", "the installer's configuration (kubeadm-config, /etc/rancher/*/config.yaml, kubespray's group_vars): move it with the cluster (the bundle's installer/ files) before the installer runs again"
	svc, pod := parsePrefixes(cfg.Input.Service.New), parsePrefixes(cfg.Input.Pod.New)
	if len(svc) == 0 && len(pod) == 0 {
		return pass(name, "no range moved")
	}
	var found []installerFinding
	var errs []string
	add := func(f []installerFinding, err error) {
		found = append(found, f...)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(svc) > 0 {
		add(serviceCIDRsOutside(ctx, cfg, svc))
	}
	if len(svc) > 0 {
		add(inconsistentServiceCIDR(ctx, cfg))
	}
	add(staticPodsOutside(ctx, cfg, svc, pod))
	add(nodeArgsOutside(ctx, cfg, svc, pod))
	add(kubeadmConfigOutside(ctx, cfg, svc, pod))
	if len(errs) > 0 {
		return fail(name, read, "%s", strings.Join(errs, "; "))
	}
	if len(found) > 0 {
		var s []string
		for _, f := range found {
			s = append(s, f.String())
		}
		if len(found) == 1 {
			return fail(name, read, "1 place holds a range other than the new one: %s", s[0])
		}
		return fail(name, read, "%d places hold a range other than the new one: %s", len(found), capNames(s))
	}
	return pass(name, "ServiceCIDRs, the control plane's flags, node-args and kubeadm-config hold the new ranges only")
}

// outside lists the values of a comma-separated range (or address) value
// that lie in none of ranges.
func outside(value, kind string, ranges []netip.Prefix) []string {
	var out []string
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if kind == "service-address" {
			if !inAny(v, ranges) {
				out = append(out, v)
			}
		} else if !prefixInside(v, ranges) {
			out = append(out, v)
		}
	}
	return out
}

// rangesFor is the new ranges a flag's kind is checked against (nil: that
// range did not move).
func rangesFor(kind string, svc, pod []netip.Prefix) []netip.Prefix {
	if kind == "pod" {
		return pod
	}
	return svc
}

func serviceCIDRsOutside(ctx context.Context, cfg *Config, svc []netip.Prefix) ([]installerFinding, error) {
	l, err := cfg.Client.NetworkingV1().ServiceCIDRs().List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // networking.k8s.io/v1 not served (before 1.33): no ServiceCIDR to come back
	}
	if err != nil {
		return nil, fmt.Errorf("listing ServiceCIDRs: %v", err)
	}
	var out []installerFinding
	for _, sc := range l.Items {
		if sc.DeletionTimestamp != nil {
			continue
		}
		if bad := outside(strings.Join(sc.Spec.CIDRs, ","), "service", svc); len(bad) > 0 {
			out = append(out, installerFinding{"ServiceCIDR " + sc.Name, "kube-apiserver's --service-cluster-ip-range, or a k3s upgrade's default",
				"holds " + strings.Join(bad, ", ") + ", outside the new service range"})
		}
	}
	return out, nil
}

// inconsistentServiceCIDR finds kube-apiserver's own complaint, since the
// bundle was made, that its --service-cluster-ip-range is not the default
// ServiceCIDR's (its defaultservicecidr controller leaves an existing
// ServiceCIDR as it is and reports the mismatch): an apiserver that came
// back with its old flags.
func inconsistentServiceCIDR(ctx context.Context, cfg *Config) ([]installerFinding, error) {
	const reason = "KubernetesDefaultServiceCIDRInconsistent"
	var found []installerFinding
	err := eachEvent(ctx, cfg.Client, metav1.ListOptions{FieldSelector: "reason=" + reason}, func(e *corev1.Event) {
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if len(found) == 0 && !at.Before(cfg.Input.Created) {
			found = []installerFinding{{"ServiceCIDR " + e.InvolvedObject.Name, "a kube-apiserver restarted with its old --service-cluster-ip-range", reason + ": " + e.Message}}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing events: %v", err)
	}
	return found, nil
}

// staticPodsOutside reads the mirror pods of kube-apiserver and
// kube-controller-manager (kubeadm's component label).
func staticPodsOutside(ctx context.Context, cfg *Config, svc, pod []netip.Prefix) ([]installerFinding, error) {
	var out []installerFinding
	err := eachPod(ctx, cfg.Client, "kube-system", metav1.ListOptions{LabelSelector: "component in (kube-apiserver,kube-controller-manager)"}, func(p *corev1.Pod) {
		for _, c := range p.Spec.Containers {
			for _, a := range append(append([]string{}, c.Command...), c.Args...) {
				flag, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
				kind := rangeFlags[flag]
				if !ok || kind == "" || kind == "service-address" {
					continue
				}
				if bad := outside(value, kind, rangesFor(kind, svc, pod)); len(rangesFor(kind, svc, pod)) > 0 && len(bad) > 0 {
					out = append(out, installerFinding{"pod kube-system/" + p.Name + " on " + p.Spec.NodeName, "kubeadm: its static-pod manifest",
						"--" + flag + "=" + value})
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing the control plane's pods: %v", err)
	}
	return out, nil
}

// nodeArgsAnnotations are k3s's and RKE2's record of each node's command
// line (k3s pkg/nodeconfig: a JSON list of the arguments).
var nodeArgsAnnotations = map[string]string{"k3s.io/node-args": "k3s", "rke2.io/node-args": "RKE2"}

func nodeArgsOutside(ctx context.Context, cfg *Config, svc, pod []netip.Prefix) ([]installerFinding, error) {
	var out []installerFinding
	err := eachNode(ctx, cfg.Client, func(n *corev1.Node) {
		for ann, installer := range nodeArgsAnnotations {
			v, ok := n.Annotations[ann]
			if !ok {
				continue
			}
			var args []string
			if err := json.Unmarshal([]byte(v), &args); err != nil {
				continue // not the list k3s writes: nothing to read
			}
			for i, a := range args {
				flag, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
				if !ok && i+1 < len(args) {
					value = args[i+1]
				}
				kind := rangeFlags[flag]
				r := rangesFor(kind, svc, pod)
				if kind == "" || len(r) == 0 || !strings.HasPrefix(a, "-") {
					continue
				}
				if bad := outside(value, kind, r); len(bad) > 0 {
					out = append(out, installerFinding{"node " + n.Name + " annotation " + ann, installer + ": config.yaml or its command line", "--" + flag + " " + value})
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes: %v", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out, nil
}

// kubeadmConfigOutside reads kubeadm-config's ClusterConfiguration, which
// kubeadm upgrade renders the static pods from.
func kubeadmConfigOutside(ctx context.Context, cfg *Config, svc, pod []netip.Prefix) ([]installerFinding, error) {
	cm, err := cfg.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // not a kubeadm cluster
	}
	if err != nil {
		return nil, fmt.Errorf("reading kube-system/kubeadm-config: %v", err)
	}
	var cc struct {
		Networking struct {
			ServiceSubnet string `json:"serviceSubnet"`
			PodSubnet     string `json:"podSubnet"`
		} `json:"networking"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc); err != nil {
		return nil, fmt.Errorf("kube-system/kubeadm-config's ClusterConfiguration is not YAML: %v", err)
	}
	var out []installerFinding
	for _, f := range []struct{ key, value, kind string }{{"serviceSubnet", cc.Networking.ServiceSubnet, "service"}, {"podSubnet", cc.Networking.PodSubnet, "pod"}} {
		r := rangesFor(f.kind, svc, pod)
		if f.value == "" || len(r) == 0 {
			continue
		}
		if bad := outside(f.value, f.kind, r); len(bad) > 0 {
			out = append(out, installerFinding{"ConfigMap kube-system/kubeadm-config", "kubeadm upgrade renders the static pods from it", "networking." + f.key + " " + f.value})
		}
	}
	return out, nil
}
