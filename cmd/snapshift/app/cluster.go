package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snapshift/snapshift/clusterops"
	"github.com/snapshift/snapshift/internal/parseerr"
	"github.com/snapshift/snapshift/restart"
	"github.com/snapshift/snapshift/verify"
)

// clusterOptions are cluster restart's and cluster check's options.
type clusterOptions struct {
	common
	bundle, kubeconfig string
	timeout            time.Duration
	dryRun             bool
	check              bool
	probe              clusterops.CheckConfig
	down               cli.StringSlice
}

func (o *clusterOptions) flags() []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "bundle", Destination: &o.bundle, Usage: "the rebuild bundle (its report.json)"},
		&cli.StringFlag{Name: "kubeconfig", Destination: &o.kubeconfig, Usage: "kubeconfig of the new cluster (default: $KUBECONFIG, ~/.kube/config)"},
		&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Destination: &o.timeout, Usage: "bound on each action (a rollout, the DNS handover) or each check that waits"},
		&cli.StringSliceFlag{Name: "down", Destination: &o.down, Usage: "a Node that is off through the window (kubelet and containers stopped; comma-separated or repeated): restart taints it out of service (" + restart.OutOfServiceTaint + ") and waits for no pod there, check leaves it out; bring it in later by the runbook's late-node step"},
		o.outputFlag(),
	}
	if o.check {
		return append(fs,
			&cli.StringFlag{Name: "probe-image", Value: "busybox:1.36", Destination: &o.probe.ProbeImage, Usage: "image of the DNS probe pod (it runs nslookup)"},
			&cli.StringFlag{Name: "probe-namespace", Value: "default", Destination: &o.probe.ProbeNamespace, Usage: "namespace of the DNS probe pod"},
			&cli.StringFlag{Name: "cluster-domain", Value: "cluster.local", Destination: &o.probe.ClusterDomain, Usage: "the cluster's DNS domain"})
	}
	return append(fs, &cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "print every action of every stage; change nothing"}, o.quietFlag())
}

func (o *clusterOptions) setup(c *cli.Context) error { return o.noArgs(c) }

