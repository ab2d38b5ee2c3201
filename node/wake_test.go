package node

import (
	"testing"
	"time"

	"haven/dataset"
	"haven/node/instsm"
)

// An idle core asks for no tick before its next due thing: the first
// periodic check or the safety-net pass; with nothing checked, the pass
// alone. A check that ends brings the next check in.
func TestNextTickIdleSleepsUntilDue(t *testing.T) {
	const poll = 500 * time.Millisecond
	c := New(Config{Name: "n1", WriteThrough: true, CheckInterval: time.Minute, MonitorInterval: 5 * time.Second}, State{})
	c.lastStep = t0
	if got, want := c.NextTick(t0.Add(time.Second), poll), t0.Add(fullPassPeriod); !got.Equal(want) {
		t.Fatalf("no service: next tick at %v, want the safety-net pass at %v", got.Sub(t0), want.Sub(t0))
	}
	c.addInstance("web", instsm.Spec{Local: true, Runnable: true}, t0)
	c.Ready()
	if got := c.NextTick(t0, poll); !got.Equal(t0) {
		t.Fatalf("an instance never checked: next tick at %v, want now", got.Sub(t0))
	}
	c.tick(t0) // its first periodic check
	rd := c.Ready()
	if len(rd.Check) != 1 {
		t.Fatalf("got checks %v, want one", rd.Check)
	}
	if got, want := c.NextTick(t0, poll), t0.Add(fullPassPeriod); !got.Equal(want) {
		t.Fatalf("check running: next tick at %v, want the pass at %v", got.Sub(t0), want.Sub(t0))
	}
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	c.Ready()
	c.tick(t0)
	c.Ready()
	c.lastStep = t0.Add(58 * time.Second)
	if got, want := c.NextTick(t0.Add(58*time.Second), poll), t0.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("next tick at %v, want the next check at %v", got.Sub(t0), want.Sub(t0))
	}
}

// While a rule of Tick reads the clock on every call, the core asks for
// the poll period: the quorum, the rejoin grace.
func TestNextTickPollsWhileTimeMatters(t *testing.T) {
	const poll = 500 * time.Millisecond
	c := New(Config{Name: "n1", WriteThrough: true, Quorum: QuorumConfig{Enabled: true}}, State{})
	c.lastStep = t0
	if got := c.NextTick(t0, poll); !got.Equal(t0.Add(poll)) {
		t.Fatalf("quorum on: next tick at %v, want %v", got.Sub(t0), poll)
	}
	c = New(Config{Name: "n1", WriteThrough: true, ClusterNodes: []string{"n1", "n2"}, RejoinGrace: time.Minute}, State{})
	c.start(t0)
	c.Ready()
	c.lastStep = t0
	if got := c.NextTick(t0, poll); !got.Equal(t0.Add(poll)) {
		t.Fatalf("rejoin: next tick at %v, want %v", got.Sub(t0), poll)
	}
}
