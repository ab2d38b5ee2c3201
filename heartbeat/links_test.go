package heartbeat

import (
	"fmt"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/clock"
)

// newLinkCluster is a memCluster of n nodes with two network links each.
func newLinkCluster(t *testing.T, n int) *memCluster {
	c := &memCluster{t: t, clk: clock.NewFake(t0), members: memberList(n),
		hb: map[string]Heartbeat{}, seen: map[string]map[string]*dataset.Node{}, evs: map[string][]Event{}}
	for i := range c.members {
		c.members[i].Links = []string{c.members[i].Addr, fmt.Sprintf("10.1.0.%d:10000", i+1)}
	}
	c.net = NewMemNetwork(c.clk)
	for _, m := range c.members {
		c.join(m.Name, testSecret, "prod")
	}
	return c
}

// settledLinkCluster is newLinkCluster whose nodes published a service
// each, a minute ago.
func settledLinkCluster(t *testing.T, n int) *memCluster {
	c := newLinkCluster(t, n)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	c.net.Advance(time.Minute)
	return c
}

// events returns and forgets the events of observer of kind about node.
func (c *memCluster) events(observer string, kind Kind, node string) []Event {
	c.collect()
	var out, keep []Event
	for _, ev := range c.evs[observer] {
		if ev.Kind == kind && ev.Node == node {
			out = append(out, ev)
		} else {
			keep = append(keep, ev)
		}
	}
	c.evs[observer] = keep
	return out
}

func linkOf(t *testing.T, h Heartbeat, peer, link string) LinkStatus {
	t.Helper()
	for _, l := range peerOf(t, h, peer).Links {
		if l.Name == link {
			return l
		}
	}
	t.Fatalf("no link %s to %s in %+v", link, peer, peerOf(t, h, peer).Links)
	return LinkStatus{}
}

// One link of a node cut for a long while: nobody is declared down, the
// link is reported down (LinkDown, once, both sides) and up again when
// restored (LinkUp), and the data keeps flowing over the other link.
func TestLinkCutIsNotADown(t *testing.T) {
	c := settledLinkCluster(t, 3)
	c.collect()
	for _, m := range c.members {
		c.evs[m.Name] = nil
		for _, l := range peerOf(t, c.hb["n01"], "n02").Links {
			if !l.Up {
				t.Fatalf("before the cut: link %+v down", l)
			}
		}
	}
	c.net.CutLink("n01", 1, true)
	c.net.Advance(2 * time.Minute)
	for _, o := range []string{"n02", "n03"} {
		if evs := c.events(o, Down, "n01"); len(evs) != 0 {
			t.Fatalf("%s declared n01 down %d times with one link of two cut", o, len(evs))
		}
	}
	for _, pair := range [][2]string{{"n02", "n01"}, {"n03", "n01"}, {"n01", "n02"}, {"n01", "n03"}} {
		evs := c.events(pair[0], LinkDown, pair[1])
		if len(evs) != 1 || evs[0].Link != "net2" || evs[0].Addr == "" {
			t.Fatalf("%s: LinkDown events of %s: %+v, want one on net2", pair[0], pair[1], evs)
		}
		if l := linkOf(t, c.hb[pair[0]], pair[1], "net2"); l.Up {
			t.Fatalf("%s: net2 to %s up after the cut: %+v", pair[0], pair[1], l)
		}
		if l := linkOf(t, c.hb[pair[0]], pair[1], "net1"); !l.Up {
			t.Fatalf("%s: net1 to %s down: %+v", pair[0], pair[1], l)
		}
		if !peerOf(t, c.hb[pair[0]], pair[1]).Up {
			t.Fatalf("%s: %s down", pair[0], pair[1])
		}
	}
	if n := len(c.events("n01", Down, "n02")) + len(c.events("n01", Down, "n03")); n != 0 {
		t.Fatalf("n01 declared a peer down %d times", n)
	}
	// data goes over the live link
	want := svcNode("n01", 2, "web", "db")
	c.publish("n01", want)
	if err := c.converged(map[string]dataset.Node{"n01": want}, "n02", "n03"); err != nil {
		t.Fatalf("data over the live link: %v", err)
	}
	c.net.CutLink("n01", 1, false)
	c.net.Advance(20 * time.Second)
	for _, o := range []string{"n02", "n03"} {
		evs := c.events(o, LinkUp, "n01")
		if len(evs) != 1 || evs[0].Link != "net2" {
			t.Fatalf("%s: LinkUp events of n01: %+v, want one on net2", o, evs)
		}
		if l := linkOf(t, c.hb[o], "n01", "net2"); !l.Up {
			t.Fatalf("%s: net2 to n01 still down: %+v", o, l)
		}
	}
	// the first link cut: same, the data goes over the second
	c.net.CutLink("n01", 0, true)
	c.net.Advance(2 * time.Minute)
	want = svcNode("n01", 3, "web", "db", "mail")
	c.publish("n01", want)
	if err := c.converged(map[string]dataset.Node{"n01": want}, "n02", "n03"); err != nil {
		t.Fatalf("data over net2: %v", err)
	}
	for _, o := range []string{"n02", "n03"} {
		if evs := c.events(o, Down, "n01"); len(evs) != 0 {
			t.Fatalf("%s declared n01 down with net1 cut", o)
		}
		if evs := c.events(o, LinkDown, "n01"); len(evs) != 1 || evs[0].Link != "net1" {
			t.Fatalf("%s: LinkDown events of n01: %+v, want one on net1", o, evs)
		}
	}
}

