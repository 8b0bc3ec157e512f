package clusterops

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/snapshift/snapshift/restart"
)

// RestartedAtAnnotation is what `kubectl rollout restart` sets on the pod
// template.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// Config is one run of the restart or the check.
type Config struct {
	Client kubernetes.Interface
	// Input is the bundle's (report.json's operation.cluster).
	Input *restart.Input
	// Timeout bounds each action (a rollout, the handover) and each check
	// that waits. Default 10 minutes.
	Timeout time.Duration
	// DryRun says every action and changes nothing.
	DryRun bool
	// Progress receives each action's start and end. Optional.
	Progress func(Event)
	// Poll is how often a rollout is looked at. Default 2s.
	Poll time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Down are Nodes that are down through the window (off: kubelet and
	// containers stopped), brought in later by the runbook's late-node
	// step. The restart taints them out of service first and no rollout
	// waits for them; the check leaves them out. Each must be a Node that
	// is not Ready.
	Down []string

	down map[string]bool // Down, checked
}

func (c *Config) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Poll <= 0 {
		c.Poll = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Progress == nil {
		c.Progress = func(Event) {}
	}
}

// Event is one action's progress.
type Event struct {
	Stage  int    `json:"stage"`
	Name   string `json:"name"`
	Action string `json:"action"`
	// Status is start, done, skipped, would (dry run) or failed.
	Status string  `json:"status"`
	Detail string  `json:"detail,omitempty"`
	Secs   float64 `json:"seconds,omitempty"`
}

// Result is what a restart did, stage by stage.
type Result struct {
	DryRun bool `json:"dryRun"`
	// Down are the Nodes --down named.
	Down   []string      `json:"down,omitempty"`
	Stages []StageResult `json:"stages"`
	// Seconds is the whole restart (0 in a dry run).
	Seconds float64 `json:"seconds"`
}

// StageResult is one stage's actions and what became of them.
type StageResult struct {
	restart.Stage
	Results []Event `json:"results"`
	// Seconds is the stage's time, from its first action's start to its
	// last one's end (0 in a dry run).
	Seconds float64 `json:"seconds"`
}

// secs is d in seconds, rounded to the millisecond, never negative.
func secs(d time.Duration) float64 { return max(0, math.Round(d.Seconds()*1000)/1000) }

// Restart runs the staged restart of the bundle's Input. It stops at the
// first action that fails (the stages after it need it done) and returns
// what was done so far with the error.
func Restart(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	res := &Result{DryRun: cfg.DryRun, Down: cfg.Down}
	began := cfg.Now()
	defer func() {
		if !cfg.DryRun {
			res.Seconds = secs(cfg.Now().Sub(began))
		}
	}()
	stages := restart.Plan(*cfg.Input)
	if len(cfg.Down) > 0 {
		if !cfg.DryRun {
			var err error
			if cfg.down, err = downNodes(ctx, &cfg); err != nil {
				return res, err
			}
		}
		stages = append([]restart.Stage{restart.DownStage(cfg.Down)}, stages...)
	}
	for i, st := range stages {
		sr := StageResult{Stage: st}
		stageStart := cfg.Now()
		for _, a := range st.Actions {
			ev := Event{Stage: i + 1, Name: st.Name, Action: a.String()}
			if cfg.DryRun {
				ev.Status = "would"
				sr.Results = append(sr.Results, ev)
				cfg.Progress(ev)
				continue
			}
			ev.Status = "start"
			cfg.Progress(ev)
			start := cfg.Now()
			actx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			skipped, detail, err := runAction(actx, &cfg, a)
			cancel()
			ev.Secs, ev.Detail = cfg.Now().Sub(start).Seconds(), detail
			switch {
			case err != nil:
				ev.Status = "failed"
				if errors.Is(err, context.DeadlineExceeded) {
					// The user's words: the timeout and where it stood, not
					// Go's "context deadline exceeded".
					err = fmt.Errorf("not done within --timeout %s (%s)%s", cfg.Timeout, detail, downHint(ctx, &cfg))
				}
				ev.Detail = err.Error()
			case skipped:
				ev.Status = "skipped"
			default:
				ev.Status = "done"
			}
			sr.Results = append(sr.Results, ev)
			cfg.Progress(ev)
			if err != nil {
				sr.Seconds = secs(cfg.Now().Sub(stageStart))
				res.Stages = append(res.Stages, sr)
				return res, fmt.Errorf("stage %d %s: %s: %w", i+1, st.Name, a, err)
			}
		}
		if !cfg.DryRun {
			sr.Seconds = secs(cfg.Now().Sub(stageStart))
		}
		res.Stages = append(res.Stages, sr)
	}
	return res, nil
}

// runAction does one action: skipped when it was already done.
func runAction(ctx context.Context, cfg *Config, a restart.Action) (bool, string, error) {
	switch a.Type {
	case restart.ActRestart:
		return rollout(ctx, cfg, a)
	case restart.ActDeletePods:
		return deletePods(ctx, cfg, a)
	case restart.ActDNSHandover:
		return handover(ctx, cfg, a)
	case restart.ActWebhookFail:
		return webhookFail(ctx, cfg, a)
	case restart.ActOutOfService:
		return taintDown(ctx, cfg, a.Name)
	}
	return false, "", fmt.Errorf("unknown action type %q", a.Type)
}

// rollout restarts a controller as `kubectl rollout restart` does (unless
// its template was restarted after the bundle was made) and waits for the
// rollout as `kubectl rollout status` does.
func rollout(ctx context.Context, cfg *Config, a restart.Action) (bool, string, error) {
	apps := cfg.Client.AppsV1()
	var annotations map[string]string
	var err error
	switch a.Kind {
	case "Deployment":
		var d *appsv1.Deployment
		if d, err = apps.Deployments(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{}); err == nil {
			annotations = d.Spec.Template.Annotations
		}
	case "DaemonSet":
		var d *appsv1.DaemonSet
		if d, err = apps.DaemonSets(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{}); err == nil {
			annotations = d.Spec.Template.Annotations
		}
	case "StatefulSet":
		var d *appsv1.StatefulSet
		if d, err = apps.StatefulSets(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{}); err == nil {
			annotations = d.Spec.Template.Annotations
		}
	default:
		return false, "", fmt.Errorf("cannot roll a %s", a.Kind)
	}
	if err != nil {
		return false, "", fmt.Errorf("reading %s/%s: %w", a.Namespace, a.Ref(), err)
	}
	skipped := false
	if at, perr := time.Parse(time.RFC3339, annotations[RestartedAtAnnotation]); perr == nil && !at.Before(cfg.Input.Created.Truncate(time.Second)) {
		skipped = true // restarted on the new cluster already: only wait
	} else {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, RestartedAtAnnotation, cfg.Now().Format(time.RFC3339))
		switch a.Kind {
		case "Deployment":
			_, err = apps.Deployments(a.Namespace).Patch(ctx, a.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		case "DaemonSet":
			_, err = apps.DaemonSets(a.Namespace).Patch(ctx, a.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		default:
			_, err = apps.StatefulSets(a.Namespace).Patch(ctx, a.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		}
		if err != nil {
			return false, "", fmt.Errorf("restarting %s/%s: %w", a.Namespace, a.Ref(), err)
		}
	}
	detail, err := waitRollout(ctx, cfg, a)
	if skipped && err == nil {
		detail = "restarted since the bundle was made; rollout complete"
	}
	return skipped, detail, err
}

// waitRollout polls the controller until its rollout is complete; on a
// timeout the detail says what it was waiting for.
func waitRollout(ctx context.Context, cfg *Config, a restart.Action) (string, error) {
	apps := cfg.Client.AppsV1()
	last := ""
	for {
		var msg string
		var err error
		switch a.Kind {
		case "Deployment":
			var d *appsv1.Deployment
			if d, err = apps.Deployments(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{}); err == nil {
				msg, err = deploymentStatus(d)
			}
		case "DaemonSet":
			var d *appsv1.DaemonSet
			if d, err = apps.DaemonSets(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{}); err == nil {
				if len(cfg.down) > 0 {
					msg, err = daemonSetPast(ctx, cfg, d)
				} else {
					msg, err = daemonSetStatus(d)
				}
			}
		default:
			var d *appsv1.StatefulSet
			if d, err = apps.StatefulSets(a.Namespace).Get(ctx, a.Name, metav1.GetOptions{}); err == nil {
				msg, err = statefulSetStatus(d)
			}
		}
		if err != nil && ctx.Err() == nil {
			return last, err
		}
		if err == nil && msg == "" {
			return "rollout complete", nil
		}
		if msg != "" {
			last = msg
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(cfg.Poll):
		}
	}
}

// deletePods deletes the pods no controller restarts; a pod already gone,
// or already on a new address, is skipped.
func deletePods(ctx context.Context, cfg *Config, a restart.Action) (bool, string, error) {
	pods := cfg.Client.CoreV1().Pods(a.Namespace)
	newRanges := parsePrefixes(cfg.Input.Pod.New)
	deleted, gone := 0, 0
	for _, name := range a.Pods {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			gone++
			continue
		}
		if err != nil {
			return false, "", fmt.Errorf("reading pod %s/%s: %w", a.Namespace, name, err)
		}
		if p.DeletionTimestamp != nil || a.Role == "" && len(newRanges) > 0 && p.Status.PodIP != "" && inAny(p.Status.PodIP, newRanges) {
			gone++
			continue
		}
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, "", fmt.Errorf("deleting pod %s/%s: %w", a.Namespace, name, err)
		}
		deleted++
	}
	return deleted == 0, fmt.Sprintf("%d deleted, %d already gone or on a new address", deleted, gone), nil
}
