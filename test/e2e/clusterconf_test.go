package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"haven/test/chaos"
)

// The cluster.toml of n1 names one one-vote arbitrator
// and n2's another (a move of the arbitrator half done). Each arbitrator
// hears one node and grants it alone: before, after a cut of the link
// between the nodes, n2 took web over while n1 kept it (both "granted,
// exclusive"): it ran twice. Now the nodes compare a digest of what must
// agree: both say which file differs (svcmon, daemon status, the log) and
// disable ha orchestration, and n2 starts nothing after the cut; the
// external journal shows web on n1 only.
func TestNetnsDivergentArbitratorsNeverTwice(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces)
	const addrA, addrB = "192.0.2.50", "192.0.2.51"
	portA, portB := freePort(t), freePort(t)
	q := newQuorumBedEach(t, []string{"n1", "n2"}, stopOnSplit, func(_ *chaos.Bed, n string) string {
		addr, port := addrA, portA
		if n == "n2" {
			addr, port = addrB, portB
		}
		return fmt.Sprintf("[arbitrator.a1]\nuri = \"haven://%s:%d\"\ntimeout = \"1s\"\n", addr, port)
	}, map[string]string{"arba": addrA, "arbb": addrB}, 1)
	c := q.nodes
	q.oneVoteArbitrator("arba", addrA, portA)
	q.oneVoteArbitrator("arbb", addrB, portB)
	for _, n := range []string{"n1", "n2"} {
		q.waitFor(30*time.Second, n+" holds its one-vote arbitrator's lease", func() bool {
			qs := c[n].status().Cluster.QuorumState
			return qs != nil && len(qs.Arbitrators) == 1 && qs.Arbitrators[0].Answered
		})
	}
	createService(t, c["n1"], "web", q.service("n1", "n2"))
	c["n1"].must("svcmgr", "-s", "web", "start", "--wait", "--time", "60s")
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))

	// what each node says
	other := map[string]string{"n1": "n2", "n2": "n1"}
	for _, n := range []string{"n1", "n2"} {
		want := other[n] + ": cluster.toml [arbitrator.*]"
		if d := c[n].status().Cluster.ConfDiffers; !strings.Contains(d, want) {
			q.dump()
			t.Fatalf("%s: conf_differs %q, want it naming %q", n, d, want)
		}
		if out := c[n].must("svcmon"); !strings.Contains(out, want) || !strings.Contains(out, "ha orchestration disabled") {
			t.Errorf("%s: svcmon does not say the configuration differs:\n%s", n, out)
		}
		if out := c[n].must("nodemgr", "daemon", "status"); !strings.Contains(out, "DIFFERS: the configuration of "+want) {
			t.Errorf("%s: nodemgr daemon status does not say the configuration differs:\n%s", n, out)
		}
		if !strings.Contains(nodeLog(t, c[n]), "cluster members' configuration differs") {
			t.Errorf("%s: the log does not say the configuration differs", n)
		}
	}

	cut := uptime(t)
	q.ok(q.bed.OneWay("n1", "n2"))
	q.ok(q.bed.OneWay("n2", "n1"))
	// Before, n2 started web 10.4s after the cut in this bed (its lease
	// of arbb exclusive, n1's lease end passed): watch four times as long.
	deadline := time.Now().Add(42 * time.Second)
	for time.Now().Before(deadline) {
		if e, ok := q.first("n2", "start", cut); ok {
			q.dump()
			t.Fatalf("n2 started web %.1fs after the cut while n1 runs it", e.T-cut)
		}
		time.Sleep(500 * time.Millisecond)
	}
	q.noOverlap()
	if _, ok := q.first("n1", "stop", cut); ok {
		t.Fatal("n1 stopped web")
	}
}
