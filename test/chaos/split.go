package chaos

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"haven/quorum"
)

// The split tests (docs/behaviour.md 3 and 4, docs/operations.md "Split brain" and
// "After a network partition"): a node running a service isolated from the
// others (a partition, a one-way loss, a pause of its daemon), and the 1 | 2
// splits around the quorum's tie. With cluster.quorum on (the bed: 3 nodes,
// the arbitrator a1 of weight 1, so 4 votes; split_action = stop; a
// crash_command that only records it ran) the losing side stops and
// freezes, the winners take over only after the lost node's self-stop
// deadline, never twice. With quorum off both sides run (no promise: the
// audit reports the overlap) and multiple_active leaves one instance within
// healBound of the heal.

// survives is docs/behaviour.md 3's vote: a side with live nodes and votes of the
// arbitrators it reaches keeps quorum iff live + votes > total / 2 (total:
// the cluster's nodes plus the arbitrators' votes; a tie loses).
func survives(live, votes, total int) bool { return 2*(live+votes) > total }

// The bounds, from docs/operations.md: a beat is hb.timeout / 6; a lost
// node's self-stop deadline is one beat + the longest arbitrator timeout +
// the stop budget (the app's timeout) + one beat after the survivors
// declared it down (hb.timeout after its last beat); the loser applies
// split_action at once on its vote (hb.timeout + the arbitrator's timeout)
// and escalates to crash if its stop has not ended by its vote's start +
// the arbitrator's timeout + the stop budget. slack absorbs the shared
// machine's load.
const (
	beat           = hbTimeout / 6
	selfStop       = beat + arbTimeout + appTimeout + beat
	slack          = 10 * time.Second
	splitStopBound = hbTimeout + arbTimeout + appTimeout + slack
	takeoverBound  = hbTimeout + selfStop + readyPeriod + slack
	// splitBound is how long the tests wait for a takeover at all (a
	// late one fails on takeoverBound, with its time)
	splitBound = 45 * time.Second
	// healBound is how long after a heal one instance is left without
	// quorum (multiple_active, about hb.interval + ready_period)
	healBound = 10 * time.Second
)

func testSplitBrain(t *T) error {
	return t.isolateOwner("partition", func(owner string, rest []string) error {
		return t.C.Bed.Partition([]string{owner}, append(slices.Clone(rest), "arb"))
	})
}

func testOneWayLoss(t *T) error {
	return t.isolateOwner("one-way loss", func(owner string, rest []string) error {
		for _, o := range append(slices.Clone(rest), "arb") {
			if err := t.C.Bed.OneWay(owner, o); err != nil {
				return err
			}
		}
		return nil
	})
}

// isolateOwner isolates the node running a service with fault, then checks
// docs/behaviour.md 3: with quorum the owner (1 of 4 votes) stops and freezes and
// the majority (3 of 4) takes over after the owner's self-stop deadline;
// without quorum both run and one instance is left after the heal.
func (t *T) isolateOwner(what string, fault func(owner string, rest []string) error) error {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	owner := where[s]
	rest := t.C.others(owner)
	lost := servicesOn(where, owner)
	from := t.C.journalLines()
	t.Fault("%s: %s (running %v) alone, %v with the arbitrator", what, owner, lost, rest)
	if err := fault(owner, rest); err != nil {
		return err
	}
	q := t.C.Quorum()
	if !q {
		t.promised = false
	}
	start := t.lastFault
	var errs []error
	if q {
		errs = append(errs, t.lostQuorum(owner, splitStopBound))
	}
	errs = append(errs, t.takenOver(lost, owner, rest, from, start, what))
	t.Fault("heal")
	if err := t.C.Bed.Heal(); err != nil {
		return err
	}
	if q {
		errs = append(errs, t.thawLosers([]string{owner}))
	} else {
		errs = append(errs, t.oneInstanceAfterHeal(t.C.svcNames()))
	}
	return errors.Join(errs...)
}