// downNodes are --down's Nodes, each once, in the order given.
func (o *clusterOptions) downNodes() []string {
	var out []string
	for _, v := range o.down.Value() {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func (o *clusterOptions) Validate() error {
	if o.bundle == "" {
		return usagef("give --bundle DIR (the directory snapshift rebuild wrote)")
	}
	// A --kubeconfig given is checked even under --dry-run (which reads
	// only the bundle): a mistyped path must not wait for the real run.
	if o.kubeconfig != "" {
		if fi, err := os.Stat(o.kubeconfig); err != nil {
			return usagef("--kubeconfig %s does not exist: give the new cluster's kubeconfig, e.g. the bundle's kubernetes/<node>/admin.conf", o.kubeconfig)
		} else if fi.IsDir() {
			return usagef("--kubeconfig %s is a directory: give the kubeconfig file, e.g. the bundle's kubernetes/<node>/admin.conf", o.kubeconfig)
		}
	}
	return o.validateFormat()
}

// client is the new cluster's client, from --kubeconfig or kubectl's
// defaults.
func (o *clusterOptions) client() (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		where := "give --kubeconfig, e.g. the bundle's kubernetes/<node>/admin.conf"
		if o.kubeconfig != "" {
			where = "give the new cluster's kubeconfig, e.g. the bundle's kubernetes/<node>/admin.conf"
		}
		if clientcmd.IsEmptyConfig(err) {
			// client-go's own advice (KUBERNETES_MASTER) is not ours.
			return nil, usagef("kubeconfig: %s holds no cluster: %s", kubeconfigName(o.kubeconfig), where)
		}
		if strings.Contains(err.Error(), "couldn't get version/kind") {
			return nil, usagef("kubeconfig %s is not a kubeconfig (the YAML file kubectl reads, with clusters, users and contexts): %s", kubeconfigName(o.kubeconfig), where)
		}
		// client-go wraps the parser's error in its own words ("error
		// loading config file \"F\": ..."): keep the cause, say the rest.
		msg := err.Error()
		if i := strings.Index(msg, "error loading config file "); i >= 0 {
			if _, cause, ok := strings.Cut(msg[i:], "\": "); ok {
				return nil, usagef("kubeconfig %s is not a kubeconfig: %s: %s", kubeconfigName(o.kubeconfig), strings.TrimPrefix(parseerr.Text(cause), "yaml: "), where)
			}
		}
		return nil, usagef("kubeconfig %s: %v (%s)", kubeconfigName(o.kubeconfig), err, where)
	}
	clusterops.TuneClient(rc)
	return kubernetes.NewForConfig(rc)
}

// kubeconfigName is the kubeconfig a message names: --kubeconfig's, or
// where kubectl looks.
func kubeconfigName(explicit string) string {
	if explicit != "" {
		return explicit
	}
	return "$KUBECONFIG or ~/.kube/config"
}

func (o *clusterOptions) Run(ctx context.Context) error {
	in, err := clusterInput(o.bundle)
	if err != nil {
		return err
	}
	cfg := clusterops.Config{Input: in, Timeout: o.timeout, DryRun: o.dryRun, Down: o.downNodes()}
	if !o.dryRun || o.check {
		if cfg.Client, err = o.client(); err != nil {
			return err
		}
	}
	if o.check {
		if o.probe.Etcd, err = etcdCheckInput(o.bundle); err != nil {
			return err
		}
		return o.runCheck(ctx, cfg)
	}
	if !o.quiet && !o.json() {
		cfg.Progress = func(e clusterops.Event) { printEvent(o.stdout, e) }
	}
	res, rerr := clusterops.Restart(ctx, cfg)
	switch {
	case o.json():
		doc := restartDocument{typeMeta: newTypeMeta("ClusterRestartResult"), Result: res, Phases: stagePhases(res)}
		if rerr != nil {
			doc.Error = errorMessage(rerr)
		}
		if err := writeJSON(o.stdout, doc); err != nil {
			return err
		}
	case o.quiet:
	case o.dryRun:
		fmt.Fprintf(o.stdout, "dry run: nothing was changed. By hand:\n")
		for _, st := range res.Stages {
			for _, a := range st.Actions {
				for _, l := range a.Commands() {
					fmt.Fprintf(o.stdout, "  %s\n", l)
				}
			}
		}
	default:
		outcome := "done"
		if rerr != nil && len(res.Stages) > 0 {
			outcome = "failed at " + res.Stages[len(res.Stages)-1].Name
		} else if rerr != nil {
			outcome = "failed"
		}
		fmt.Fprintln(o.stdout, closingLine("cluster restart: "+outcome, res.Seconds, stagePhases(res)))
	}
	return rerr
}

// restartDocument is cluster restart's -o json|yaml document: the stages
// with their actions' results, and each stage's time again as phases.
type restartDocument struct {
	typeMeta
	*clusterops.Result
	Phases []phase `json:"phases"`
	Error  string  `json:"error,omitempty"`
}

// stagePhases are the stages run, each with its time.
func stagePhases(r *clusterops.Result) []phase {
	out := []phase{}
	if r == nil {
		return out
	}
	for _, st := range r.Stages {
		out = append(out, phase{st.Name, st.Seconds})
	}
	return out
}

// checkDocument is cluster check's -o json|yaml document.
type checkDocument struct {
	typeMeta
	// OK: every check passed.
	OK     bool                     `json:"ok"`
	Checks []clusterops.CheckResult `json:"checks"`
	// Phases are the checks, each with its time.
	Phases  []phase `json:"phases"`
	Seconds float64 `json:"seconds"`
}

// printEvent is one progress line: "[stage 1 cni] done restart ... (3.2s)".
func printEvent(w io.Writer, e clusterops.Event) {
	line := fmt.Sprintf("[stage %d %s] %-7s %s", e.Stage, e.Name, e.Status, e.Action)
	if e.Status != "start" && e.Status != "would" {
		line += fmt.Sprintf(" (%.1fs)", e.Secs)
	}
	if e.Detail != "" {
		line += ": " + e.Detail
	}
	fmt.Fprintln(w, line)
}

func (o *clusterOptions) runCheck(ctx context.Context, cfg clusterops.Config) error {
	start := time.Now()
	res, err := clusterops.Check(ctx, cfg, o.probe)
	if err != nil {
		return err
	}
	return o.reportCheck(res, secondsSince(start))
}

// reportCheck prints the checks' results, as text or as the document, and
// is the error when one failed.
func (o *clusterOptions) reportCheck(res []clusterops.CheckResult, seconds float64) error {
	doc := checkDocument{typeMeta: newTypeMeta("ClusterCheckResult"), OK: true, Checks: res, Phases: []phase{},
		Seconds: seconds}
	var failed []string
	for _, r := range res {
		if !r.OK {
			failed = append(failed, r.Name)
			doc.OK = false
		}
		doc.Phases = append(doc.Phases, phase{r.Name, r.Seconds})
	}
	err := o.render(doc, func(w io.Writer) {
		for _, r := range res {
			mark := "ok  "
			if !r.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "%s %-18s %s\n", mark, r.Name, r.Detail)
			if !r.OK {
				fmt.Fprintf(w, "     %-18s read: %s\n", "", r.Read)
			}
		}
		fmt.Fprintln(w, closingLine(fmt.Sprintf("cluster check: %d of %d passed", len(res)-len(failed), len(res)), doc.Seconds, doc.Phases))
	})
	if err != nil || len(failed) == 0 {
		return err
	}
	return fmt.Errorf("cluster check: %d of %d checks failed (%s); read what each FAIL line names: %w", len(failed), len(res), strings.Join(failed, ", "), verify.ErrFailed)
}

