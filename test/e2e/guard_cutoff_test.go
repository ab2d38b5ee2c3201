package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The quorum-gated failover of a VIP+app service whose owner is cut off
// (its bridge port down: no peer, no arbitrator), with the default hb
// timings (hb.timeout 15s, interval 5s) and the default guard_lease: the
// owner's guard lease is anchored on its acknowledged beats, so the
// survivors' gate opens at most quorum.GuardAfterHeard after they
// declared it down (docs/behaviour.md 3.1). The watcher outside the
// cluster (pid files and /proc, the VIP on each interface, every 20 ms)
// sees the owner's process and VIP gone before a survivor's start, and
// the survivor's start within hb.timeout + 5s of the cut (ready_fast_ack
// on: the default ready_period, 16s, would add to it).
// HAVEN_GUARD_RUNS=10 repeats the cut and prints the figures.

// defaultHB rewrites a bed's node.toml: the default hb timings, the
// default ready_period (16s) and ready_fast_ack on (the start comes once
// every live candidate acknowledged the claim: without it, ready_period
// adds its 16s to every failover).
func defaultHB(s string) string {
	s = strings.Replace(s, `timeout = "3s"`, `timeout = "15s"`, 1)
	s = strings.Replace(s, `interval = "1s"`, `interval = "5s"`, 1)
	return strings.Replace(s, `ready_period = "2s"`, "ready_period = \"16s\"\nready_fast_ack = true", 1)
}

// vipApp is the bed's app with a VIP on the bed's interface.
func (q *quorumBed) vipApp(nodes ...string) string {
	return q.service(nodes...) + fmt.Sprintf("\n[ip.vip]\nipname = %q\nipdev = %q\nnetmask = \"24\"\n", vip, bedDev)
}

// cutRuns cuts n1 (web and its VIP there) off guardRuns() times, each time
// until a survivor's process runs, then restores n1 and gives web back.
// It fails on any sample with the process or the VIP on two nodes, or a
// survivor's start later than hb.timeout + 5s after the cut, and logs the
// figures.
func (q *quorumBed) cutRuns(t *testing.T, names []string, what string) {
	t.Helper()
	c := q.nodes
	createService(t, c["n1"], "web", q.vipApp(names...))
	q.waitFor(60*time.Second, "web up on n1 only", upOnlyOn(c[names[1]], "web", "n1"))
	procs := watchProcs(t, q.appPids(names...))
	probes := map[string]func() bool{}
	for _, n := range names {
		probes[n] = addrProbe(t, q.bed.NS[n], bedDev, vip)
	}
	vips := watchProbes(t, probes)
	const bound = 15*time.Second + 5*time.Second
	var ended, started, margins, vipGaps []time.Duration
	for run := 0; run < guardRuns(); run++ {
		waitFor(t, 10*time.Second, "the watcher sees web and the VIP on n1", func() bool { return procs.runs("n1") && vips.runs("n1") })
		at := time.Now()
		q.cut("n1")
		var by string
		q.waitFor(60*time.Second, "a survivor's process runs (watcher)", func() bool {
			for _, s := range names[1:] {
				if procs.runs(s) {
					by = s
					return true
				}
			}
			return false
		})
		q.waitFor(10*time.Second, by+" holds the VIP (watcher)", func() bool { return vips.runs(by) })
		procs.moreRounds(5) // a few more samples
		vips.moreRounds(5)
		if o := append(procs.overlaps(), vips.overlaps()...); len(o) > 0 {
			q.dump()
			q.guardLogs()
			t.Fatalf("run %d: the watcher saw web or its VIP on two nodes at once: %v", run+1, o)
		}
		st, _ := procs.first(by, at)
		last, _ := procs.last("n1", st)
		added, _ := vips.first(by, at)
		gone, _ := vips.last("n1", added)
		if procs.runs("n1") || vips.runs("n1") || !last.Before(st) || !gone.Before(added) {
			t.Fatalf("run %d: n1's process last seen %s, its VIP %s; %s's start %s, VIP %s", run+1,
				last.Format("15:04:05.000"), gone.Format("15:04:05.000"), by, st.Format("15:04:05.000"), added.Format("15:04:05.000"))
		}
		t.Logf("run %d: cut -> n1's process gone %s, %s's start %s (margin %s); VIP gone from n1 %s, added on %s %s", run+1,
			last.Sub(at).Round(time.Millisecond), by, st.Sub(at).Round(time.Millisecond), st.Sub(last).Round(time.Millisecond),
			gone.Sub(at).Round(time.Millisecond), by, added.Sub(at).Round(time.Millisecond))
		if st.Sub(at) > bound {
			q.dump()
			t.Errorf("run %d: the survivor started web %s after the cut, more than hb.timeout + 5s (%s)", run+1, st.Sub(at).Round(time.Millisecond), bound)
		}
		ended, started, margins, vipGaps = append(ended, last.Sub(at)), append(started, st.Sub(at)), append(margins, st.Sub(last)), append(vipGaps, added.Sub(gone))
		if run+1 < guardRuns() {
			q.ok(q.bed.Restore("n1"))
			q.converge(names, 60*time.Second)
			if frozen(c["n1"]) {
				c["n1"].must("nodemgr", "thaw")
			}
			c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n1", "--wait")
			q.waitFor(60*time.Second, "web up on n1 only", upOnlyOn(c["n1"], "web", "n1"))
		}
	}
	guardFigures(t, what, ended, started, margins)
	slices.Sort(vipGaps)
	t.Logf("%s: VIP off n1 before the survivor added it by %s (min), %s (median)", what, vipGaps[0].Round(time.Millisecond), vipGaps[len(vipGaps)/2].Round(time.Millisecond))
}

// 3 nodes, quorum on, no fence, default hb timings.
func TestNetnsGuardCutOffOwnerVIP(t *testing.T) {
	t.Parallel()
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBedEdit(t, names, stopOnSplit, nil, nil, 1, defaultHB)
	q.cutRuns(t, names, "owner cut off, VIP+app, 3 nodes, quorum on, default hb timings")
}

// 2 nodes and Haven's one-vote arbitrator, no fence, default hb timings.
func TestNetnsGuardCutOffOwnerVIPOneVote(t *testing.T) {
	t.Parallel()
	q, _ := newOneVoteBedEdit(t, defaultHB)
	q.cutRuns(t, []string{"n1", "n2"}, "owner cut off, VIP+app, 2 nodes, one-vote arbitrator, default hb timings")
}
