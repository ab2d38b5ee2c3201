package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
)

// Two network links per node (two bridges, eth0 and eth1), quorum on, the
// journaled app on n1. Cutting one link of the owner is an alarm: every
// node keeps every other up, nobody votes, nothing fails over; the link
// is reported down (log, svcmon "links 1/2", the status, `nodemgr daemon
// status`, `svcmgr explain`) and up again once restored. Cutting both
// links is the split of one link today: n1 loses the vote and stops, a
// survivor takes over, and the external journal shows no overlap.
func TestNetnsTwoLinksOneCutIsAnAlarm(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	names := []string{"n1", "n2", "n3"}
	q := newQuorumBedLinks(t, names, nil, nil, 2)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	for _, n := range []string{"n2", "n3"} {
		if l := c[n].status().Heartbeat["n1"].Links; len(l) != 2 || !l[0].Up || !l[1].Up {
			t.Fatalf("%s's links to n1 before the cut: %+v", n, l)
		}
	}

	// 1. one link of the owner cut: an alarm
	cut := uptime(t)
	cutAt := time.Now()
	q.cutLink("n1", 1, true)
	for _, n := range []string{"n2", "n3"} {
		q.waitFor(10*time.Second, n+" reports n1's net2 down", func() bool {
			return strings.Contains(nodeLog(t, c[n]), "heartbeat link net2 (198.51.100.1:10000) to n1 down")
		})
	}
	q.waitFor(5*time.Second, "n1 reports n2's net2 down", func() bool {
		return strings.Contains(nodeLog(t, c["n1"]), "heartbeat link net2 (198.51.100.2:10000) to n2 down")
	})
	t.Logf("one link cut: reported down %s later (hb.timeout 3s)", time.Since(cutAt).Round(10*time.Millisecond))
	// three more timeouts: nothing else happens
	for until := time.Now().Add(9 * time.Second); time.Now().Before(until); {
		for _, p := range [][2]string{{"n1", "n2"}, {"n1", "n3"}, {"n2", "n1"}, {"n3", "n1"}} {
			if s := peerStatus(c[p[0]], p[1]); s != dataset.NodeUp {
				q.dump()
				t.Fatalf("%s sees %s %s with one link of two cut", p[0], p[1], s)
			}
		}
		if !upOnlyOn(c["n3"], "web", "n1")() || frozen(c["n1"]) {
			q.dump()
			t.Fatalf("web moved (%v) or n1 froze with one link of two cut", where(c["n3"], "web"))
		}
		time.Sleep(200 * time.Millisecond) // sampling a window, not waiting for an event
	}
	for _, n := range names {
		l := nodeLog(t, c[n])
		for _, bad := range []string{`"event": "quorum_vote"`, `"event": "peer_down"`, `"event": "failover"`, `"event": "takeover_gate"`} {
			if strings.Contains(l, bad) {
				q.dump()
				t.Fatalf("%s's log has %q with one link of two cut", n, bad)
			}
		}
	}
	for _, e := range q.events() {
		if e.T >= cut {
			t.Fatalf("the journal shows %s %s after one link was cut", e.Node, e.Kind)
		}
	}
	l := c["n2"].status().Heartbeat["n1"].Links
	if len(l) != 2 || l[0].Name != "net1" || !l[0].Up || l[1].Name != "net2" || l[1].Up || l[1].Addr != "198.51.100.1:10000" {
		t.Fatalf("n2's links to n1 in the status: %+v", l)
	}
	if out := c["n2"].must("svcmon"); !strings.Contains(out, "links 1/2") {
		t.Fatalf("svcmon on n2 does not show n1's link down:\n%s", out)
	}
	if out := c["n2"].must("nodemgr", "daemon", "status"); !strings.Contains(out, "links 1/2 (net2 down)") {
		t.Fatalf("nodemgr daemon status on n2:\n%s", out)
	} else if !strings.Contains(out, ", 198.51.100.2:10000 (a link each)") || strings.Contains(out, "0.0.0.0:") {
		t.Fatalf("nodemgr daemon status on n2 does not show the address of each of its links:\n%s", out)
	}
	if out := c["n2"].must("svcmgr", "-s", "web", "explain"); !strings.Contains(out, "n1: links 1/2, net2 down") {
		t.Fatalf("svcmgr explain on n2:\n%s", out)
	}

	// 2. restored: up again, the mark goes
	q.cutLink("n1", 1, false)
	q.waitFor(10*time.Second, "n2 reports n1's net2 up again", func() bool {
		return strings.Contains(nodeLog(t, c["n2"]), "heartbeat link net2 (198.51.100.1:10000) to n1 up again")
	})
	q.waitFor(5*time.Second, "svcmon on n2 without the mark", func() bool { return !strings.Contains(c["n2"].must("svcmon"), "links 1/2") })

	// 3. the other link alone cut: the same alarm, on net1
	q.cutLink("n1", 0, true)
	q.waitFor(10*time.Second, "n2 reports n1's net1 down", func() bool {
		return strings.Contains(nodeLog(t, c["n2"]), "heartbeat link net1 (192.0.2.1:10000) to n1 down")
	})
	if s := peerStatus(c["n2"], "n1"); s != dataset.NodeUp || !upOnlyOn(c["n3"], "web", "n1")() {
		t.Fatalf("with net1 cut: n2 sees n1 %s, web on %v", s, where(c["n3"], "web"))
	}
	q.cutLink("n1", 0, false)
	q.waitFor(10*time.Second, "n2 reports n1's net1 up again", func() bool {
		return strings.Contains(nodeLog(t, c["n2"]), "heartbeat link net1 (192.0.2.1:10000) to n1 up again")
	})

	// 4. both links cut: n1 is lost, as with one link today
	stop, start := q.splitRun(t)
	t.Logf("both links cut: n1 stopped web %.2fs after the cut, a survivor started it %.2fs after", stop, start)
	if start < stop {
		t.Fatalf("the survivor started web %.2fs before n1 stopped it", stop-start)
	}
}