// Every link of a node cut: it is down, as with one link; its links are
// not reported one by one.
func TestLinkAllCutIsADown(t *testing.T) {
	c := newLinkCluster(t, 3)
	c.net.Advance(time.Minute)
	c.collect()
	c.evs["n02"] = nil
	c.net.CutLink("n01", 0, true)
	c.net.CutLink("n01", 1, true)
	c.net.Advance(16 * time.Second)
	if n := c.take("n02", Down, "n01"); n != 1 {
		t.Fatalf("n02: %d Down events of n01 with every link cut, want 1", n)
	}
	if evs := c.events("n02", LinkDown, "n01"); len(evs) != 0 {
		t.Fatalf("n02: LinkDown events with the peer down: %+v", evs)
	}
}

// An old frame of a peer delivered again on a cut link (held back, or
// replayed by someone on the path: the real transport's replay window
// refuses it first, envelope_links_test.go) does not make the link alive:
// a link is heard only by a frame newer than every one heard on it.
func TestLinkOldFrameOnOtherLinkNotHeard(t *testing.T) {
	c := newLinkCluster(t, 2)
	var first []byte
	c.net.Withhold("n01", "n02", func(b []byte) bool {
		if first == nil {
			first = append([]byte(nil), b...)
		}
		return false
	})
	c.net.Advance(time.Minute)
	c.net.CutLink("n01", 1, true)
	c.net.Advance(time.Minute)
	c.collect()
	if l := linkOf(t, c.hb["n02"], "n01", "net2"); l.Up {
		t.Fatalf("net2 up after the cut: %+v", l)
	}
	for i := 0; i < 10; i++ {
		c.net.Advance(time.Second)
		c.net.Redeliver("n01", "n02", 1, first)
	}
	if l := linkOf(t, c.hb["n02"], "n01", "net2"); l.Up {
		t.Fatalf("an old frame delivered on net2 made it up: %+v", l)
	}
	if evs := c.events("n02", LinkUp, "n01"); len(evs) != 0 {
		t.Fatalf("LinkUp on an old frame: %+v", evs)
	}
}

// NoteLinkAlive keeps a peer silent on every network link up while the
// external link makes progress, shows the link, and stops counting when
// the calls stop; it brings a down peer up like a beat.
func TestNoteLinkAlive(t *testing.T) {
	c := newLinkCluster(t, 2)
	c.net.Advance(time.Minute)
	c.collect()
	c.evs["n02"] = nil
	c.net.Partition([]string{"n01"}, []string{"n02"})
	for i := 0; i < 60; i++ {
		c.hb["n02"].NoteLinkAlive("n01", "disk")
		c.net.Advance(time.Second)
	}
	if evs := c.events("n02", Down, "n01"); len(evs) != 0 {
		t.Fatalf("n01 declared down while its disk link advanced")
	}
	p := peerOf(t, c.hb["n02"], "n01")
	if !p.Up || len(p.Links) != 3 {
		t.Fatalf("peer with the disk link: %+v", p)
	}
	if l := linkOf(t, c.hb["n02"], "n01", "disk"); !l.Up || !l.External || l.LastHeard.IsZero() {
		t.Fatalf("disk link: %+v", l)
	}
	for _, name := range []string{"net1", "net2"} {
		if l := linkOf(t, c.hb["n02"], "n01", name); l.Up {
			t.Fatalf("%s up while cut: %+v", name, l)
		}
	}
	// a network link's name is not an external link
	c.hb["n02"].NoteLinkAlive("n01", "net1")
	c.hb["n02"].NoteLinkAlive("nobody", "disk")
	if l := linkOf(t, c.hb["n02"], "n01", "net1"); l.Up {
		t.Fatalf("NoteLinkAlive made a network link up: %+v", l)
	}
	if evs := c.events("n02", LinkDown, "n01"); len(evs) != 2 || evs[0].Link == "disk" || evs[1].Link == "disk" {
		t.Fatalf("LinkDown events with the disk link alive: %+v", evs)
	}
	c.collect()
	c.evs["n02"] = nil
	// no more progress: down after Timeout
	c.net.Advance(16 * time.Second)
	if n := c.take("n02", Down, "n01"); n != 1 {
		t.Fatalf("n01 not declared down once its disk link stopped: %d", n)
	}
	// a fresh note brings it up again
	c.hb["n02"].NoteLinkAlive("n01", "disk")
	if n := c.take("n02", Up, "n01"); n != 1 {
		t.Fatalf("NoteLinkAlive on a down peer: %d Up events, want 1", n)
	}
}

