package clusterops

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// ticking is a clock that moves one second each time it is read.
func ticking() func() time.Time {
	var mu sync.Mutex
	t := now
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// TestPhaseTimes: each stage of the restart and each check reports its
// time (issue 48): on a clock that ticks a second per reading, every stage
// took at least its actions' seconds and the whole restart at least its
// stages'; every check took at least a second.
func TestPhaseTimes(t *testing.T) {
	var evs []Event
	cfg := testConfig(fake.NewClientset(fullCluster()...), fullInput(), 5*time.Second, &evs)
	cfg.Now = ticking()
	res, err := Restart(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	stages := 0.0
	for _, st := range res.Stages {
		actions := 0.0
		for _, e := range st.Results {
			actions += e.Secs
		}
		if st.Seconds < actions || actions < float64(len(st.Actions)) {
			t.Errorf("stage %s: %v s, its %d actions %v s", st.Name, st.Seconds, len(st.Actions), actions)
		}
		stages += st.Seconds
	}
	if len(res.Stages) != 7 || res.Seconds < stages {
		t.Errorf("restart: %v s, its %d stages %v s", res.Seconds, len(res.Stages), stages)
	}

	// A dry run takes no time.
	cfg.DryRun = true
	if res, err = Restart(context.Background(), cfg); err != nil || res.Seconds != 0 || res.Stages[0].Seconds != 0 {
		t.Errorf("dry run: %v, %v s, first stage %v s", err, res.Seconds, res.Stages[0].Seconds)
	}

	c := fake.NewClientset(healthyCluster()...)
	probe(c, corev1.PodSucceeded, goodLookup)
	cfg = testConfig(c, checkInput(), time.Second, &evs)
	cfg.Now = ticking()
	checks, err := Check(context.Background(), cfg, CheckConfig{})
	if err != nil || len(checks) < 8 {
		t.Fatalf("Check: %v, %d checks", err, len(checks))
	}
	for _, r := range checks {
		if r.Seconds < 1 {
			t.Errorf("check %s: %v s", r.Name, r.Seconds)
		}
	}
}
