package rules

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snapshift/snapshift/option"
	"github.com/snapshift/snapshift/state"
	"github.com/snapshift/snapshift/transform"
	"github.com/snapshift/snapshift/wellknown"
)

// SA-token modes.
const (
	SATokensDelete = "delete"
	SATokensClear  = "clear"
)

const maxPodNotes = 50

// SATokens handles legacy ServiceAccount token Secrets when the signing key
// (sa.key) is regenerated: their tokens were signed by the old key
// (DESIGN.md decision 12). "clear" keeps each Secret (its UID, labels, ca.crt) and empties
// data.token, so the token controller in kube-controller-manager signs a new
// one with the new key — the only mode that works on Kubernetes 1.24+, where
// deleted token Secrets are not recreated. "delete" removes them, as the old
// procedure did. ServiceAccounts and bootstrap tokens are never touched.
// The rule also lists the Pods that must be restarted: those that mount a
// token Secret or run as a non-default ServiceAccount (their projected
// tokens were signed by the old key too).
type SATokens struct {
	mode    string
	secrets map[string]bool // ns/name of token Secrets
	pods    []string
	notes   []string
	// unreadable are the Secrets encrypted with KMS (or with no
	// configuration given): whether they hold tokens cannot be told here.
	unreadable []string
}

func (r *SATokens) Name() string { return NameSATokens }
func (r *SATokens) Prefixes() []string {
	return []string{wellknown.PrefixSecrets, wellknown.PrefixPods}
}
func (r *SATokens) Lists() []string { return []string{wellknown.PrefixSecrets} }

// Prepare finds the token Secrets (their names, for the Pod report). A
// Secret that cannot be decrypted here is passed over (Unreadable lists it).
func (r *SATokens) Prepare(_ context.Context, v *state.View) error {
	r.secrets = map[string]bool{}
	for _, kr := range v.Keys(wellknown.PrefixSecrets) {
		o, ok, err := v.Get(kr.Key)
		if errors.Is(err, state.ErrEncrypted) {
			continue
		}
		if err != nil {
			return err
		}
		if s, isSecret := o.Value.Obj.(*corev1.Secret); ok && isSecret && s.Type == corev1.SecretTypeServiceAccountToken {
			r.secrets[s.Namespace+"/"+s.Name] = true
		}
	}
	return nil
}

// Unreadable lets the run go on past a Secret it cannot decrypt (KMS, most
// often): it is copied as stored and listed in the notes, with the command
// that clears its token once the cluster is up. Other values stay fatal.
func (r *SATokens) Unreadable(key string, _ error) bool {
	name, ok := strings.CutPrefix(key, wellknown.PrefixSecrets)
	if ok {
		r.unreadable = append(r.unreadable, name)
	}
	return ok
}

func (r *SATokens) Apply(_ context.Context, obj *state.Object) (transform.Result, error) {
	switch o := obj.Value.Obj.(type) {
	case *corev1.Secret:
		if o.Type != corev1.SecretTypeServiceAccountToken {
			return transform.Result{}, nil
		}
		sa := o.Annotations[corev1.ServiceAccountNameKey]
		if r.mode == SATokensDelete {
			return transform.Result{Action: transform.Delete, Changes: []transform.Change{{Field: "legacy token Secret", Old: "of ServiceAccount " + sa}}}, nil
		}
		if len(o.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return transform.Result{}, nil // already cleared
		}
		delete(o.Data, corev1.ServiceAccountTokenKey)
		return transform.Result{Action: transform.Replace, Changes: []transform.Change{
			{Field: "data.token", Old: "(signed by the old key)", New: "(empty: the token controller signs a new one)"}}}, nil
	case *corev1.Pod:
		if why := r.restartReason(o); why != "" {
			r.pods = append(r.pods, o.Namespace+"/"+o.Name+" ("+why+")")
		}
	}
	return transform.Result{}, nil
}

func (r *SATokens) restartReason(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && r.secrets[p.Namespace+"/"+v.Secret.SecretName] {
			return "mounts token Secret " + v.Secret.SecretName
		}
	}
	if sa := p.Spec.ServiceAccountName; sa != "" && sa != "default" {
		return "ServiceAccount " + sa
	}
	return ""
}

// Notes lists the Secrets it could not read and the Pods to restart.
func (r *SATokens) Notes() []string {
	out := append([]string(nil), r.notes...)
	if n := len(r.unreadable); n > 0 {
		shown := r.unreadable[:min(n, maxPodNotes)]
		out = append(out, fmt.Sprintf("%d Secrets are encrypted with KMS (or no encryption configuration was given) and were copied unread: %s; "+
			"once the cluster is up, clear any legacy token among them: kubectl get secrets -A --field-selector type=kubernetes.io/service-account-token "+
			"-o jsonpath='{range .items[*]}{.metadata.namespace} {.metadata.name}{\"\\n\"}{end}' | "+
			"while read ns name; do kubectl -n \"$ns\" patch secret \"$name\" --type=json -p '[{\"op\":\"remove\",\"path\":\"/data/token\"}]'; done",
			n, strings.Join(shown, ", ")))
	}
	if len(r.pods) > 0 {
		sort.Strings(r.pods)
		shown := r.pods
		if len(shown) > maxPodNotes {
			shown = shown[:maxPodNotes]
		}
		more := ""
		if len(r.pods) > maxPodNotes {
			more = fmt.Sprintf(" and %d more", len(r.pods)-maxPodNotes)
		}
		out = append(out, fmt.Sprintf("restart these %d Pods after the restore, their tokens were signed by the old key: %s%s",
			len(r.pods), strings.Join(shown, ", "), more))
	}
	return out
}

// NameSATokens is the sa-tokens rule.
const NameSATokens = "sa-tokens"

// SATokensOptions are the sa-tokens rule's options.
type SATokensOptions struct {
	// SATokens handles legacy ServiceAccount token Secrets when sa.key is
	// regenerated: "clear" (empty data.token; re-signed by the token
	// controller), "delete", or "" (off).
	SATokens string `json:"-"`
}

var saTokensEntry = Entry{
	Name:    NameSATokens,
	Summary: "clear (or delete) legacy ServiceAccount token Secrets signed by an old sa.key; list the Pods to restart",
	Touches: []string{"secrets of type kubernetes.io/service-account-token (data.token)", "pods (read only: the restart list)"},
	Enabled: func(o *Options) bool { return o.SATokens != "" },
	New:     func(o Options, _ *Plan) transform.Rule { return &SATokens{mode: o.SATokens} },
	Example: func() Options { return Options{SATokensOptions: SATokensOptions{SATokens: SATokensClear}} },
	Validate: func(o *Options) error {
		switch o.SATokens {
		case "", SATokensClear, SATokensDelete:
			return nil
		}
		return option.Errorf("SATokens", "{} %q: want %s or %s", o.SATokens, SATokensClear, SATokensDelete)
	},
	Options: func(o *Options) []Option {
		return []Option{{Field: "SATokens", Name: "sa-tokens", CLI: true, Config: "serviceAccountTokens", Value: &o.SATokens,
			Usage: "when sa.key is regenerated: clear (empty each legacy token Secret's data.token so kube-controller-manager re-signs it; works on 1.24+) or delete"}}
	},
}