// Members with one address have one link, never reported on its own.
func TestOneLinkNoLinkEvents(t *testing.T) {
	c := newMemCluster(t, 2)
	c.net.Advance(time.Minute)
	if ls := peerOf(t, c.hb["n01"], "n02").Links; len(ls) != 1 || ls[0].Name != "net1" || !ls[0].Up {
		t.Fatalf("one link: %+v", ls)
	}
	c.net.Partition([]string{"n01"}, []string{"n02"})
	c.net.Advance(time.Minute)
	if evs := c.events("n01", LinkDown, "n02"); len(evs) != 0 {
		t.Fatalf("LinkDown with one link: %+v", evs)
	}
	_ = config.Member{}
}

// A link that fails stops carrying data within a beat and a half, long
// before it is declared down (hb.timeout): a change published then reaches
// the peers over the other link at once.
func TestLinkDataLeavesAFailedLinkEarly(t *testing.T) {
	c := settledLinkCluster(t, 3)
	c.net.CutLink("n01", 0, true)
	c.net.Advance(8 * time.Second) // a beat and a half (7.5s) and a bit; hb.timeout is 15s
	if l := linkOf(t, c.hb["n02"], "n01", "net1"); !l.Up {
		t.Fatalf("net1 already declared down: %+v", l)
	}
	want := svcNode("n01", 2, "web", "db")
	c.publish("n01", want)
	if err := c.converged(map[string]dataset.Node{"n01": want}, "n02", "n03"); err != nil {
		t.Fatalf("a change published 8s after net1 failed: %v", err)
	}
	// and the other way: n02's change reaches n01
	want2 := svcNode("n02", 2, "web", "mail")
	c.publish("n02", want2)
	if err := c.converged(map[string]dataset.Node{"n02": want2}, "n01"); err != nil {
		t.Fatalf("a change of n02 for n01 8s after net1 failed: %v", err)
	}
}

// Beats only on one of two links (an MTU fault, or an attacker on net1
// who passes the beats and drops the rest), the link data goes over.
// Before, n02 heard n01 on both links and went on
// sending data over net1: n01's copy of n02 stayed behind, n02 stale for
// good (its dead service never failed over). Now n01's beats say its copy
// is behind; n02 sends over every link, n01 catches up before hb.timeout
// (never stale), and n02 reports net1 degraded (an alarm: nobody down);
// data keeps flowing over net2. Once net1 passes data again, n02 reports
// it repaired.
func TestLinkBeatsOnlyIsDegradedNotStale(t *testing.T) {
	c := settledLinkCluster(t, 2)
	c.collect()
	c.net.BeatsOnly("n02", 0, true)
	for i := 2; i <= 4; i++ {
		want := svcNode("n02", uint64(i), "web", fmt.Sprint("s", i))
		c.publish("n02", want)
		changed := c.clk.Now()
		for c.clk.Now().Sub(changed) < 15*time.Second && c.converged(map[string]dataset.Node{"n02": want}, "n01") != nil {
			c.net.Advance(100 * time.Millisecond)
		}
		if err := c.converged(map[string]dataset.Node{"n02": want}, "n01"); err != nil {
			t.Fatalf("change %d of n02 with net1 passing beats only: %v", i, err)
		}
		took := c.clk.Now().Sub(changed)
		t.Logf("change %d of n02 reached n01 %s later (beat period 5s, hb.timeout 15s)", i, took)
		if i > 2 && took > 100*time.Millisecond {
			t.Fatalf("change %d of n02 reached n01 %s later, once net1 is known degraded: want at once", i, took)
		}
		c.net.Advance(20 * time.Second)
	}
	if n := len(c.events("n01", Stale, "n02")); n != 0 {
		t.Fatalf("n01 marked n02 stale %d times with net2 healthy", n)
	}
	if n := len(c.events("n01", Down, "n02")) + len(c.events("n02", Down, "n01")); n != 0 {
		t.Fatalf("%d Down events with one link passing beats", n)
	}
	deg := c.events("n02", LinkDegraded, "n01")
	if len(deg) != 1 || deg[0].Link != "net1" {
		t.Fatalf("n02's LinkDegraded events: %+v, want one for net1", deg)
	}
	if l := linkOf(t, c.hb["n02"], "n01", "net1"); !l.Degraded || !l.Up {
		t.Fatalf("n02's net1 to n01: %+v, want up and degraded", l)
	}
	c.net.BeatsOnly("n02", 0, false)
	c.publish("n02", svcNode("n02", 5, "web"))
	c.net.Advance(30 * time.Second)
	c.publish("n02", svcNode("n02", 6, "web"))
	c.net.Advance(5 * time.Second)
	if rep := c.events("n02", LinkRepaired, "n01"); len(rep) != 1 || rep[0].Link != "net1" {
		t.Fatalf("n02's LinkRepaired events once net1 passes data again: %+v", rep)
	}
	if l := linkOf(t, c.hb["n02"], "n01", "net1"); l.Degraded {
		t.Fatalf("net1 still degraded: %+v", l)
	}
}
