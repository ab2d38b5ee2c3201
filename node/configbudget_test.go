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
// calls of MergeMore (the daemon's later turns) or of Tick, until all are
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
			c.MergeMore(t0)
		} else {
			c.Tick(t0) // the safety net goes on too
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
