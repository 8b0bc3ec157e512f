package rules

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// NameWebhooks is the webhooks rule.
const NameWebhooks = "webhooks"

// The webhooks option's values: list names the webhooks that would block
// the restart (in the plan's notes and report), ignore also sets them to
// Ignore.
const (
	WebhooksList   = "list"
	WebhooksIgnore = "ignore"
)

// WebhooksOptions is the webhooks rule's option.
type WebhooksOptions struct {
	// Webhooks is "list" (name the admission webhooks that would block the
	// restart) or "ignore" (and set them to failurePolicy Ignore). Empty:
	// off (rebuild defaults to list).
	Webhooks string `json:"webhooks,omitempty"`
}

// Where admission webhook configurations are kept.
var webhookPrefixes = []string{wellknown.PrefixValidatingWebhooks, wellknown.PrefixMutatingWebhooks}

// Webhooks finds the admission webhooks that would block the restart after
// the migration: failurePolicy Fail and a backend that cannot answer, a
// Service in the cluster (its pods must first be recreated on the new
// network) or a URL naming an address the migration moves. It lists them
// (in the plan and its notes); with --webhooks ignore it sets them to
// Ignore and records each change in Plan.Webhooks, so that the runbook's
// last step can set them back.
type Webhooks struct {
	plan   *Plan
	ignore bool
	notes  []string
}

// WebhookChange is one admission webhook that would block the restart.
type WebhookChange struct {
	// Kind is ValidatingWebhookConfiguration or MutatingWebhookConfiguration.
	Kind string `json:"kind"`
	// Configuration and Webhook name it; Index is its place in webhooks[].
	Configuration string `json:"configuration"`
	Webhook       string `json:"webhook"`
	Index         int    `json:"index"`
	// Why it would block.
	Why string `json:"why"`
	// Service is its backend Service "namespace/name" ("" for a URL).
	Service string `json:"service,omitempty"`
	// Deadlock is true when it intercepts pod creation: its own backend's
	// pods cannot be created while it fails closed and cannot answer.
	Deadlock bool `json:"deadlock,omitempty"`
	// Ignored is true when the rule set its failurePolicy to Ignore (the
	// original was Fail).
	Ignored bool `json:"ignored"`
}

var webhooksEntry = Entry{
	Name: NameWebhooks,
	Summary: "list the admission webhooks that would block the restart (failurePolicy Fail, backed by an in-cluster Service or a moved address); " +
		"with --webhooks ignore set them to Ignore (the runbook sets them back last)",
	Touches: []string{"validatingwebhookconfigurations.admissionregistration.k8s.io, mutatingwebhookconfigurations.admissionregistration.k8s.io (webhooks[].failurePolicy)"},
	After:   []string{NameServiceCIDR, NamePodCIDR}, // a URL's address is moved by their plans
	Enabled: func(o *Options) bool { return o.Webhooks != "" },
	Validate: func(o *Options) error {
		if o.Webhooks != "" && o.Webhooks != WebhooksIgnore && o.Webhooks != WebhooksList {
			return option.Errorf("Webhooks", "{} takes %q or %q, not %q%s", WebhooksList, WebhooksIgnore, o.Webhooks, choiceHint(o.Webhooks, WebhooksList, WebhooksIgnore))
		}
		return nil
	},
	New: func(o Options, p *Plan) transform.Rule {
		return &Webhooks{plan: p, ignore: o.Webhooks == WebhooksIgnore}
	},
	Example: func() Options {
		return Options{ServiceCIDROptions: ServiceCIDROptions{ServiceCIDR: "172.24.0.0/16"}, WebhooksOptions: WebhooksOptions{Webhooks: WebhooksIgnore}}
	},
	Options: func(o *Options) []Option {
		return []Option{{Field: "Webhooks", Name: "webhooks", CLI: true, Config: "networking.webhooks", Value: &o.Webhooks,
			Usage: "list: name the admission webhooks that would block the restart (failurePolicy Fail, backed by an in-cluster Service or a moved address); ignore: also set them to Ignore (a rebuild's runbook sets them back). rebuild default: list"}}
	},
}

func (r *Webhooks) Name() string       { return NameWebhooks }
func (r *Webhooks) Prefixes() []string { return slices.Clone(webhookPrefixes) }
func (r *Webhooks) Notes() []string    { return r.notes }

