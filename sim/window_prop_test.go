package sim

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/config/tomlfile"
	"haven/monitor"
	"haven/node"
	"haven/node/view"
)

// TestReadyWindowProperty is the safety property of the ready window, with
// and without node.ready_fast_ack: over seeded random scenarios (crashes of
// the owner and of other nodes, daemon restarts, node freezes, link
// delays, one-way losses, partitions, daemon pauses, all while services
// claim and start), no start of a failover service ever begins while the
// service is active elsewhere (the start observer, starts.go: its app
// running, or a start of it in flight).
//
// Each seed draws one scenario (3 or 4 nodes, 3 services on 2 to 4 of
// them, ready_period 1-3s, actions of 100ms-1s) and runs it twice, fast
// ack off then on. A
// scenario is one of two families:
//   - quorum off: the faults never make a live node look down to another
//     (an outage of a link lasts at most 1s, a delay at most 700ms: less
//     than hb.timeout minus a beat in all): without quorum a real split
//     runs a service on both sides, as documented;
//   - quorum on (split_action stop): any partition and one-way loss, of
//     any length; daemon pauses (SIGSTOP) of up to 6s only
//     when every node has a fence command (half of these scenarios): a
//     pause that outlasts the detection plus the self-stop deadline is
//     covered by a fence only, as documented (docs/operations.md, "Split
//     brain", Limits). A daemon restart heals the links first: a daemon
//     restarted inside a minority stays in rejoin, never votes, and keeps
//     what it ran running past the survivors' self-stop deadline (a gap of
//     the quorum, found by this test: seed 181 with 300 seeds, before this
//     rule).
//
// In both, a link delay stays 300ms under ready_period (the window's own
// condition: a claim reaches every peer within it; a longer delay makes
// two starts possible with or without fast ack).
//
// After the faults every link heals, every daemon runs, every node is
// thawed: each service must then run on exactly one node.
//
// HAVEN_SIM_WINDOW_SEEDS=N runs N seeds (the soak; the default keeps the
// test near 10s on a loaded 2-core machine); HAVEN_SIM_WINDOW_SEED=N runs
// seed N alone and logs the timeline of a failure.
func TestReadyWindowProperty(t *testing.T) {
	first, seeds := propSeeds(t, "HAVEN_SIM_WINDOW_SEEDS", "HAVEN_SIM_WINDOW_SEED")
	began := time.Now()
	var runs, fast, window, quorumRuns int
	for seed := first; seed <= seeds; seed++ {
		for _, fa := range []bool{false, true} {
			st := windowScenario(t, seed, fa, false)
			runs++
			fast += st.fast
			window += st.window
			if st.quorum {
				quorumRuns++
			}
		}
	}
	t.Logf("%d seeds, %d scenarios (%d with quorum), %d starts after acks and %d after the whole window, in %s",
		seeds, runs, quorumRuns, fast, window, time.Since(began).Round(time.Millisecond))
	if fast == 0 {
		t.Errorf("no start after acks in %d scenarios: the fast path was never taken", runs)
	}
}

// propSeeds reads the seeds of a property test: 1 to 60 by default, 1 to
// N with the variable many=N, N alone with one=N (and then the timeline
// of a failure is logged).
func propSeeds(t *testing.T, many, one string) (first, last int64) {
	t.Helper()
	first, last = 1, 60
	if v := os.Getenv(many); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number", many, v)
		}
		last = int64(n)
	}
	if v := os.Getenv(one); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a number", one, v)
		}
		first, last, windowTimeline = n, n, true
	}
	return first, last
}

// windowTimeline logs the timeline of a failing scenario
// (HAVEN_SIM_WINDOW_SEED).
var windowTimeline bool

type windowStats struct {
	quorum       bool
	fast, window int // starts by the orchestrator, after acks or the window
}

