package heartbeat

import (
	"math/rand"
	"reflect"
	"testing"

	"haven/dataset"
)

// dataEvents takes the Data events of n2 c queued (channel, then backlog).
func dataEvents(c *core) []Event {
	var out []Event
	for {
		c.mu.Lock()
		c.drainLocked()
		c.mu.Unlock()
		select {
		case ev := <-c.events:
			if ev.Kind == Data && ev.Node == "n2" {
				out = append(out, ev)
			}
			continue
		default:
		}
		return out
	}
}

// TestDataEventsCopyOnWrite: the Data events of a peer whose data changes
// by deltas (random changes, fixed seeds; taken after each delta, or
// after many, when they coalesce in the backlog):
//   - each holds the peer's data (its digest is the sender's),
//   - none is modified afterwards by the deltas that follow (an event is
//     checked again, deep, at the end),
//   - each says what changed since the event before it (Changes.Base is
//     that event's Data; every entry that differs is listed), nil after a
//     full copy,
//   - an instance not changed is shared with the event before (its
//     resources are the same map): no deep clone per event,
//   - the resources count the delta bound keeps is the copy's.
func TestDataEventsCopyOnWrite(t *testing.T) {
	for _, every := range []int{1, 25} {
		for seed := int64(1); seed <= 4; seed++ {
			r := rand.New(rand.NewSource(seed))
			nd := randNode(r, 30+r.Intn(20))
			snd, rcv := pairCores(t, nd)
			p := rcv.peers["n2"]
			var evs []Event
			var kept []dataset.Node // deep clones of evs' data, when taken
			digs := map[uint64]uint64{}
			take := func() {
				for _, ev := range dataEvents(rcv) {
					evs = append(evs, ev)
					kept = append(kept, ev.Data.Clone())
				}
			}
			take()
			if len(evs) != 1 || evs[0].Changes != nil {
				t.Fatalf("seed %d: after the full copy: %d events, changes %+v; want 1 without changes", seed, len(evs), evs[0].Changes)
			}
			digs[snd.local.Gen] = snd.dig
			shared := 0
			for step := 1; step <= 150; step++ {
				prev := localCopy(snd)
				mutate(r, &nd)
				snd.publish(nd)
				if snd.local.Gen == prev.Gen {
					continue
				}
				digs[snd.local.Gen] = snd.dig
				rcv.receive(encode(&message{V: 2, Kind: kindDelta, From: "n2", Inc: 9, Base: prev.Gen, Gen: snd.local.Gen, Delta: diff(prev, snd.local)}))
				if w := p.cow; !w.resOK || w.res != resources(p.data.Services) {
					t.Fatalf("seed %d step %d: resources kept %d (%v), the copy holds %d", seed, step, w.res, w.resOK, resources(p.data.Services))
				}
				if step%every == 0 {
					take()
				}
			}
			take()
			for i, ev := range evs {
				var s sums
				s.full(ev.Data, 2)
				if s.value() != digs[ev.Data.Gen] {
					t.Fatalf("seed %d every %d: event %d (gen %d) differs from the sender's data", seed, every, i, ev.Data.Gen)
				}
				if !reflect.DeepEqual(*ev.Data, kept[i]) {
					t.Fatalf("seed %d every %d: event %d (gen %d) modified after it was handed over", seed, every, i, ev.Data.Gen)
				}
				if i == 0 {
					continue
				}
				ch, base := ev.Changes, evs[i-1].Data
				if ch == nil || ch.Base != base {
					t.Fatalf("seed %d every %d: event %d: changes %+v, want based on the event before", seed, every, i, ch)
				}
				shared += checkChanges(t, base, ev.Data, ch)
			}
			if shared == 0 {
				t.Fatalf("seed %d every %d: no unchanged instance with resources shared between two events", seed, every)
			}
		}
	}
}

// checkChanges fails t when an entry that differs between base and n is
// not listed in ch, or the head differs without ch.Head; it returns how
// many unchanged instances with resources n shares with base.
func checkChanges(t *testing.T, base, n *dataset.Node, ch *dataset.Changes) int {
	t.Helper()
	if !reflect.DeepEqual(head(base), head(n)) && !ch.Head {
		t.Fatalf("gen %d -> %d: the head changed, not said", base.Gen, n.Gen)
	}
	shared := 0
	for _, k := range unionKeys(base.Services, n.Services) {
		a, aok := base.Services[k]
		b, bok := n.Services[k]
		if aok != bok || !reflect.DeepEqual(a, b) {
			if !ch.Services[k] {
				t.Fatalf("gen %d -> %d: service %s changed, not said", base.Gen, n.Gen, k)
			}
		} else if !ch.Services[k] && len(a.Resources) > 0 && reflect.ValueOf(a.Resources).Pointer() == reflect.ValueOf(b.Resources).Pointer() {
			shared++
		}
	}
	for _, k := range unionKeys(base.Targets, n.Targets) {
		a, aok := base.Targets[k]
		b, bok := n.Targets[k]
		if (aok != bok || !reflect.DeepEqual(a, b)) && !ch.Targets[k] {
			t.Fatalf("gen %d -> %d: target %s changed, not said", base.Gen, n.Gen, k)
		}
	}
	for _, k := range unionKeys(base.Configs, n.Configs) {
		a, aok := base.Configs[k]
		b, bok := n.Configs[k]
		if (aok != bok || !reflect.DeepEqual(a, b)) && !ch.Configs[k] {
			t.Fatalf("gen %d -> %d: config %s changed, not said", base.Gen, n.Gen, k)
		}
	}
	return shared
}

func unionKeys[V any](a, b map[string]V) []string {
	var ks []string
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	return ks
}

// TestDataEventAfterFullHasNoChanges: a full copy taken after deltas
// (a new run of the peer) is handed over as a whole, and the deltas after
// it are based on its event.
func TestDataEventAfterFullHasNoChanges(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	nd := randNode(r, 20)
	snd, rcv := pairCores(t, nd)
	prev := localCopy(snd)
	nd.Services["svc0001"] = dataset.Instance{Avail: "down"}
	snd.publish(nd)
	rcv.receive(encode(&message{V: 2, Kind: kindDelta, From: "n2", Inc: 9, Base: prev.Gen, Gen: snd.local.Gen, Delta: diff(prev, snd.local)}))
	dataEvents(rcv)
	// a new run: a full copy of another incarnation
	rcv.receive(encode(&message{V: 2, Kind: kindFull, From: "n2", Inc: 10, Gen: snd.local.Gen, Node: snd.local}))
	evs := dataEvents(rcv)
	if len(evs) != 1 || evs[0].Changes != nil {
		t.Fatalf("after a full copy: %d events, changes %+v; want one without changes", len(evs), evs)
	}
	prev = localCopy(snd)
	nd.Services["svc0002"] = dataset.Instance{Avail: "up"}
	snd.publish(nd)
	rcv.receive(encode(&message{V: 2, Kind: kindDelta, From: "n2", Inc: 10, Base: prev.Gen, Gen: snd.local.Gen, Delta: diff(prev, snd.local)}))
	next := dataEvents(rcv)
	if len(next) != 1 || next[0].Changes == nil || next[0].Changes.Base != evs[0].Data || !next[0].Changes.Services["svc0002"] ||
		len(next[0].Changes.Services) != 1 || next[0].Changes.Head {
		t.Fatalf("the delta after the full copy: %+v", next)
	}
}