// Two links per node; an attacker on net1 (or an MTU fault) passes n1's
// beats to n2 and drops the rest (every TCP segment, every datagram
// longer than a beat); net2 is healthy. web dies on n1 and cannot start
// there again. Before, n1's data kept going over net1, the link it hears
// n2 on first: n2 marked n1 stale, web "? stale" there, which nothing
// fails over because of (n1 "may run it"). Now n2's beats say its copy of
// n1 is behind, n1 sends its data over every link (net2 carries it) and
// reports net1 degraded (an alarm: nobody down); n2 is never stale and
// sees web down on n1 within a few beats.
func TestNetnsLinkBeatsOnlyIsDegraded(t *testing.T) {
	t.Parallel() // a bed of its own
	names := []string{"n1", "n2"}
	b := newNetBedLinks(t, names, `rejoin_grace_period = "10s"`, nil, 2)
	c := b.nodes
	b.startAll(names)
	createService(t, c["n1"], "web", failingService(`["n1", "n2"]`))
	waitFor(t, 15*time.Second, "web up on n1 only (seen from n2)", upOnlyOn(c["n2"], "web", "n1"))

	b.ok(b.bed.BeatsOnly("n1", "n2", chaos.BeatLen)) // on net1 (n1's eth0 address) only
	writeFile(t, filepath.Join(c["n1"].root, "var", "services", "web", "nostart"), "")
	pid := appPid(c["n1"], "web")
	if pid == 0 {
		t.Fatal("no process of web on n1")
	}
	killed := time.Now()
	b.ok(syscall.Kill(pid, syscall.SIGKILL))
	stale, behind := false, false
	defer func() {
		if t.Failed() {
			for _, n := range names {
				st := c[n].status()
				t.Logf("%s: hb %+v web %+v", n, st.Heartbeat, st.Services["web"])
				for _, l := range strings.Split(nodeLog(t, c[n]), "\n") {
					if strings.Contains(l, "link") || strings.Contains(l, "stale") || strings.Contains(l, "web") {
						t.Log(l)
					}
				}
			}
		}
	}()
	waitFor(t, 15*time.Second, "n2 sees web down on n1", func() bool {
		st := c["n2"].status()
		stale = stale || st.Heartbeat["n1"].Stale
		// behind a beat period: stuck on net1, not the few ms between a
		// beat and its delta
		behind = behind || st.Heartbeat["n1"].BehindMs >= 1000
		i := st.Services["web"].Instances["n1"]
		return i.Avail == dataset.StatusDown && !i.Stale
	})
	t.Logf("n2 sees web down on n1 %s after it died there (net1 passing beats only, hb.timeout 3s); %d packets dropped",
		time.Since(killed).Round(10*time.Millisecond), b.bed.Dropped("n2"))
	if stale {
		t.Error("n2 marked n1 stale although net2 carries its data")
	}
	l := nodeLog(t, c["n1"])
	if !behind && !strings.Contains(l, "to n2 degraded") {
		// n1's data went over net2 from the start (net1 not heard within
		// a beat and a half when the change went out: a loaded host):
		// n2's copy was never behind, there was nothing to degrade
		t.Logf("n2's copy of n1 was never behind: n1's data went over net2, net1 was not found degraded")
		return
	}
	// the full copy over every link may deliver before n1 judged net1
	// (a beat period after it sent there): the report may come after
	waitFor(t, 3*time.Second, "n1 reports net1 to n2 degraded", func() bool {
		l := nodeLog(t, c["n1"])
		return strings.Contains(l, "heartbeat link net1") && strings.Contains(l, "to n2 degraded")
	})
	if ls := c["n1"].status().Heartbeat["n2"].Links; len(ls) != 2 || !ls[0].Degraded || !ls[0].Up || ls[1].Degraded {
		t.Fatalf("n1's links to n2 in the status: %+v, want net1 up and degraded, net2 not", ls)
	}
	if out := c["n1"].must("svcmon"); !strings.Contains(out, "links 2/2 degraded") {
		t.Fatalf("svcmon on n1 does not show net1 degraded:\n%s", out)
	}
	for _, n := range names {
		if l := nodeLog(t, c[n]); strings.Contains(l, `"event": "peer_down"`) {
			t.Fatalf("%s declared its peer down with one link passing beats", n)
		}
	}
	// three more timeouts: n1 stays current in n2's view
	for end := time.Now().Add(9 * time.Second); time.Now().Before(end); {
		if hb := c["n2"].status().Heartbeat["n1"]; hb.Stale || !hb.Up {
			t.Fatalf("n2's view of n1 with net1 degraded: %+v", hb)
		}
		time.Sleep(200 * time.Millisecond) // sampling a window, not waiting for an event
	}
}
