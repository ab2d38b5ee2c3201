package node

import (
	"strings"
	"testing"
	"time"

	"haven/dataset"
	"haven/quorum"
)

// hearRunning is the data of peer p showing svcs up on it.
func hearRunning(c *Core, p string, now time.Time, svcs ...string) {
	d := &dataset.Node{Name: p, Monitor: dataset.NodeIdle, SplitAction: SplitStop, Services: map[string]dataset.Instance{}}
	for _, s := range svcs {
		d.Services[s] = dataset.Instance{Avail: dataset.StatusUp, Overall: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Idle}}
	}
	c.heartbeat(PeerEvent{Node: p, Kind: PeerData, Data: d}, now)
}

// raceCore is node name of a 2-node cluster with an arbitrator both reach,
// web up here and peerSvcs up on peer, which is lost at t0+3s while the
// arbitrator answers: both may have kept the quorum. It returns the Ready
// of the vote.
func raceCore(t *testing.T, name, peer string, peerSvcs ...string) (*Core, Ready) {
	t.Helper()
	at := t0.Add(3 * time.Second)
	c, _ := qcore(t, name, []string{"n1", "n2"}, []quorum.Arbitrator{{Name: "a", Weight: 1}}, SplitStop, peer)
	hearRunning(c, peer, t0, peerSvcs...)
	ticks(c, t0, at)
	c.Ready()
	lose(c, peer, at)
	c.arbitratorResult("a", true, "200 OK", at, at)
	return c, c.Ready()
}

// TestFenceRaceFavoursTheBusierSide: the link between two nodes is cut,
// both keep the vote (an arbitrator both reach) and each may fence the
// other: the side running more services fences at once and keeps them,
// the other waits for the self-stop deadline, whatever their names.
func TestFenceRaceFavoursTheBusierSide(t *testing.T) {
	at := t0.Add(3 * time.Second)
	for _, tc := range []struct {
		name, peer string
		peerSvcs   []string // web runs here
		delayed    bool
		why        string
	}{
		{"n1", "n2", []string{"db", "mail"}, true, "the side running more services fences first"},
		{"n2", "n1", nil, false, ""},
		{"n2", "n1", []string{"db"}, true, "the first node by name fences first"},
	} {
		c, rd := raceCore(t, tc.name, tc.peer, tc.peerSvcs...)
		if got := len(rd.Fences) == 0; got != tc.delayed {
			t.Fatalf("%s, %s running %v: fences %v, want delayed %v", tc.name, tc.peer, tc.peerSvcs, rd.Fences, tc.delayed)
		}
		if f := c.Snapshot(at).Fencing[tc.peer]; tc.delayed && !strings.Contains(f, tc.why) {
			t.Fatalf("%s: gate %q, want %q", tc.name, f, tc.why)
		}
	}
}

// TestFenceDoneHowIsSaid: a fence done through the disk is logged as such,
// not as a fence command that succeeded.
func TestFenceDoneHowIsSaid(t *testing.T) {
	c, rd := raceCore(t, "n2", "n1") // n2 runs more: it fences n1 at once
	if len(rd.Fences) != 1 {
		t.Fatalf("fences %+v", rd.Fences)
	}
	c.Step(FenceEnded{Node: "n1", How: "fenced through the disk: n1's slot has not advanced for 9s", Now: t0.Add(12 * time.Second)})
	var said []string
	for _, e := range c.Ready().Events {
		if f, ok := e.(Fenced); ok {
			said = append(said, f.String())
		}
	}
	if len(said) != 1 || said[0] != "fenced n1: fenced through the disk: n1's slot has not advanced for 9s" {
		t.Fatalf("fenced events %q", said)
	}
}
