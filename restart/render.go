package restart

import (
	"fmt"
	"strings"
)

// String says what the action does, in one line (progress, --dry-run, the
// golden files).
func (a Action) String() string {
	switch a.Type {
	case ActRestart:
		s := fmt.Sprintf("restart %s -n %s and wait for its rollout", a.Ref(), a.Namespace)
		if a.Role != "" {
			s += " (" + a.Role + ")"
		}
		return s
	case ActDeletePods:
		noun := "pods"
		if len(a.Pods) == 1 {
			noun = "pod"
		}
		return fmt.Sprintf("delete %d %s -n %s (%s): %s", len(a.Pods), noun, a.Namespace, a.Why, capList(a.Pods, 10))
	case ActDNSHandover:
		return fmt.Sprintf("DNS handover: delete Service %s/%s (%s) and the bridge %s (%s), recreate %s/%s at %s, the kubelets' clusterDNS",
			a.Namespace, a.Name, orOld(a.OldAddress), a.Bridge, a.Address, a.Namespace, a.Name, a.Address)
	case ActWebhookFail:
		w := a.Webhook
		return fmt.Sprintf("set %s %s webhook %s (webhooks[%d]) back to failurePolicy Fail", w.Kind, w.Configuration, w.Webhook, w.Index)
	case ActOutOfService:
		return fmt.Sprintf("taint node/%s out-of-service (down: no rollout waits for it)", a.Name)
	}
	return a.Type
}

// Text is the stage list as plain text, one action a line (the golden
// files and `cluster restart --dry-run`).
func Text(stages []Stage) string {
	var b strings.Builder
	for i, st := range stages {
		fmt.Fprintf(&b, "stage %d %s: %s\n", i+1, st.Name, st.Title)
		for _, n := range st.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
		for _, a := range st.Actions {
			fmt.Fprintf(&b, "  - %s\n", a)
		}
	}
	return b.String()
}

// Commands are the kubectl lines that do the action by hand (RUNBOOK.md).
func (a Action) Commands() []string {
	switch a.Type {
	case ActRestart:
		out := []string{fmt.Sprintf("kubectl -n %s rollout restart %s && kubectl -n %s rollout status %s --timeout=10m", a.Namespace, a.Ref(), a.Namespace, a.Ref())}
		if a.Role != "" {
			out[0] += "   # " + a.Role
		}
		if a.Selector != "" {
			out = append(out, fmt.Sprintf("kubectl -n %s get pods -l '%s' -o wide", a.Namespace, a.Selector))
		}
		return out
	case ActDeletePods:
		return []string{fmt.Sprintf("kubectl -n %s delete pod %s   # %s", a.Namespace, strings.Join(a.Pods, " "), a.Why)}
	case ActOutOfService:
		return []string{fmt.Sprintf("kubectl taint node %s %s   # down through the window", a.Name, OutOfServiceTaint)}
	case ActDNSHandover:
		bns, bname, _ := strings.Cut(a.Bridge, "/")
		del := fmt.Sprintf("kubectl -n %s delete svc %s", a.Namespace, a.Name)
		if bns == a.Namespace {
			del += " " + bname
		} else {
			del += fmt.Sprintf(" && kubectl -n %s delete svc %s", bns, bname)
		}
		return []string{
			fmt.Sprintf("kubectl -n %s get svc %s -o json > %s-old.json   # keep a copy", a.Namespace, a.Name, a.Name),
			fmt.Sprintf("jq '.spec.clusterIP=\"%s\" | .spec.clusterIPs=[\"%s\"] | del(.metadata.resourceVersion,.metadata.uid,.metadata.creationTimestamp,.metadata.managedFields,.status)' %s-old.json > %s-new.json",
				a.Address, a.Address, a.Name, a.Name),
			del + fmt.Sprintf(" && kubectl create -f %s-new.json   # the DNS gap: from the bridge's deletion to this create", a.Name),
		}
	case ActWebhookFail:
		w := a.Webhook
		return []string{fmt.Sprintf("kubectl patch %s %s --type=json -p '[{\"op\":\"test\",\"path\":\"/webhooks/%d/name\",\"value\":\"%s\"},{\"op\":\"replace\",\"path\":\"/webhooks/%d/failurePolicy\",\"value\":\"Fail\"}]'",
			w.Resource(), w.Configuration, w.Index, w.Webhook, w.Index)}
	}
	return nil
}

// capList joins names, the first max of them, and says how many more.
func capList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