// Apply checks every webhook of a configuration.
func (r *Webhooks) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	var hooks []hook
	var kind, name string
	switch o := obj.Value.Obj.(type) {
	case *admissionv1.ValidatingWebhookConfiguration:
		kind, name = "ValidatingWebhookConfiguration", o.Name
		for i := range o.Webhooks {
			w := &o.Webhooks[i]
			hooks = append(hooks, hook{w.Name, &w.FailurePolicy, w.ClientConfig, w.Rules})
		}
	case *admissionv1.MutatingWebhookConfiguration:
		kind, name = "MutatingWebhookConfiguration", o.Name
		for i := range o.Webhooks {
			w := &o.Webhooks[i]
			hooks = append(hooks, hook{w.Name, &w.FailurePolicy, w.ClientConfig, w.Rules})
		}
	default:
		return transform.Result{}, fmt.Errorf("stored object is %s, not an admission webhook configuration", obj.Value.GVK)
	}
	var changes []transform.Change
	for i, h := range hooks {
		why := r.blocks(h)
		if why == "" {
			continue
		}
		wc := WebhookChange{Kind: kind, Configuration: name, Webhook: h.name, Index: i, Why: why, Deadlock: interceptsPods(h.rules), Ignored: r.ignore}
		if s := h.cc.Service; s != nil {
			wc.Service = s.Namespace + "/" + s.Name
		}
		r.plan.Webhooks = append(r.plan.Webhooks, wc)
		r.notes = append(r.notes, wc.String())
		if r.ignore {
			ignore := admissionv1.Ignore
			*h.policy = &ignore
			changes = append(changes, transform.Change{Field: fmt.Sprintf("webhooks[%s].failurePolicy", h.name), Old: string(admissionv1.Fail), New: string(admissionv1.Ignore)})
		}
	}
	if len(changes) == 0 {
		return transform.Result{}, nil
	}
	return transform.Result{Action: transform.Replace, Changes: changes}, nil
}

// String says it in one line.
func (w WebhookChange) String() string {
	s := fmt.Sprintf("%s %s, webhook %s: failurePolicy Fail, %s", w.Kind, w.Configuration, w.Webhook, w.Why)
	if w.Deadlock {
		s += "; it intercepts pod creation, so its own backend's pods cannot be created while it fails closed (the known deadlock)"
	}
	if w.Ignored {
		return s + ": set to Ignore; the runbook's last step sets it back to Fail"
	}
	return s + ": restart its backend first, or run with --webhooks ignore (networking.webhooks: ignore)"
}

// hook is one webhook of either kind.
type hook struct {
	name   string
	policy **admissionv1.FailurePolicyType
	cc     admissionv1.WebhookClientConfig
	rules  []admissionv1.RuleWithOperations
}

// blocks says why a webhook would block the restart ("" when it would not).
func (r *Webhooks) blocks(h hook) string {
	if p := *h.policy; p != nil && *p != admissionv1.Fail {
		return "" // Ignore: never blocks (an unset policy is Fail, the API's default)
	}
	if s := h.cc.Service; s != nil {
		return fmt.Sprintf("backed by Service %s/%s, which cannot answer until its pods run again on the new network", s.Namespace, s.Name)
	}
	if h.cc.URL == nil {
		return ""
	}
	u, err := url.Parse(*h.cc.URL)
	if err != nil {
		return ""
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return ""
	}
	a = a.Unmap()
	if r.plan.Service != nil && inAny(a, r.plan.Service.Old) {
		return fmt.Sprintf("its URL names %s, an address in the old service range", a)
	}
	if r.plan.Pod != nil && inAny(a, r.plan.Pod.Old) {
		return fmt.Sprintf("its URL names %s, an address in the old pod range", a)
	}
	return ""
}

func inAny(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// interceptsPods reports whether the rules match creating pods.
func interceptsPods(rs []admissionv1.RuleWithOperations) bool {
	for _, r := range rs {
		ops := slices.ContainsFunc(r.Operations, func(o admissionv1.OperationType) bool {
			return o == admissionv1.Create || o == admissionv1.OperationAll
		})
		res := slices.ContainsFunc(r.Resources, func(s string) bool { return s == "pods" || s == "*" || strings.HasPrefix(s, "*/") })
		if ops && res {
			return true
		}
	}
	return false
}
