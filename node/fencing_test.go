package node

import (
	"testing"
	"time"

	"haven/dataset"
	"haven/internal/clock"
	"haven/node/instsm"
)

// startToken runs a start of web on c and returns the token of its
// action, checking that the Ready that orders it persists it.
func maStartToken(t *testing.T, c *Core, now time.Time) uint64 {
	t.Helper()
	if _, err := c.runAction("web", "start", "test", now); err != nil {
		t.Fatal(err)
	}
	rd := c.Ready()
	if len(rd.Run) != 1 || rd.Run[0].Kind != "start" {
		t.Fatalf("got Run %+v, want one start", rd.Run)
	}
	tok := rd.Run[0].FencingToken
	if rd.Persist == nil || rd.Persist.Services["web"].FencingToken != tok || rd.Persist.Services["web"].FencingSeen != tok {
		t.Fatalf("the start's token %d is not in the Ready's Persist (%+v): it must be on disk before the start runs", tok, rd.Persist)
	}
	for _, e := range rd.Events {
		if b, ok := e.(ActionBegin); ok && b.FencingToken != tok {
			t.Fatalf("ActionBegin says token %d, the action %d", b.FencingToken, tok)
		}
	}
	c.actionDone("web", "start", nil, now)
	rd = c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: dataset.StatusUp}}, now)
	c.Ready()
	return tok
}

func TestFencingTokenIncreasesPersistsAndReachesStopAndCheck(t *testing.T) {
	clk := clock.NewFake(t0)
	c := maNode(t, "n2", "", false, clk.Now())
	maHear(c, maPeer("n1", false, false), clk.Now())
	maHear(c, maPeer("n3", false, false), clk.Now())
	first := maStartToken(t, c, clk.Now())
	if first != 2 { // n2 is the second of n1 n2 n3: 2, 5, 8...
		t.Fatalf("got first token %d on n2, want 2", first)
	}
	if i, _ := c.Dataset(dataset.Node{}).Services["web"]; i.FencingToken != first {
		t.Fatalf("the dataset publishes token %d, want %d", i.FencingToken, first)
	}
	// the check and the stop carry the running instance's token
	c.checkNow("web")
	if rd := c.Ready(); len(rd.Check) != 1 || rd.Check[0].FencingToken != first {
		t.Fatalf("got checks %+v, want token %d", rd.Check, first)
	} else {
		c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: dataset.StatusUp}}, clk.Now())
		c.Ready()
	}
	if _, err := c.runAction("web", "stop", "test", clk.Now()); err != nil {
		t.Fatal(err)
	}
	if rd := c.Ready(); len(rd.Run) != 1 || rd.Run[0].FencingToken != first {
		t.Fatalf("got Run %+v, want the stop with token %d", rd.Run, first)
	}
	c.actionDone("web", "stop", nil, clk.Now())
	rd := c.Ready()
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: dataset.StatusDown}}, clk.Now())
	c.Ready()
	// a peer used 10 meanwhile: the next start here is above it, in n2's numbers
	d := maPeer("n1", false, false)
	i := d.Services["web"]
	i.FencingToken = 10
	d.Services["web"] = i
	c.heartbeat(PeerEvent{Node: "n1", Kind: PeerData, Data: d}, clk.Now())
	if rd := c.Ready(); rd.Persist == nil || rd.Persist.Services["web"].FencingSeen != 10 {
		t.Fatalf("a peer's greater token is not persisted: %+v", rd.Persist)
	}
	if tok := maStartToken(t, c, clk.Now()); tok != 11 {
		t.Fatalf("got token %d after a peer's 10, want 11 (n2's next above 10)", tok)
	}
}

// A node that restarts with no peer heard still knows, from its disk,
// the highest token it used or heard of.
func TestFencingTokenSurvivesRestart(t *testing.T) {
	clk := clock.NewFake(t0)
	c := maNode(t, "n1", "", false, clk.Now())
	d := maPeer("n3", false, false)
	i := d.Services["web"]
	i.FencingSeen = 30 // n3 heard of 30 from n2
	d.Services["web"] = i
	maHear(c, d, clk.Now())
	disk := c.State().Clone()
	// the daemon restarts: a new core from the disk, no peer heard yet
	c2 := New(Config{Name: "n1", ClusterNodes: []string{"n1", "n2", "n3"}, Local: &maLocal{name: "n1"}, WriteThrough: true}, disk)
	c2.addInstance("web", instsm.Spec{Local: true, Runnable: true}, clk.Now())
	c2.Ready()
	if tok := maStartToken(t, c2, clk.Now()); tok != 31 {
		t.Fatalf("got token %d after a restart that knew 30, want 31", tok)
	}
}

// Two nodes that do not hear each other (a split without quorum) never
// pick the same token, whatever each knows.
func TestFencingTokensNeverCollideAcrossNodes(t *testing.T) {
	used := map[uint64]string{}
	for _, name := range []string{"n1", "n2", "n3"} {
		c := maNode(t, name, "", false, t0)
		prev := uint64(0)
		for k := 0; k < 5; k++ {
			tok := maStartToken(t, c, t0)
			if tok <= prev {
				t.Fatalf("%s: token %d after %d", name, tok, prev)
			}
			if other, ok := used[tok]; ok {
				t.Fatalf("token %d used by %s and %s", tok, other, name)
			}
			used[tok] = name
			prev = tok
			if _, err := c.runAction("web", "stop", "test", t0); err != nil {
				t.Fatal(err)
			}
			c.Ready()
			c.actionDone("web", "stop", nil, t0)
			rd := c.Ready()
			c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#main": {Status: dataset.StatusDown}}, t0)
			c.Ready()
		}
	}
}