// windowScenario runs one seed's scenario; with flex its services are flex
// services (behaviour.md 10) of a target below their number of nodes:
// never more instances up at once than the target, and exactly the target
// up at the end.
func windowScenario(t *testing.T, seed int64, fastAck, flex bool) windowStats {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	names := []string{"n1", "n2", "n3"}
	if rng.Intn(2) == 0 {
		names = append(names, "n4")
	}
	quorumOn := rng.Intn(2) == 0
	opt := Options{ReadyPeriod: time.Duration(1+rng.Intn(3)) * time.Second, ReadyFastAck: fastAck}
	c, err := New(names, opt)
	if err != nil {
		t.Fatal(err)
	}
	fenced := false
	if quorumOn {
		c.quorumSetting("quorum", "true")
		c.quorumSetting("split_action", "stop")
		if fenced = rng.Intn(2) == 0; fenced {
			c.q.stonith = map[string]bool{}
			for _, n := range names {
				c.q.stonith[n] = true
			}
		}
	}
	svcs := []string{"s1", "s2", "s3"}
	targets := map[string]int{} // flex: each service's flex_target
	// (drawn apart: a seed's faults are the same with flex or failover
	// services)
	trng := rand.New(rand.NewSource(seed))
	for _, s := range svcs {
		nodes := append([]string(nil), names...)
		rng.Shuffle(len(nodes), func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
		nodes = nodes[:2+rng.Intn(len(nodes)-1)]
		raw := fmt.Sprintf("[DEFAULT]\nnodes = [%s]\norchestrate = \"ha\"\n", quoteList(nodes))
		if flex {
			targets[s] = 1 + trng.Intn(len(nodes)-1)
			raw += fmt.Sprintf("topology = \"flex\"\nflex_target = %d\n", targets[s])
		}
		cfg, err := tomlfile.ParseService(s+".toml", s, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		dur := time.Duration(100+rng.Intn(900)) * time.Millisecond
		if err := c.AddService(cfg, dur, dur); err != nil {
			t.Fatal(err)
		}
	}
	var script []string
	say := func(f string, a ...any) {
		script = append(script, fmt.Sprintf("%s "+f, append([]any{fmtTime(c.Now())}, a...)...))
	}
	for _, n := range names {
		c.Start(n, 0)
	}
	c.Run(time.Duration(rng.Intn(3000)) * time.Millisecond)
	pick := func() string { return names[rng.Intn(len(names))] }
	owner := func() string {
		if up := c.UpOn(svcs[rng.Intn(len(svcs))]); len(up) > 0 {
			return up[0]
		}
		return pick()
	}
	for step := 0; step < 14; step++ {
		n := owner()
		if rng.Intn(3) == 0 {
			n = pick()
		}
		m := pick()
		for m == n {
			m = pick()
		}
		if rng.Intn(2) == 0 {
			// links slow down and speed up all along
			a, b := pick(), pick()
			if a != b {
				d := maxDelay(rng, quorumOn, opt.ReadyPeriod)
				say("delay %s->%s %s", a, b, d)
				c.Delay(a, b, d)
			}
		}
		switch k := rng.Intn(10); {
		case c.Node(n).d == nil:
			say("start %s", n)
			c.Start(n, 0)
		case k <= 2:
			say("crash %s", n)
			c.Crash(n)
		case k == 3:
			if quorumOn {
				// a daemon restarted inside a minority never votes (no
				// member to lose: rejoin) and keeps running what it ran:
				// outside the quorum's model
				say("heal")
				c.Heal()
			}
			say("restart %s", n)
			c.Stop(n, "restart", 0)
		case k == 4:
			say("freeze %s", n)
			c.Admin(n, "", "freeze", "", false)
		case k == 5:
			say("thaw %s", n)
			c.Admin(n, "", "thaw", "", false)
		case k == 6:
			d := maxDelay(rng, quorumOn, opt.ReadyPeriod)
			say("delay %s->%s %s", n, m, d)
			c.Delay(n, m, d)
		case k == 7:
			say("oneway %s->%s", n, m)
			c.Drop(n, m, true)
			if !quorumOn {
				c.Run(time.Duration(rng.Intn(1000)) * time.Millisecond)
				say("heal")
				c.Heal()
			}
		case k == 8:
			a, b := split(rng, names)
			say("partition %v | %v", a, b)
			c.Partition(a, b)
			if !quorumOn {
				c.Run(time.Duration(rng.Intn(1000)) * time.Millisecond)
				say("heal")
				c.Heal()
			}
		case k == 9 && fenced && c.Node(n).d != nil:
			d := time.Duration(1+rng.Intn(6000)) * time.Millisecond
			say("pause %s %s", n, d)
			c.pause(n, d)
		default:
			say("heal")
			c.Heal()
		}
		c.Run(time.Duration(100+rng.Intn(2500)) * time.Millisecond)
	}
	// everything back
	say("heal all")
	c.Heal()
	for _, a := range names {
		for _, b := range names {
			c.net.SetDelay(a, b, 0)
		}
	}
	for _, n := range names {
		if c.Node(n).d == nil {
			c.Start(n, 0)
		}
	}
	c.Run(15 * time.Second)
	// a fence begun before the heal may power a node off after it (a
	// fencer paused mid-fence): every node back once more
	for _, n := range names {
		if c.Node(n).d == nil {
			c.Start(n, 0)
		}
	}
	c.Run(15 * time.Second)
	for _, n := range names {
		c.Admin(n, "", "thaw", "", false)
	}
	c.Run(40 * time.Second)

	st := windowStats{quorum: quorumOn}
	for _, e := range c.Events() {
		if ab, ok := e.Event.(node.ActionBegin); ok && ab.Action == "start" {
			switch {
			case strings.Contains(ab.Reason, "fast ack"):
				st.fast++
			case strings.Contains(ab.Reason, "ready period ended"):
				st.window++
			}
		}
	}
	fail := func(f string, a ...any) {
		if windowTimeline {
			logWhy(t, c, names, svcs)
			t.Log(strings.Join(c.Timeline(), "\n"))
		}
		t.Errorf("seed %d (fast ack %v, quorum %v, ready_period %s): %s\nscript:\n  %s\n%s", seed, fastAck, quorumOn, opt.ReadyPeriod,
			fmt.Sprintf(f, a...), strings.Join(script, "\n  "), c.FinalState())
	}
	for _, s := range svcs {
		if flex {
			if most := c.q.maxUp[s]; most > targets[s] {
				fail("%s up on %d nodes at once, flex_target %d", s, most, targets[s])
			}
			if up := c.UpOn(s); len(up) != targets[s] {
				fail("%s up on %v at the end, want %d nodes", s, up, targets[s])
			}
			continue
		}
		if o := c.StartOverlaps(s); len(o) > 0 {
			fail("%s started twice: %s", s, strings.Join(o, "; "))
		}
		if up := c.UpOn(s); len(up) != 1 {
			fail("%s up on %v at the end, want exactly one node", s, up)
		}
	}
	return st
}

// maxDelay draws a link delay: shorter than the ready window by 300ms (a
// claim must reach every peer within the window: node.ready_period's
// documented condition), and with quorum off at most 700ms.
func maxDelay(rng *rand.Rand, quorumOn bool, ready time.Duration) time.Duration {
	limit := ready - 300*time.Millisecond
	if !quorumOn {
		limit = min(limit, 700*time.Millisecond)
	}
	return time.Duration(rng.Int63n(int64(limit)))
}

// split draws two non-empty sides of names.
func split(rng *rand.Rand, names []string) (a, b []string) {
	for len(a) == 0 || len(b) == 0 {
		a, b = nil, nil
		for _, n := range names {
			if rng.Intn(2) == 0 {
				a = append(a, n)
			} else {
				b = append(b, n)
			}
		}
	}
	return a, b
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// logWhy logs, for a failing seed, each node's view of its peers and its
// explanation of each service (why it claims, or not).
func logWhy(t *testing.T, c *Cluster, names, svcs []string) {
	for _, n := range names {
		co := c.Core(n)
		if co == nil {
			continue
		}
		for _, pn := range names {
			if p, ok := co.Peer(pn); ok {
				t.Logf("%s sees %s: heard %v, data from before its loss (unconfirmed) %v", n, pn, p.Up, view.Unconfirmed(p))
			}
		}
		for _, sv := range svcs {
			if e, ok := monitor.Explain(co.Snapshot(c.clk.Now()), sv, false); ok && e.Monitor != nil {
				t.Logf("%s %s: %s; blocked: %s; flex: %+v", n, sv, e.Monitor.State, e.Monitor.Blocked, e.Flex)
			}
		}
	}
}