func clusterCommand() *cli.Command {
	rs, ck := &clusterOptions{}, &clusterOptions{check: true}
	return &cli.Command{
		Name:  "cluster",
		Usage: "the cluster-wide half of a rebuild's window: the staged restart and the checks after it",
		Subcommands: []*cli.Command{
			newCommand(rs, rs.flags(), cli.Command{
				Name:  "restart",
				Usage: "restart the CNI, kube-proxy, the cluster DNS, NodeLocal DNS, the webhooks' backends and every workload, stage by stage",
				Description: "Run after `snapshift node apply` on every control-plane node, from any machine that reaches the new endpoint.\n" +
					"The stages come from the bundle's report.json (RUNBOOK.md shows the same): the CNI in its documented order\n" +
					"(cilium-operator, cilium; calico-node, calico-kube-controllers; flannel), kube-proxy, the cluster DNS (with\n" +
					"--dns-bridge: the DNS Service recreated at the bridge's address, the kubelets' clusterDNS, after the bridge is\n" +
					"deleted: the DNS gap is measured and printed), NodeLocal DNS, the backends of webhooks that fail closed, every\n" +
					"other workload (the pods no controller restarts deleted first when still on old addresses), then the webhooks\n" +
					"set to Ignore by the rebuild set back to Fail. Each rollout is waited for as `kubectl rollout status` waits.\n" +
					"Safe to run again: a rollout restarted since the bundle was made is only waited for. Ends with one line of each\n" +
					"stage's time; -o json|yaml prints a ClusterRestartResult document instead (each stage's actions and seconds).\n\n" +
					"Example:\n   snapshift cluster restart --bundle bundle --kubeconfig bundle/kubernetes/cp1/admin.conf --dry-run",
			}),
			newCommand(ck, ck.flags(), cli.Command{
				Name:  "check",
				Usage: "check the cluster after the restart: Nodes, pod addresses, kubernetes.default, DNS from a pod, events, CNI and DNS pods",
				Description: "One line per check; exit 5 naming the checks that failed. Checks: every Node Ready with its podCIDR in the\n" +
					"new range; every pod not on the host network on a new-range address; default/kubernetes at the new range's\n" +
					"first address; the DNS Service at the kubelets' clusterDNS; nslookup kubernetes.default from a short-lived pod\n" +
					"(--probe-image) answers that address; no ClusterIPOutOfRange or ClusterIPNotAllocated event since the bundle;\n" +
					"the CNI's, kube-proxy's and the DNS's pods Ready. Ends with one line of each check's time; -o json|yaml prints a\n" +
					"ClusterCheckResult document (ok, each check with its seconds).\n\n" +
					"Example:\n   snapshift cluster check --bundle bundle --kubeconfig bundle/kubernetes/cp1/admin.conf",
			}),
		},
	}
}
