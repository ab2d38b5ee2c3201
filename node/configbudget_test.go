package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// countingCodec is fakeCodec counting the bytes it parsed.
type countingCodec struct {
	fakeCodec
	bytes *int
}

func (c countingCodec) ParseService(name string, raw []byte) (*config.ServiceConfig, error) {
	*c.bytes += len(raw)
	return c.fakeCodec.ParseService(name, raw)
}

// A peer's copy with 2,000 configs of 7 KB (14 MB of text): one call
// parses at most mergeBudget bytes of them, the rest goes on in later
// calls of mergeMore (the daemon's later turns) or of Tick, until all are
// installed; the requests of the loop are served in between.
func TestPeerConfigsMergedWithinABudget(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	parsed := 0
	c.cfg.Configs = countingCodec{bytes: &parsed}
	raw := strings.Repeat("# padding padding padding padding\n", 220)
	es := map[string]dataset.ConfigEntry{}
	for i := range 2000 {
		es[fmt.Sprintf("s%04d", i)] = entry(ver(1, "n2"), raw, map[string]uint64{"n2": 1})
	}
	es["s1999"] = entry(ver(9, "n2"), raw, map[string]uint64{"n2": 9}) // parsed last
	announce(c, es, t0)
	if parsed > mergeBudget || !c.ConfigMergesLeft() {
		t.Fatalf("one heartbeat parsed %d bytes (budget %d), merges left %v", parsed, mergeBudget, c.ConfigMergesLeft())
	}
	if c.State().Lamport < 9 {
		t.Errorf("Lamport clock %d: the versions left for later were not witnessed (an edit made meanwhile would lose)", c.State().Lamport)
	}
	d.drive(t0)
	if !c.NextTick(t0, time.Second).Equal(t0.Add(time.Second)) {
		t.Error("merges left, but the core does not ask for a tick")
	}
	turns := 1
	for c.ConfigMergesLeft() {
		before := parsed
		if turns%2 == 0 {
			c.mergeMore(t0)
		} else {
			c.tick(t0) // the safety net goes on too
		}
		if parsed-before > mergeBudget {
			t.Fatalf("turn %d parsed %d bytes (budget %d)", turns, parsed-before, mergeBudget)
		}
		d.drive(t0)
		if turns++; turns > 100 {
			t.Fatal("the merges do not end")
		}
	}
	if len(d.svcs) != 2000 || parsed != 2000*len(raw) {
		t.Fatalf("%d configs installed, %d bytes parsed; want 2000, each parsed once", len(d.svcs), parsed)
	}
	t.Logf("2,000 configs of %d bytes installed in %d turns", len(raw), turns)
}

// Insider: the texts of the configs a node holds are
// bounded in all (100 configs of 500 KiB grew every daemon by 130 MB):
// a peer's config that would take them over the bound is refused and said,
// and taken once it fits (a config deleted meanwhile); an edit made here
// that would is refused with the reason.
func TestConfigTextsBoundedInAll(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	raw := strings.Repeat("# 500 KiB of text, line after line\n", (500<<10)/35)
	fit := config.MaxServiceConfigs / len(raw)
	es := map[string]dataset.ConfigEntry{}
	for i := range fit + 2 {
		es[fmt.Sprintf("c%03d", i)] = entry(ver(1, "n2"), raw, map[string]uint64{"n2": 1})
	}
	announce(c, es, t0)
	var refused []ConfigRefused
	for now := t0; c.ConfigMergesLeft() || c.HasReady(); now = now.Add(time.Millisecond) {
		refused = append(refused, eventsOf[ConfigRefused](d.drive(now))...)
		c.mergeMore(now)
	}
	if len(d.svcs) != fit || len(refused) != 2 || !strings.Contains(refused[0].Err, "bytes in all, more than 16777216") {
		t.Fatalf("%d configs installed (want %d), refusals %+v: want the 2 beyond the bound refused", len(d.svcs), fit, refused)
	}
	tk := c.editConfig(ConfigRequest{Service: "mine", Config: &config.ServiceConfig{Name: "mine", Raw: []byte(raw)}, What: "created", Now: t0})
	if a := answers(c)[tk]; a.Err == nil || !strings.Contains(a.Err.Error(), "refused: the service configs of this node would hold") {
		t.Fatalf("create: got %+v, want it refused", a)
	}
	if _, ok := d.svcs["mine"]; ok {
		t.Fatal("the refused create was installed")
	}
	// a smaller edit of an installed config goes in
	c.editConfig(ConfigRequest{Service: "c000", Config: &config.ServiceConfig{Name: "c000", Raw: []byte("small\n")}, What: "changed", Now: t0})
	d.drive(t0)
	if got := string(d.svcs["c000"].Raw); got != "small\n" {
		t.Fatalf("c000 = %.20q, want the smaller edit installed", got)
	}
	// the peer's data again: the config refused fits now
	es["c000"] = entry(ver(c.State().Lamport, "n1"), "small\n", map[string]uint64{"n1": c.State().Lamport})
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1,
		Services: map[string]dataset.Instance{}, Configs: es, Gen: 2}}, t0)
	d.drive(t0)
	if len(d.svcs) != fit+1 {
		t.Fatalf("%d configs installed, want %d once c000 shrank", len(d.svcs), fit+1)
	}
}
