package daemon

import (
	"sync"

	"haven/api"
)

// bus fans events out to `nodemgr events` subscribers. Slow subscribers
// lose events rather than block the loop; they are told by a "lost" event.
type bus struct {
	mu   sync.Mutex
	subs map[chan api.Event]struct{}
}

func newBus() *bus { return &bus{subs: map[chan api.Event]struct{}{}} }

func (b *bus) subscribe() chan api.Event {
	ch := make(chan api.Event, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch
}

func (b *bus) unsubscribe(ch chan api.Event) {
	b.mu.Lock()
	delete(b.subs, ch)
	b.mu.Unlock()
}

func (b *bus) publish(e api.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
		}
	}
}
