package rebuild

import (
	"fmt"
	"strings"
)

// webhookRestartLines are the staged restart's webhook stage: the backends
// of the webhooks that would block, by the Services the plan found (or, with
// none found, how to find them).
func (r *run) webhookRestartLines() []string {
	if len(r.webhooks) == 0 {
		return []string{"kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations -o jsonpath='{range .items[*]}{.metadata.name}{\"\\t\"}{.webhooks[*].failurePolicy}{\"\\t\"}{.webhooks[*].clientConfig.service.namespace}{\"\\n\"}{end}'",
			"#   restart the backends of every Fail webhook next (until their pods run, they reject the calls that recreate pods)"}
	}
	var out []string
	for _, w := range r.webhooks {
		state := "still Fail: until its backend runs it rejects what it intercepts"
		if w.Ignored {
			state = "set to Ignore by this rebuild"
		}
		out = append(out, fmt.Sprintf("#   webhook %s (%s %s): %s; %s", w.Webhook, w.Kind, w.Configuration, w.Why, state))
		if w.Deadlock && !w.Ignored {
			out = append(out, "#     it intercepts pod creation: its own backend's pods cannot be created while it fails closed (the known deadlock).",
				fmt.Sprintf("#     Set it to Ignore first: kubectl patch %s %s --type=json -p '[{\"op\":\"replace\",\"path\":\"/webhooks/%d/failurePolicy\",\"value\":\"Ignore\"}]'",
					strings.ToLower(w.Kind), w.Configuration, w.Index))
		}
	}
	return append(out, "#   restart the Deployments behind those Services next, and wait for them")
}

// runbookWebhooks is the last step: the webhooks the rebuild set to Ignore
// go back to Fail, once their backends run. Each patch tests the webhook's
// name at its index first, so it changes nothing if the configuration was
// changed since.
func (r *run) runbookWebhooks(b *runbook) {
	var lines []string
	for _, w := range r.webhooks {
		if !w.Ignored {
			continue
		}
		lines = append(lines, fmt.Sprintf("kubectl patch %s %s --type=json -p '[{\"op\":\"test\",\"path\":\"/webhooks/%d/name\",\"value\":\"%s\"},{\"op\":\"replace\",\"path\":\"/webhooks/%d/failurePolicy\",\"value\":\"Fail\"}]'",
			strings.ToLower(w.Kind), w.Configuration, w.Index, w.Webhook, w.Index))
	}
	if len(lines) == 0 {
		return
	}
	b.step("Set the admission webhooks back to Fail")
	b.w("This rebuild set them to `Ignore` (`networking.webhooks: ignore`; the originals are in report.json's `operation.webhooks`). Once their")
	b.w("backends run (`kubectl get endpoints -n <namespace>` shows addresses), set each back:")
	b.sh(lines...)
	b.w("")
}
