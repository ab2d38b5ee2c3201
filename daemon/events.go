package daemon

import (
	"strconv"
	"sync"

	"haven/api"
	"haven/node"
)

// busBuffer is the number of events a subscriber may lag behind.
const busBuffer = 256

// bus fans events out to `nodemgr events` subscribers. A slow subscriber
// loses events rather than block the loop, and is told so: the next event
// it can take is preceded by a "lost" event saying how many it missed.
type bus struct {
	mu   sync.Mutex
	subs map[chan api.Event]*subscriber
}

type subscriber struct {
	lost int // events dropped since the last one delivered
}

func newBus() *bus { return &bus{subs: map[chan api.Event]*subscriber{}} }

func (b *bus) subscribe() chan api.Event {
	ch := make(chan api.Event, busBuffer)
	b.mu.Lock()
	b.subs[ch] = &subscriber{}
	b.mu.Unlock()
	return ch
}

func (b *bus) unsubscribe(ch chan api.Event) {
	b.mu.Lock()
	delete(b.subs, ch)
	b.mu.Unlock()
}

// publish never blocks. Only publish sends on the channels (under mu), so
// the room it sees cannot shrink before it sends.
func (b *bus) publish(e api.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch, s := range b.subs {
		if s.lost > 0 {
			if cap(ch)-len(ch) < 2 {
				s.lost++
				continue
			}
			ch <- lostEvent(e, s.lost)
			s.lost = 0
		}
		select {
		case ch <- e:
		default:
			s.lost++
		}
	}
}

// lostEvent tells a subscriber how many events it missed before e.
// (node.EventsLost).
func lostEvent(e api.Event, n int) api.Event {
	l := node.EventsLost{Lost: n}
	return api.Event{Time: e.Time, Kind: l.Kind(), Node: e.Node, Message: l.String(),
		Fields: map[string]string{"lost": strconv.Itoa(n)}}
}
