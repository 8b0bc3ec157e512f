package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/cidr"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"

	"github.com/snapshift/snapshift/wellknown"
)

// NameK3sNodeArgs is the k3s-node-args rule.
const NameK3sNodeArgs = "k3s-node-args"

// K3sNodeArgs is the k3s and RKE2 side of a range move (DESIGN.md
// decision 25). Each node keeps its argv in the Node annotation
// <program>.io/node-args (k3s pkg/nodeconfig): the rule maps the ranges in
// it (--cluster-cidr, --service-cidr, --cluster-dns values) so that the
// record agrees with the moved objects until the node rewrites it, with
// node-env and node-config-hash, at its first start with the new flags.
// In Prepare it checks what a restarted server re-renders: k3s's deploy
// controller re-applies CoreDNS's Service at --cluster-dns (default: the
// tenth address of the service range), RKE2 injects it into its charts;
// the moved DNS Service must be there, or the plan is refused. Its notes
// are the k3s/RKE2 runbook.
type K3sNodeArgs struct {
	plan  *Plan
	dist  *state.Distribution
	notes []string
	// oldDNS and newDNS are the cluster DNS before and after.
	oldDNS, newDNS string
	explicitDNS    bool
}

var k3sNodeArgsEntry = rangeFollower(Entry{
	Name: NameK3sNodeArgs,
	Summary: "k3s and RKE2: map the ranges in each Node's <program>.io/node-args annotation, check that the DNS address a " +
		"restarted server re-renders (--cluster-dns, default the tenth address of the service range) is where the DNS " +
		"Service moves, and write the k3s/RKE2 runbook into the plan",
	Touches: []string{"nodes (annotations k3s.io/node-args, rke2.io/node-args)"},
	New:     func(_ Options, p *Plan) transform.Rule { return &K3sNodeArgs{plan: p} },
})

func (r *K3sNodeArgs) Name() string       { return NameK3sNodeArgs }
func (r *K3sNodeArgs) Prefixes() []string { return []string{wellknown.PrefixNodes} }
func (r *K3sNodeArgs) Notes() []string    { return r.notes }
func (r *K3sNodeArgs) Lists() []string {
	return append([]string{wellknown.PrefixNodes}, state.DistributionListed...)
}

// Prepare finds the distribution and checks the cluster DNS.
func (r *K3sNodeArgs) Prepare(_ context.Context, v *state.View) error {
	d, err := state.DetectDistribution(v)
	if err != nil {
		return err
	}
	r.plan.distribution = d
	if !d.IsK3sFamily() {
		return nil
	}
	r.dist = d
	if err := r.checkDNS(); err != nil {
		return err
	}
	r.runbook()
	return nil
}

// checkDNS refuses a plan whose DNS Service does not land where a
// restarted server re-renders it.
func (r *K3sNodeArgs) checkDNS() error {
	sp := r.plan.Service
	if sp == nil || len(r.dist.Servers) == 0 {
		return nil
	}
	s := r.dist.Servers[0]
	r.oldDNS, r.explicitDNS = s.ClusterDNS, !slices.Contains(s.Defaulted, "--cluster-dns")
	old, err := netip.ParseAddr(strings.Split(r.oldDNS, ",")[0])
	if err != nil {
		return nil // an unusual --cluster-dns: nothing to compare
	}
	moved, found := old, false // a Service the plan does not move (kept) stays
	for _, mv := range sp.Services {
		if len(mv.Old) > 0 && mv.Old[0] == old.String() && len(mv.New) > 0 {
			moved, _ = netip.ParseAddr(mv.New[0])
			found = true
		}
	}
	if !found {
		r.notes = append(r.notes, fmt.Sprintf("no Service holds the cluster DNS address %s: nothing for %s's CoreDNS re-render to agree with", old, r.dist.Name))
		return nil
	}
	if r.explicitDNS {
		r.newDNS = moved.String()
		return nil
	}
	var news []string
	for _, p := range sp.New {
		news = append(news, p.String())
	}
	want, err := state.DefaultClusterDNS(strings.Join(news, ","))
	if err != nil {
		return fmt.Errorf("%w: %v", transform.ErrRefused, err)
	}
	r.newDNS = want
	if first := strings.Split(want, ",")[0]; moved.String() != first {
		return fmt.Errorf("%w: %s re-renders CoreDNS's Service at %s at its next start (--cluster-dns defaults to the tenth address of the new service range), "+
			"but this plan leaves the DNS Service at %s, and the re-apply would fail on its immutable clusterIP: do not keep or repack the DNS Service on %s",
			transform.ErrRefused, r.dist.Name, first, moved, r.dist.Name)
	}
	return nil
}

