package heartbeat

import (
	"testing"
	"time"

	"haven/dataset"
)

// TestMemStaleWhenOnlyBeatsPass: an attacker passes n01's beats to n02 and
// drops the rest. n01's service stops there (a new generation): n02 keeps
// hearing n01 but its copy stays at the old generation. Within hb.timeout
// (not before) n02 declares n01 stale (event and Peers), and the copy is
// still the old one (never shown as current). When the data passes again,
// Fresh, then a Data event with the current copy.
func TestMemStaleWhenOnlyBeatsPass(t *testing.T) {
	c := newMemCluster(t, 2)
	want := map[string]dataset.Node{}
	for _, m := range c.members {
		want[m.Name] = svcNode(m.Name, 1, "web")
		c.publish(m.Name, want[m.Name])
	}
	if err := c.converged(want, "n01", "n02"); err != nil {
		t.Fatal(err)
	}
	c.take("n02", Stale, "n01")
	beatsOnly := true
	c.net.Lose(func(from, to string, b []byte) bool {
		if !beatsOnly || from != "n01" || to != "n02" {
			return false
		}
		m, err := decode(b)
		return err != nil || m.Kind != kindBeat
	})
	down := svcNode("n01", 2, "web")
	down.Services["web"] = dataset.Instance{Avail: dataset.StatusDown, Overall: dataset.StatusDown, Resources: map[string]dataset.Resource{}}
	c.publish("n01", down)
	c.net.Advance(15*time.Second - 100*time.Millisecond)
	if n := c.take("n02", Stale, "n01"); n != 0 {
		t.Fatalf("n01 stale before hb.timeout")
	}
	c.net.Advance(time.Second)
	if n := c.take("n02", Stale, "n01"); n != 1 {
		t.Fatalf("n02 saw %d Stale events of n01 after hb.timeout behind, want 1", n)
	}
	p := peerOf(t, c.hb["n02"], "n01")
	if !p.Up || !p.Stale || p.Gen != 1 || p.AnnouncedGen != 2 {
		t.Fatalf("n02's view of n01: %+v, want up, stale, gen 1, announced 2", p)
	}
	if got := c.seen["n02"]["n01"]; got.Services["web"].Avail != dataset.StatusUp || got.Gen != 1 {
		t.Fatalf("n02 took a copy it never received: %+v", got)
	}
	// stays stale (one event) while only beats pass
	c.net.Advance(time.Minute)
	if n := c.take("n02", Stale, "n01"); n != 0 {
		t.Fatalf("%d more Stale events", n)
	}
	if p := peerOf(t, c.hb["n02"], "n01"); !p.Up || !p.Stale {
		t.Fatalf("n01 no longer stale or up: %+v", p)
	}
	// the data passes again: Fresh, then the current copy
	beatsOnly = false
	c.net.Advance(5 * time.Second)
	c.collect()
	fresh, data := -1, -1
	for i, ev := range c.evs["n02"] {
		if ev.Node != "n01" {
			continue
		}
		switch ev.Kind {
		case Fresh:
			fresh = i
		case Data:
			data = i
		}
	}
	if fresh < 0 || data < fresh {
		t.Fatalf("n02's events after the data passes: fresh at %d, data at %d: %+v", fresh, data, c.evs["n02"])
	}
	if err := c.converged(map[string]dataset.Node{"n01": down}, "n02"); err != nil {
		t.Fatal(err)
	}
	if p := peerOf(t, c.hb["n02"], "n01"); p.Stale || !p.BehindSince.IsZero() {
		t.Fatalf("n01 still stale once current: %+v", p)
	}
}

// TestMemStaleEndsWithDown: a stale peer that goes silent is down, no
// longer stale.
func TestMemStaleEndsWithDown(t *testing.T) {
	c := newMemCluster(t, 2)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	c.net.Lose(func(from, to string, b []byte) bool {
		m, err := decode(b)
		return from == "n01" && to == "n02" && (err != nil || m.Kind != kindBeat)
	})
	c.publish("n01", svcNode("n01", 2))
	c.net.Advance(16 * time.Second)
	if p := peerOf(t, c.hb["n02"], "n01"); !p.Stale {
		t.Fatalf("not stale: %+v", p)
	}
	c.net.Crash("n01")
	c.net.Advance(16 * time.Second)
	if p := peerOf(t, c.hb["n02"], "n01"); p.Up || p.Stale {
		t.Fatalf("crashed stale peer: %+v, want down and not stale", p)
	}
}

// TestMemStaleEndsWithANewRun: n01's data does not reach n02 (beats only),
// n02 holds it stale; n01 crashes and comes back at once, as a new run,
// before n02 could declare it down, and its data passes again. Once n02
// took the new run's copy, n01 is current: the announcement of the dead
// run the copy never caught up with is superseded. Before, n02 kept that
// announcement for ever (the new run's beats, matching the copy, were not
// recorded): n01 stayed stale, its instances unknown, and every service
// it was a candidate of waited for good (found by the simulation's ready
// window property, seed 451).
func TestMemStaleEndsWithANewRun(t *testing.T) {
	c := newMemCluster(t, 2)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	beatsOnly := true
	c.net.Lose(func(from, to string, b []byte) bool {
		m, err := decode(b)
		return beatsOnly && from == "n01" && to == "n02" && (err != nil || m.Kind != kindBeat)
	})
	c.publish("n01", svcNode("n01", 2))
	c.net.Advance(16 * time.Second)
	if p := peerOf(t, c.hb["n02"], "n01"); !p.Stale {
		t.Fatalf("not stale: %+v", p)
	}
	c.net.Crash("n01")
	c.net.Advance(time.Second)
	beatsOnly = false
	c.join("n01", testSecret, "prod")
	c.publish("n01", svcNode("n01", 1, "db"))
	c.net.Advance(30 * time.Second)
	if p := peerOf(t, c.hb["n02"], "n01"); !p.Up || p.Stale {
		t.Fatalf("n02's view of n01's new run: %+v, want up and current", p)
	}
	if got := c.seen["n02"]["n01"]; got == nil || got.Services["db"].Avail != dataset.StatusUp {
		t.Fatalf("n02's copy of n01: %+v, want the new run's", got)
	}
	// nor is a gap of the dead run kept open: no more full copies asked
	needs := c.hb["n02"].Stats().NeedsSent
	c.net.Advance(30 * time.Second)
	if n := c.hb["n02"].Stats().NeedsSent - needs; n != 0 {
		t.Fatalf("n02 asked n01 for %d full copies of a current copy", n)
	}
}
