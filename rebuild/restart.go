package rebuild

import (
	"net/netip"
	"strings"
	"time"

	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/snapshift/snapshift/restart"
	"github.com/snapshift/snapshift/rules"
	"github.com/snapshift/snapshift/wellknown"
)

// clusterInput is the staged restart's input from what this rebuild knows:
// the workloads and pods it read, the rules' plan (ranges, the DNS Service
// and its bridge, the webhooks that fail closed). RUNBOOK.md's restart and
// `snapshift cluster restart` (from report.json) both plan from it.
func (r *run) clusterInput() *restart.Input {
	dnsService := r.cfg.RuleOptions().DNSService
	if dnsService == "" {
		dnsService = "kube-system/kube-dns"
	}
	in := buildInput(r.detected, r.report.Plan, dnsService)
	in.Created = r.opts.Now().UTC().Truncate(time.Second)
	return in
}

// buildInput is clusterInput without the run (tests).
func buildInput(d *detected, plan *rules.Plan, dnsService string) *restart.Input {
	in := &restart.Input{}
	if d == nil {
		d = &detected{}
	}
	in.CNI = d.cnis
	var webhooks []rules.WebhookChange
	if plan != nil {
		webhooks = plan.Webhooks
		if s := plan.Service; s != nil {
			in.Service = restart.Ranges{Old: prefixes(s.Old), New: prefixes(s.New)}
		}
		if p := plan.Pod; p != nil {
			in.Pod = restart.Ranges{Old: prefixes(p.Old), New: prefixes(p.New)}
		}
	}
	for _, w := range webhooks {
		in.Webhooks = append(in.Webhooks, restart.Webhook{Kind: w.Kind, Configuration: w.Configuration, Webhook: w.Webhook, Index: w.Index,
			Service: w.Service, Ignored: w.Ignored, Deadlock: w.Deadlock})
	}
	backs := func(ns string, labels map[string]string) []string {
		var out []string
		for _, wh := range webhooks {
			sel := d.selectors[wh.Service]
			if strings.HasPrefix(wh.Service, ns+"/") && len(sel) > 0 && k8slabels.SelectorFromSet(sel).Matches(k8slabels.Set(labels)) && !contains(out, wh.Configuration) {
				out = append(out, wh.Configuration)
			}
		}
		return out
	}
	for _, w := range d.workloads {
		in.Workloads = append(in.Workloads, restart.Workload{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Selector: w.Selector, Role: w.Role,
			Backs: backs(w.Namespace, d.labels[workloadKey(w)])})
	}
	for i, p := range d.pods {
		p.Backs = backs(p.Namespace, d.podLabels[i])
		in.Pods = append(in.Pods, p)
	}
	in.DNS = dnsInput(d, plan, dnsService)
	return in
}

// dnsInput is the cluster DNS Service, its address in the bundle and its
// bridge; nil when the snapshot has no such Service.
func dnsInput(d *detected, plan *rules.Plan, dnsService string) *restart.DNS {
	dns := &restart.DNS{Service: dnsService}
	_, found := d.selectors[dnsService]
	if plan == nil || plan.Service == nil {
		if !found {
			return nil
		}
		return dns
	}
	s := plan.Service
	for _, mv := range s.Services {
		if mv.Key != wellknown.PrefixServices+dnsService {
			continue
		}
		found, dns.Kept = true, mv.Kept
		if mv.Kept && len(mv.Old) > 0 {
			dns.Address = mv.Old[0]
		} else if len(mv.New) > 0 {
			dns.Address = mv.New[0]
		}
	}
	if s.Bridge.IsValid() {
		ns, name, _ := strings.Cut(dnsService, "/")
		dns.Bridge, dns.BridgeAddress = ns+"/"+name+"-bridge", s.Bridge.String()
	}
	if !found {
		return nil
	}
	return dns
}

func prefixes(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