// takenOver waits until each service of svcs (lost with node lost at
// start) is up on exactly one of winners; with quorum on, the start must
// come after lost's self-stop deadline as the winner's takeover gate
// shows it, the deadline must be as documented, and the takeover within
// takeoverBound.
func (t *T) takenOver(svcs []string, lost string, winners []string, from int, start time.Time, what string) error {
	var errs []error
	for _, svc := range svcs {
		to, err := t.C.upOnlyOn(svc, winners, splitBound)
		if err != nil {
			errs = append(errs, fmt.Errorf("the side with the votes never took %s over: %w", svc, err))
			continue
		}
		took := time.Since(start)
		if !t.C.Quorum() {
			t.Note("%s up on %s %s after the %s", svc, to, took.Round(100*time.Millisecond), what)
			continue
		}
		if err := t.afterDeadline(svc, lost, to, from, start, what); err != nil {
			errs = append(errs, err)
		}
		if bound := takeoverBound + t.C.diskFenceExtra(); took > bound {
			errs = append(errs, fmt.Errorf("%s taken over by %s %s after the %s, over the bound %s (hb.timeout + self-stop deadline %s + ready_period + %s, + 2 x hb.disk.timeout with a fencing disk)",
				svc, to, took.Round(100*time.Millisecond), what, bound, selfStop, slack))
		}
	}
	return errors.Join(errs...)
}

// afterDeadline checks a takeover with quorum on: the journal's start of
// svc on to (after journal line from) is not before the self-stop deadline
// of lost in to's takeover gate, and that deadline is selfStop after the
// moment to declared lost down.
func (t *T) afterDeadline(svc, lost, to string, from int, start time.Time, what string) error {
	st, err := t.C.Nodes[to].Status()
	if err != nil {
		return err
	}
	var since, deadline time.Time
	if qs := st.Cluster.QuorumState; qs != nil {
		for _, g := range qs.Gates {
			if g.Node == lost {
				since, deadline = g.Since, g.Deadline
			}
		}
	}
	if deadline.IsZero() {
		return fmt.Errorf("%s took %s over from %s, but shows no takeover gate for %s", to, svc, lost, lost)
	}
	want, rule := selfStop, "beat + arbitrator timeout + stop budget + beat"
	if g := st.Nodes[lost].Guard; g != nil {
		// its guard ends its services: docs/behaviour.md 3.1
		lease, act := time.Duration(g.LeaseMs)*time.Millisecond, time.Duration(g.ActMs)*time.Millisecond
		want = beat + arbTimeout + quorum.GuardStop(lease, act)
		rule = "beat + arbitrator timeout + its guard's lease, act and margin"
		if g.Anchored {
			// its lease counted from its newest beat a quorum heard:
			// the gate counts from every live member's declaration
			want = quorum.GuardAfterHeard(lease, act, hbTimeout)
			rule = "its guard's anchored lease, act and margin, less hb.timeout"
		}
	}
	if d := deadline.Sub(since); d < want {
		return fmt.Errorf("%s's self-stop deadline on %s is %s after it was declared down, want %s (%s)", lost, to, d, want, rule)
	}
	ev, err := ReadJournal(t.C.Journal)
	if err != nil {
		return err
	}
	for _, e := range ev {
		if e.Line <= from || e.Svc != svc || e.Node != to || e.Kind != "start" {
			continue
		}
		at := sinceBoot(e.T)
		t.Note("%s started on %s at +%s after the %s (%s declared down at +%s, its self-stop deadline +%s)", svc, to,
			at.Sub(start).Round(100*time.Millisecond), what, lost, since.Sub(start).Round(100*time.Millisecond), deadline.Sub(start).Round(100*time.Millisecond))
		// the journal's clock has 10 ms steps
		if at.Before(deadline.Add(-20*time.Millisecond)) && !t.afterFence(svc, lost, to) {
			return fmt.Errorf("%s started on %s at %s, before %s's self-stop deadline %s", svc, to, at.Format("15:04:05.00"), lost, deadline.Format("15:04:05.00"))
		}
		return nil
	}
	return fmt.Errorf("%s up on %s, yet no start of it there in the journal", svc, to)
}

// lostQuorum waits until n has applied split_action = stop: it sees itself
// frozen by it (or its log says it lost a vote and applied it: the freeze
// ends by itself once n holds the quorum again, which may come at once
// after a pause) and runs no service's process. A node of the previous
// release (MixedVersions) shows that freeze as the node's freeze.
func (t *T) lostQuorum(n string, within time.Duration) error {
	err := waitUntil(within, func() bool {
		st, err := t.C.Nodes[n].Status()
		if err != nil || !st.Nodes[n].SplitFrozen && !st.Nodes[n].Frozen && !slices.Contains(t.quorumLosers(), n) {
			return false
		}
		for _, s := range t.C.Services {
			if t.C.appPid(s.Name, n) != 0 {
				return false
			}
		}
		// the stop script journals its stop once the app ended, up to a
		// poll (50 ms) later: the journal must say it too
		ev, err := ReadJournal(t.C.Journal)
		if err != nil {
			return false
		}
		for _, up := range UpAt(ev) {
			if slices.Contains(up, n) {
				return false
			}
		}
		return true
	}, "%s lost the quorum but is not frozen with every instance stopped (and journaled) after %s", n, within)
	if err == nil {
		t.Note("%s stopped and froze %s after the fault", n, time.Since(t.lastFault).Round(100*time.Millisecond))
	}
	return err
}

