package transform

import "sync"

// observed is one value handed to the observers.
type observed struct {
	key, value []byte
	changed    bool
}

// observerPump runs the observers on their own goroutine, so that a scan
// of every value (the leftover scan reads all of them) uses the second core
// instead of lengthening the stream. Values are handed over in batches, in
// stream order; the slices point into the input's read-only mapping or into
// buffers the stream never modifies again, and stay valid until wait
// returns (Run waits before it closes the input).
type observerPump struct {
	observers []Observer
	batch     []observed
	full      chan []observed
	free      chan []observed
	done      sync.WaitGroup
}

const observeBatch = 512

func newObserverPump(obs []Observer) *observerPump {
	p := &observerPump{observers: obs, full: make(chan []observed, 4), free: make(chan []observed, 6)}
	p.batch = make([]observed, 0, observeBatch)
	p.done.Add(1)
	full := p.full // wait sets p.full to nil, perhaps before this goroutine starts
	go func() {
		defer p.done.Done()
		for b := range full {
			for _, o := range b {
				for _, ob := range p.observers {
					ob.Observe(o.key, o.value, o.changed)
				}
			}
			select {
			case p.free <- b[:0]:
			default:
			}
		}
	}()
	return p
}

// observe queues one value.
func (p *observerPump) observe(key, value []byte, changed bool) {
	p.batch = append(p.batch, observed{key, value, changed})
	if len(p.batch) == cap(p.batch) {
		p.full <- p.batch
		select {
		case p.batch = <-p.free:
		default:
			p.batch = make([]observed, 0, observeBatch)
		}
	}
}

// wait hands over the last batch and waits until every value has been
// observed. It is safe to call more than once.
func (p *observerPump) wait() {
	if p.full == nil {
		return
	}
	if len(p.batch) > 0 {
		p.full <- p.batch
	}
	close(p.full)
	p.full = nil
	p.done.Wait()
}