// Apply maps the ranges in one Node's node-args annotation.
func (r *K3sNodeArgs) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	node, ok := obj.Value.Obj.(*corev1.Node)
	if !ok || r.dist == nil {
		return transform.Result{}, nil
	}
	// Each Node's own prefix: the distribution's, else the other
	// program's (a Node that ran the other one).
	ann := r.dist.NodeArgsAnnotation()
	val, ok := node.Annotations[ann]
	for _, other := range []string{"k3s.io/node-args", "rke2.io/node-args"} {
		if !ok {
			ann = other
			val, ok = node.Annotations[ann]
		}
	}
	if !ok {
		return transform.Result{}, nil
	}
	var argv []string
	if err := json.Unmarshal([]byte(val), &argv); err != nil {
		return transform.Result{}, fmt.Errorf("annotation %s: %w", ann, err)
	}
	var changes []transform.Change
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "--cluster-cidr", "--service-cidr", "--cluster-dns":
			if nv, ok := mapValueList(r.plan, argv[i+1]); ok {
				changes = append(changes, transform.Change{Field: "metadata.annotations[" + ann + "] " + argv[i], Old: argv[i+1], New: nv})
				argv[i+1] = nv
			}
		}
	}
	if len(argv) > 0 && argv[0] == "server" {
		argv, changes = r.addDefaulted(ann, argv, changes)
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	b, err := json.Marshal(argv) // as pkg/nodeconfig writes it
	if err != nil {
		return transform.Result{}, err
	}
	node.Annotations[ann] = string(b)
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// addDefaulted writes the range flags a server ran without (on k3s's
// defaults) into its node-args, with the new ranges: the runbook sets them
// in every server's config file, which k3s merges into the argv it records
// (pkg/configfilearg), so this is what the node writes at its first start.
// Meanwhile the migrated snapshot records its own ranges, and a second run
// on it sees them ("already migrated").
func (r *K3sNodeArgs) addDefaulted(ann string, argv []string, changes []transform.Change) ([]string, []transform.Change) {
	add := func(flag string, news []netip.Prefix, def string) {
		if slices.Contains(argv, flag) {
			return
		}
		v := cidr.Join(news)
		argv = append(argv[:1], append([]string{flag, v}, argv[1:]...)...)
		changes = append(changes, transform.Change{Field: "metadata.annotations[" + ann + "] " + flag, Old: "(k3s default " + def + ")", New: v})
	}
	if pp := r.plan.Pod; pp != nil {
		add("--cluster-cidr", pp.New, state.K3sDefaultClusterCIDR)
	}
	if sp := r.plan.Service; sp != nil {
		add("--service-cidr", sp.New, state.K3sDefaultServiceCIDR)
	}
	return argv, changes
}

// mapValueList maps a comma-separated list of CIDRs or addresses (a flag
// value, an injected chart value) part by part with the plan; anything
// else in the list leaves the whole value alone.
func mapValueList(p *Plan, s string) (string, bool) {
	cc := &ClusterConfig{plan: p}
	parts := strings.Split(s, ",")
	changed := false
	for i, part := range parts {
		t := strings.TrimSpace(part)
		if pr, err := netip.ParsePrefix(t); err == nil && pr.Masked() == pr {
			if n, ok := cc.mapPrefix(pr); ok {
				parts[i], changed = strings.Replace(part, t, n.String(), 1), true
			}
			continue
		}
		a, err := netip.ParseAddr(t)
		if err != nil {
			return s, false
		}
		if n, ok := cc.mapAddr(a); ok {
			parts[i], changed = strings.Replace(part, t, n.String(), 1), true
		}
	}
	return strings.Join(parts, ","), changed
}

// runbook writes what the operator does on each k3s/RKE2 node.
func (r *K3sNodeArgs) runbook() {
	d, prog := r.dist, r.dist.Program
	var flags []string
	if sp := r.plan.Service; sp != nil {
		flags = append(flags, "service-cidr: "+cidr.Join(sp.New))
		if r.explicitDNS {
			flags = append(flags, "cluster-dns: "+r.newDNS)
		}
	}
	if pp := r.plan.Pod; pp != nil {
		flags = append(flags, "cluster-cidr: "+cidr.Join(pp.New))
	}
	var servers []string
	for _, s := range d.Servers {
		servers = append(servers, s.Node)
	}
	first := "one server"
	if len(servers) > 0 {
		first = servers[0]
	}
	cfg := fmt.Sprintf("/etc/rancher/%s/config.yaml", prog)
	r.notes = append(r.notes,
		fmt.Sprintf("%s runbook 1: stop %s on every server and agent (systemctl stop %s%s); keep the token: /bootstrap/* is copied byte for byte and only the same token decrypts it", d.Name, prog, prog, agentUnit(prog)),
		fmt.Sprintf("%s runbook 2: in %s of EVERY server (%s) set %s; the servers compare these flags at join", d.Name, cfg, strings.Join(servers, ", "), strings.Join(flags, ", ")),
		fmt.Sprintf("%s runbook 3: on %s: %s server --cluster-reset --cluster-reset-restore-path=<the migrated snapshot> (a zip is fine: %s unzips it; it restores without a revision bump, so the compaction marker snapshift wrote makes every watcher relist; it blanks %s itself), then start %s normally", d.Name, first, prog, prog, d.APIAddressesKey(), prog),
		fmt.Sprintf("%s runbook 4: on every other server: move /var/lib/rancher/%s/server/db aside, then start %s to rejoin", d.Name, prog, prog),
		fmt.Sprintf("%s runbook 5: on every server: touch /var/lib/rancher/%s/server/tls/dynamic-cert-regenerate before the start so the serving certificate gets the new kubernetes Service address", d.Name, prog),
		fmt.Sprintf("%s runbook 6: restart every agent (systemctl restart %s%s); each node rewrites its %s.io/node-args and node-config-hash annotations at its first start with the new flags (mapped here already)", d.Name, prog, agentUnit(prog), prog),
	)
	if d.Name == state.DistRKE2 {
		r.notes = append(r.notes, "rke2 writes its static pods (kube-apiserver, kube-controller-manager, kube-proxy, etcd) from config.yaml at start: their mirror pods in the snapshot keep the old flags until the kubelet recreates them (the leftover scan lists them with the pods)")
	}
	if r.newDNS != "" {
		r.notes = append(r.notes, fmt.Sprintf("%s re-renders CoreDNS at cluster DNS %s at start: the migrated DNS Service is already there, so the re-apply is a no-op", d.Name, r.newDNS))
	}
}

func agentUnit(prog string) string {
	if prog == "rke2" {
		return "-server / rke2-agent"
	}
	return " / k3s-agent"
}