// thawLosers checks, once the fault is healed, that the freeze of each
// node that split_action froze ends by itself (docs/behaviour.md 3: the
// cluster whole again, or the quorum held again): a freeze left after
// hb.timeout + healBound is a failure, thawed then as an admin would so
// that the next test starts from a thawed cluster. A node of the previous
// release (MixedVersions) froze with the admin's freeze, which only
// nodemgr thaw ends: it is thawed as before. The ledger never held these
// freezes.
func (t *T) thawLosers(ns []string) error {
	var errs []error
	for _, n := range ns {
		t.settleFences(n)
		bound := hbTimeout + healBound
		err := waitUntil(bound, func() bool {
			st, err := t.C.Nodes[n].Status()
			return err == nil && !st.Nodes[n].SplitFrozen
		}, "%s still frozen by its split_action %s after the heal: that freeze ends by itself once the cluster is whole", n, bound)
		if err != nil {
			errs = append(errs, err)
		} else {
			t.Note("%s's split freeze ended by itself %s after the heal", n, time.Since(t.lastFault).Round(100*time.Millisecond))
		}
		st, serr := t.C.Nodes[n].Status()
		if err != nil || serr == nil && st.Nodes[n].Frozen && !t.ledger.NodeFrozen[n] {
			if err := t.C.Nodes[n].must(30*time.Second, "nodemgr", "thaw"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// quorumLosers are the nodes whose node.log says, since the test began,
// that they lost a vote and applied split_action stop.
func (t *T) quorumLosers() []string {
	var out []string
	for _, l := range t.C.newLogLines(t.logs, `"quorum_vote"`) {
		n, _, _ := strings.Cut(l, ":")
		if strings.Contains(l, "split_action stop") && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// thawQuorumLosers thaws, with quorum on, the nodes that lost the quorum
// during the test where that is the documented outcome (a node left alone
// by the others' shutdown: 1 + the arbitrator = 2 of 4 votes, a tie).
func (t *T) thawQuorumLosers(why string) error {
	if !t.C.Quorum() {
		return nil
	}
	l := t.quorumLosers()
	if len(l) == 0 {
		return nil
	}
	t.Note("%v lost the quorum (%s), thawed", l, why)
	return t.thawLosers(l)
}

// oneInstanceAfterHeal checks the promise without quorum: within
// healBound of the heal each service is up on one node in the journal.
func (t *T) oneInstanceAfterHeal(svcs []string) error {
	var up map[string][]string
	err := waitUntil(healBound, func() bool {
		ev, err := ReadJournal(t.C.Journal)
		if err != nil {
			return false
		}
		up = UpAt(ev)
		for _, s := range svcs {
			if len(up[s]) != 1 {
				return false
			}
		}
		return true
	}, "")
	if err != nil {
		var b []string
		for _, s := range svcs {
			b = append(b, fmt.Sprintf("%s up on %v", s, up[s]))
		}
		return fmt.Errorf("%s after the heal (cluster.quorum = false): %s in the journal, want one instance each", healBound, strings.Join(b, ", "))
	}
	t.Note("one instance of each service %s after the heal", time.Since(t.lastFault).Round(100*time.Millisecond))
	return nil
}

func testNearQuorumPoint(t *T) error {
	if !t.C.Quorum() {
		return fmt.Errorf("NearQuorumPoint needs quorum on: it checks the vote")
	}
	where, err := t.where()
	if err != nil {
		return err
	}
	alone := pick(t, t.C.Names)
	rest := t.C.others(alone)
	total := len(t.C.Names) + 1 // one arbitrator, one vote
	cases := []struct {
		what      string
		withAlone bool // the arbitrator answers the lone node, else the others
		cut       bool
	}{
		{"the arbitrator with the two", false, false},
		{"the arbitrator with the lone node", true, false},
		{"the arbitrator cut", false, true},
	}
	k := cases[t.Rand.IntN(len(cases))]
	g1, g2 := []string{alone}, slices.Clone(rest)
	switch {
	case k.cut:
	case k.withAlone:
		g1 = append(g1, "arb")
	default:
		g2 = append(g2, "arb")
	}
	aloneKeeps := survives(1, boolInt(k.withAlone && !k.cut), total)
	restKeeps := survives(len(rest), boolInt(!k.withAlone && !k.cut), total)
	from := t.C.journalLines()
	t.Fault("split %s | %v, %s: the lone node keeps quorum: %v, the others: %v", alone, rest, k.what, aloneKeeps, restKeeps)
	if err := t.C.Bed.Partition(g1, g2); err != nil {
		return err
	}
	start := t.lastFault
	var errs []error
	var losers, winners []string
	for _, side := range []struct {
		nodes []string
		keeps bool
	}{{[]string{alone}, aloneKeeps}, {rest, restKeeps}} {
		if side.keeps {
			winners = append(winners, side.nodes...)
			continue
		}
		losers = append(losers, side.nodes...)
		for _, n := range side.nodes {
			errs = append(errs, t.lostQuorum(n, splitStopBound))
		}
	}
	if len(winners) > 0 {
		for _, n := range losers {
			errs = append(errs, t.takenOver(servicesOn(where, n), n, winners, from, start, "split"))
		}
	} else if ev, err := ReadJournal(t.C.Journal); err == nil {
		// nobody may run anything: the audits after the heal see them back
		for s, up := range UpAt(ev) {
			if len(up) > 0 {
				errs = append(errs, fmt.Errorf("no side keeps quorum, yet the journal has %s up on %v", s, up))
			}
		}
	}
	t.Fault("heal")
	if err := t.C.Bed.Heal(); err != nil {
		return err
	}
	errs = append(errs, t.thawLosers(losers))
	return errors.Join(errs...)
}

// wokeAndVoted waits for the vote n takes once it runs again after a
// SIGCONT (the last fault), notes it, and says whether n lost it. With the
// one-vote arbitrator n votes as if alone, but its lease may still run
// (the pause shorter than the lease): it then keeps the quorum.
func (t *T) wokeAndVoted(n string) (lost bool, err error) {
	woke := t.lastFault
	if err := waitUntil(splitStopBound, func() bool {
		st, err := t.C.Nodes[n].Status()
		return err == nil && st.Cluster.QuorumState != nil && st.Cluster.QuorumState.LastVoteAt.After(woke)
	}, "%s did not vote within %s of its SIGCONT", n, splitStopBound); err != nil {
		return false, err
	}
	st, _ := t.C.Nodes[n].Status()
	t.Note("%s woke and voted: %s", n, st.Cluster.QuorumState.LastVote)
	return !st.Cluster.QuorumState.LastSurvive, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func testPauseActive(t *T) error {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	n := where[s]
	d := hbTimeout + 2*time.Second + time.Duration(t.Rand.Int64N(int64(3*time.Second)))
	q := t.C.Quorum()
	if !q {
		t.promised = false // the others take over while it sleeps: two instances until it wakes
	}
	t.Fault("SIGSTOP of the daemon of %s (running %v) for %s", n, servicesOn(where, n), d.Round(100*time.Millisecond))
	if err := t.C.Nodes[n].Signal(sigSTOP); err != nil {
		return err
	}
	time.Sleep(time.Until(t.lastFault.Add(d)))
	t.Fault("SIGCONT of the daemon of %s", n)
	if err := t.C.Nodes[n].Signal(sigCONT); err != nil {
		return err
	}
	if !q {
		return t.oneInstanceAfterHeal(t.C.svcNames())
	}
	if t.C.cfg.OneVote {
		// it sees the gap and votes as if alone, but its lease of the
		// one-vote arbitrator may still run (the pause is shorter than the
		// lease): then it keeps the quorum, and the others, never granted
		// the vote alone while that lease ran, took nothing over. Either
		// way one instance of each service after it wakes, and never twice
		// (the audit's)
		lost, err := t.wokeAndVoted(n)
		if err != nil {
			return err
		}
		if lost {
			if err := t.lostQuorum(n, splitStopBound); err != nil {
				return err
			}
		}
		return errors.Join(t.oneInstanceAfterHeal(t.C.svcNames()), t.thawQuorumLosers("a node that lost its vote"))
	}
	// it sees the gap, votes as if alone, loses and stops; its peers
	// start its services once it did (never twice is the audit's)
	var errs []error
	errs = append(errs, t.lostQuorum(n, splitStopBound))
	for _, svc := range servicesOn(where, n) {
		to, err := t.C.upOnlyOn(svc, t.C.others(n), splitBound)
		if err != nil {
			errs = append(errs, fmt.Errorf("after %s stopped: %w", n, err))
			continue
		}
		t.Note("%s up on %s %s after the SIGCONT", svc, to, time.Since(t.lastFault).Round(100*time.Millisecond))
	}
	errs = append(errs, t.thawLosers([]string{n}))
	return errors.Join(errs...)
}
