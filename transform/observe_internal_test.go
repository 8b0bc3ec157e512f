package transform

import (
	"fmt"
	"testing"
)

type recorder struct{ keys []string }

func (r *recorder) Observe(key, _ []byte, _ bool) { r.keys = append(r.keys, string(key)) }

// TestObserverPumpOrder: every value reaches every observer once, in the
// order it was queued, across partial and full batches; wait is idempotent.
func TestObserverPumpOrder(t *testing.T) {
	for _, n := range []int{0, 1, observeBatch - 1, observeBatch, 3*observeBatch + 7} {
		a, b := &recorder{}, &recorder{}
		p := newObserverPump([]Observer{a, b})
		for i := 0; i < n; i++ {
			p.observe([]byte(fmt.Sprintf("k%06d", i)), nil, false)
		}
		p.wait()
		p.wait()
		for _, r := range []*recorder{a, b} {
			if len(r.keys) != n {
				t.Fatalf("n=%d: observed %d values", n, len(r.keys))
			}
			for i, k := range r.keys {
				if want := fmt.Sprintf("k%06d", i); k != want {
					t.Fatalf("n=%d: value %d is %s, want %s", n, i, k, want)
				}
			}
		}
	}
}
