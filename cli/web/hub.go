package web

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/node"
)

// ringSize is how many of the last events the view keeps (the events
// page, the service pages).
const ringSize = 300

// hub follows the daemon's event stream (the one `nodemgr events`
// reads: one stream of the local API for the whole view), keeps the last
// events, numbered, and wakes the live streams at each.
type hub struct {
	src Source
	log *zap.Logger

	mu   sync.Mutex
	ring []api.Event // the last events, oldest first
	seq  uint64      // the number of the last event
	live bool        // the stream is open
	subs map[chan struct{}]struct{}
}

func newHub(src Source, log *zap.Logger) *hub {
	return &hub{src: src, log: log, subs: map[chan struct{}]struct{}{}}
}

// run reads the stream until ctx ends, opening it again when it breaks
// (the daemon's API not up yet, or too busy): at once at first, then
// after up to a second.
func (h *hub) run(ctx context.Context) {
	var stream node.StreamStarted
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := h.src.Stream(ctx, api.PathEvents, nil, func(line []byte) error {
			var e api.Event
			if json.Unmarshal(line, &e) != nil {
				return nil
			}
			if e.Kind == stream.Kind() {
				wait = 50 * time.Millisecond // it was open: again at once
				h.setLive(true)
				return nil
			}
			h.add(e)
			return nil
		})
		h.setLive(false)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.log.Debug("web: event stream", zap.Error(err))
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

func (h *hub) setLive(on bool) {
	h.mu.Lock()
	h.live = on
	h.mu.Unlock()
	h.notify()
}

func (h *hub) add(e api.Event) {
	h.mu.Lock()
	h.seq++
	h.ring = append(h.ring, e)
	if len(h.ring) > ringSize {
		h.ring = append(h.ring[:0:0], h.ring[len(h.ring)-ringSize:]...)
	}
	h.mu.Unlock()
	h.notify()
}

func (h *hub) notify() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default: // already woken
		}
	}
}

func (h *hub) subscribe() chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch
}

func (h *hub) unsubscribe(ch chan struct{}) {
	h.mu.Lock()
	delete(h.subs, ch)
	h.mu.Unlock()
}

// numbered is an event with its number in the view.
type numbered struct {
	Seq uint64
	api.Event
}

// since returns the events numbered after seq that the ring still holds,
// oldest first, and the number of the last event.
func (h *hub) since(seq uint64) ([]numbered, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.seq - uint64(len(h.ring)) + 1
	var out []numbered
	for i, e := range h.ring {
		if n := first + uint64(i); n > seq {
			out = append(out, numbered{n, e})
		}
	}
	return out, h.seq
}

func (h *hub) isLive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}
