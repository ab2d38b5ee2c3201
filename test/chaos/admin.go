package chaos

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"haven/dataset"
)

// The tests of admin actions: Standby, ResyncConfig, AdminUnderChurn,
// DiskFull. Every action acknowledged (exit 0) goes in the ledger, which
// the audits check on every node.

// others are the node names but n.
func (c *Cluster) others(n ...string) []string {
	return slices.DeleteFunc(slices.Clone(c.Names), func(o string) bool { return slices.Contains(n, o) })
}

// svcNames are the service names.
func (c *Cluster) svcNames() []string {
	var out []string
	for _, s := range c.Services {
		out = append(out, s.Name)
	}
	return out
}

// ledgerHolds waits until every view agrees with the ledger.
func (t *T) ledgerHolds(within time.Duration, when string) error {
	if err := waitUntil(within, func() bool { return t.C.checkLedger(*t.ledger) == nil }, ""); err != nil {
		return fmt.Errorf("%s: %w", when, t.C.checkLedger(*t.ledger))
	}
	return nil
}

// admin runs an orchestrated svcmgr action with --wait on node n and
// judges its answer: exit 0 (the target is reached), or exit 1 with a
// cause. Anything else (a hang past --time, another status, a silent
// failure) is an error.
func (t *T) admin(n, svc string, args ...string) (ok bool, err error) {
	argv := append([]string{"-s", svc}, args...)
	argv = append(argv, "--wait", "--time", "30s")
	r := t.C.Nodes[n].Run(50*time.Second, "svcmgr", argv...)
	what := fmt.Sprintf("%s: svcmgr %s", n, strings.Join(argv, " "))
	switch {
	case r.TimedOut:
		return false, fmt.Errorf("%s: no answer 20s past its --time 30s", what)
	case r.Code == 0:
		t.Note("%s: ok", what)
		return true, nil
	case r.Code == 1 && strings.TrimSpace(r.Err) != "":
		t.Note("%s: refused: %s", what, firstLine(r.Err))
		return false, nil
	default:
		return false, fmt.Errorf("%s: no honest answer: %s", what, r)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// thaw thaws svc from n until acknowledged (an admin retries), then clears
// it in the ledger.
func (t *T) thaw(n, svc string) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, err := t.admin(n, svc, "thaw")
		if err != nil {
			return err
		}
		if ok {
			t.ledger.SvcFrozen[svc] = false
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: thaw of %s refused for 90s", n, svc)
		}
		time.Sleep(2 * time.Second)
	}
}

func testStandby(t *T) error {
	where, err := t.where()
	if err != nil {
		return err
	}
	n := where[pick(t, t.C.Services).Name]
	nd := t.C.Nodes[n]
	svcs := servicesOn(where, n)
	t.Fault("drain of %s (running %v)", n, svcs)
	if r := nd.Run(60*time.Second, "nodemgr", "drain"); r.Code != 0 {
		return fmt.Errorf("%s: nodemgr drain: %s", n, r)
	}
	t.ledger.NodeFrozen[n] = true
	start := time.Now()
	for _, s := range svcs {
		to, err := t.C.upOnlyOn(s, t.C.others(n), 30*time.Second)
		if err != nil {
			return fmt.Errorf("after the drain of %s: %w", n, err)
		}
		t.Note("%s moved to %s in %s", s, to, time.Since(start).Round(100*time.Millisecond))
	}
	if err := t.ledgerHolds(10*time.Second, "after the drain"); err != nil {
		return err
	}
	// the freeze is durable: it survives a daemon restart
	t.Fault("daemon restart of the drained %s", n)
	if err := nd.StopDaemon(); err != nil {
		return err
	}
	if err := nd.StartDaemon(); err != nil {
		return err
	}
	if err := t.ledgerHolds(20*time.Second, "after the restart of the drained node"); err != nil {
		return err
	}
	if r := nd.Run(30*time.Second, "nodemgr", "thaw"); r.Code != 0 {
		return fmt.Errorf("%s: nodemgr thaw: %s", n, r)
	}
	t.ledger.NodeFrozen[n] = false
	if err := t.ledgerHolds(10*time.Second, "after the thaw"); err != nil {
		return err
	}
	// quiet: the restarted node heard every peer's data (out of rejoin),
	// else a freeze from it is rightly answered "reached on the known
	// nodes only" (a run asked 90 ms after the restart, before the data of
	// a peer it had heard come up)
	if _, err := t.where(); err != nil {
		return fmt.Errorf("after the restart of %s: %w", n, err)
	}
	// a service freeze from any node, durable over a restart of another
	s, from, other := pick(t, t.C.Services).Name, pick(t, t.C.Names), pick(t, t.C.Names)
	ok, err := t.admin(from, s, "freeze")
	if err != nil || !ok {
		return errors.Join(err, fmt.Errorf("%s: freeze of %s refused in a quiet cluster", from, s))
	}
	t.ledger.SvcFrozen[s] = true
	t.Fault("daemon restart of %s with %s frozen", other, s)
	if err := t.C.Nodes[other].StopDaemon(); err != nil {
		return err
	}
	if err := t.C.Nodes[other].StartDaemon(); err != nil {
		return err
	}
	if err := t.ledgerHolds(20*time.Second, "after a restart with "+s+" frozen"); err != nil {
		return err
	}
	return t.thaw(pick(t, t.C.Names), s)
}

func testResyncConfig(t *T) error {
	adm := pick(t, t.C.Names)
	for _, s := range t.C.svcNames() {
		ok, err := t.admin(adm, s, "freeze")
		if err != nil || !ok {
			return errors.Join(err, fmt.Errorf("%s: freeze of %s refused in a quiet cluster", adm, s))
		}
		t.ledger.SvcFrozen[s] = true
	}
	n := pick(t, t.C.Names)
	o := pick(t, t.C.others(n))
	t.Fault("link of %s cut", n)
	if err := t.C.Bed.Cut(n); err != nil {
		return err
	}
	if err := waitUntil(15*time.Second, func() bool { return t.C.sees(o, n, dataset.NodeDown) }, "%s never saw %s down after the cut", o, n); err != nil {
		return err
	}
	if t.C.Quorum() {
		// the cut node loses its vote (1 of 4), stops and freezes; the
		// others keep it but the services are frozen: nothing moves
		if err := t.lostQuorum(n, splitStopBound); err != nil {
			return err
		}
	}
	s := pick(t, t.C.Services).Name
	v1, v2 := 10+t.Rand.IntN(40), 50+t.Rand.IntN(40)
	for _, e := range []struct {
		node string
		v    int
	}{{n, v1}, {o, v2}} {
		if err := t.C.Nodes[e.node].must(30*time.Second, "svcmgr", "-s", s, "set", "--kw", fmt.Sprintf("DEFAULT.priority=%d", e.v)); err != nil {
			return err
		}
	}
	t.Note("%s set priority %d on %s, %d on %s", s, v1, n, v2, o)
	t.Fault("link of %s restored", n)
	if err := t.C.Bed.Restore(n); err != nil {
		return err
	}
	if t.C.Quorum() {
		// its services may be down everywhere until the thaws below
		if err := t.thawLosers([]string{n}); err != nil {
			return err
		}
	} else if _, err := t.where(); err != nil {
		return err
	}
	if err := waitUntil(configBound, func() bool { return t.C.sameConfigs() == nil }, ""); err != nil {
		return fmt.Errorf("after the heal: %w", t.C.sameConfigs())
	}
	got := strings.TrimSpace(t.C.Nodes[o].Run(10*time.Second, "svcmgr", "-s", s, "get", "--kw", "DEFAULT.priority").Out)
	if got != fmt.Sprint(v1) && got != fmt.Sprint(v2) {
		return fmt.Errorf("after the heal %s has priority %q, want %d or %d", s, got, v1, v2)
	}
	t.Note("every node holds priority %s", got)
	for _, s := range t.C.svcNames() {
		if err := t.thaw(pick(t, t.C.Names), s); err != nil {
			return err
		}
	}
	return nil
}

func testAdminUnderChurn(t *T) error {
	if _, err := t.where(); err != nil {
		return err
	}
	churn := pick(t, t.C.Names)
	adm := t.C.others(churn)
	// the second admin node; with two nodes, one churning, the one left
	// runs both actions
	adm2 := adm[1%len(adm)]
	stop := make(chan struct{})
	var churnErr error
	var restarts int
	var wg sync.WaitGroup
	wg.Add(1)
	crng := pick(t, []int{0, 1, 2, 3}) // the churn's own choices, drawn here
	go func() {
		defer wg.Done()
		nd := t.C.Nodes[churn]
		for i := crng; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			if i%2 == 0 {
				err = nd.StopDaemon()
			} else {
				err = nd.Kill9()
			}
			if err == nil {
				err = nd.StartDaemon()
			}
			if err != nil {
				churnErr = err
				return
			}
			restarts++
			time.Sleep(time.Duration(500+300*(i%4)) * time.Millisecond)
		}
	}()
	t.Fault("daemon of %s restarting in a loop (clean stop and kill -9)", churn)
	var mu sync.Mutex
	var errs []error
	check := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// rounds of admin actions for at least churnFor, while the churn goes on
	frozen := map[string]bool{}
	for end := time.Now().Add(churnFor); time.Now().Before(end); {
		where := t.C.anyWhere()
		s1, s2 := t.C.Services[0].Name, t.C.Services[1%len(t.C.Services)].Name
		to := pick(t, t.C.others(where[s1]))
		var aw sync.WaitGroup
		aw.Add(2)
		go func() { // a switch from the first admin node
			defer aw.Done()
			ok, err := t.admin(adm[0], s1, "switch", "--to", to)
			check(err)
			if ok {
				check(t.upNowOn(adm[0], s1, to, "switch --to "+to, churn))
			}
		}()
		go func() { // a takeover from the second
			defer aw.Done()
			ok, err := t.admin(adm2, s2, "takeover")
			check(err)
			if ok {
				check(t.upNowOn(adm2, s2, adm2, "takeover", churn))
			}
		}()
		aw.Wait()
		s := pick(t, t.C.svcNames())
		ok, err := t.admin(pick(t, adm), s, "freeze")
		check(err)
		if ok {
			frozen[s] = true
			t.ledger.SvcFrozen[s], t.ledger.SvcUnsure[s] = true, false
			check(t.ledgerHolds(10*time.Second, "after an acknowledged freeze of "+s))
		} else if err == nil {
			t.ledger.SvcUnsure[s] = true // refused: see the thaw below
		}
		if ok, err := t.admin(pick(t, adm), s, "thaw"); err != nil || ok {
			check(err)
			if ok {
				delete(frozen, s)
				t.ledger.SvcFrozen[s], t.ledger.SvcUnsure[s] = false, false
			}
		} else {
			// refused: "reached on the known nodes only" (in force where
			// known) or a timeout: the flag is not promised either way
			t.ledger.SvcUnsure[s] = true
		}
	}
	close(stop)
	wg.Wait()
	t.Fault("end of the churn of %s after %d restarts", churn, restarts)
	if !t.C.Nodes[churn].DaemonAlive() {
		check(t.C.Nodes[churn].StartDaemon())
	}
	// the churning node's runs were held while they followed each other
	// (see upNowOn); once it runs steadily, its peers know its instances
	// again within the hold (2/3 hb.timeout)
	for _, n := range adm {
		check(t.viewKnowsAll(n, "after the churn of "+churn+" ended"))
	}
	for s := range frozen {
		check(t.thaw(adm2, s))
	}
	return errors.Join(append(errs, churnErr)...)
}

// churnFor is how long AdminUnderChurn goes on.
const churnFor = 15 * time.Second

// anyWhere is where each service is up as the first node that answers
// sees it (for choices made while the cluster moves).
func (c *Cluster) anyWhere() map[string]string {
	out := map[string]string{}
	for _, n := range c.Names {
		st, err := c.Nodes[n].Status()
		if err != nil {
			continue
		}
		for s, ss := range st.Services {
			for node, i := range ss.Instances {
				if i.Avail == dataset.StatusUp {
					out[s] = node
				}
			}
		}
		return out
	}
	return out
}

// upNowOn judges an acknowledged placement of svc on want (switch --to,
// takeover), asked from node n, right after the answer, while the daemon
// of churn restarts in a loop. Two observers:
//
//  1. the journal, which no daemon can fool: svc is up on want and on no
//     other node (its start line is written before the process starts, a
//     stop line after it is gone);
//  2. n's view, once it knows every instance of svc: a node whose daemon
//     restarts announces its instances unknown until its first check, and
//     a node that came back has its held data marked stale until it is
//     confirmed. An unknown instance is neither up nor down, so the view
//     is read again (every 100 ms, up to ackViewBound) until it knows them
//     all; then svc must be up on exactly want.
//
// A run of churn confirmed while its previous run was heard within 2/3
// hb.timeout is held (its instances unknown: a restart looks like a cloned
// host until the other run is silent, see docs/security.md "Two daemons
// with one name"), and the churn restarts it every 0.5 to 1.4 s: its
// instances may stay unknown to n for the whole churn. Then the view must
// not contradict the journal: no instance up but want's, unknown ones on
// churn alone; testAdminUnderChurn checks afterwards that every view
// knows every instance again.
//
// Nothing else moves svc meanwhile (the other admin acts on another
// service, a daemon restart never stops a service).
func (t *T) upNowOn(n, svc, want, action, churn string) error {
	ev, err := ReadJournal(t.C.Journal)
	if err != nil {
		return err
	}
	if up := UpAt(ev)[svc]; !slices.Equal(up, []string{want}) {
		return fmt.Errorf("%s: %s of %s acknowledged, but the journal has it up on %v", n, action, svc, up)
	}
	var first, last string
	var firstAt time.Time
	var up, unknown []string
	err = waitUntil(ackViewBound, func() bool {
		st, err := t.C.Nodes[n].Status()
		if err != nil {
			last, up, unknown = err.Error(), nil, nil
			return false
		}
		up, unknown = upIn(st, svc)
		last = describeInstances(st, svc)
		if first == "" {
			first, firstAt = last, time.Now()
		}
		return len(unknown) == 0 && slices.Equal(up, []string{want})
	}, "")
	if err == nil {
		if first != last {
			t.Note("%s: right after the %s of %s (%s): %s; then %s", n, action, svc, firstAt.Format("15:04:05.000"), first, last)
		}
		return nil
	}
	if slices.Equal(unknown, []string{churn}) && (slices.Equal(up, []string{want}) || (want == churn && len(up) == 0)) {
		t.Note("%s: after the %s of %s its view is %s for %s: the churning node's runs are held", n, action, svc, last, ackViewBound)
		return nil
	}
	return fmt.Errorf("%s: %s of %s acknowledged (the journal agrees), but %s later its view is %s (first read at %s: %s)", n, action, svc, ackViewBound, last, firstAt.Format("15:04:05.000"), first)
}

// viewKnowsAll waits up to ackViewBound for n's view to know every
// instance of every service.
func (t *T) viewKnowsAll(n, when string) error {
	var last string
	err := waitUntil(ackViewBound, func() bool {
		st, err := t.C.Nodes[n].Status()
		if err != nil {
			last = err.Error()
			return false
		}
		var unknown []string
		last = ""
		for _, s := range t.C.svcNames() {
			if _, u := upIn(st, s); len(u) > 0 {
				unknown = append(unknown, u...)
				last += s + ": " + describeInstances(st, s) + "; "
			}
		}
		return len(unknown) == 0
	}, "")
	if err != nil {
		return fmt.Errorf("%s, %s later %s's view still has unknown instances: %s", when, ackViewBound, n, last)
	}
	return nil
}

// ackViewBound is how long upNowOn waits for a view that knows every
// instance of the service.
const ackViewBound = 10 * time.Second

// upIn lists, in a status object, the nodes where svc is up and those
// whose instance of svc is not known (avail unknown or empty, or stale).
func upIn(st dataset.ClusterStatus, svc string) (up, unknown []string) {
	for node, i := range st.Services[svc].Instances {
		switch {
		case i.Stale || i.Avail == dataset.StatusUnknown || i.Avail == "":
			unknown = append(unknown, node)
		case i.Avail == dataset.StatusUp:
			up = append(up, node)
		}
	}
	slices.Sort(up)
	slices.Sort(unknown)
	return up, unknown
}

// describeInstances is svc in a status object, for a message:
// "n1 down (node up), n3 unknown stale (node maintenance)".
func describeInstances(st dataset.ClusterStatus, svc string) string {
	var out []string
	for _, node := range slices.Sorted(maps.Keys(st.Services[svc].Instances)) {
		i := st.Services[svc].Instances[node]
		s := node + " " + string(i.Avail)
		if i.Stale {
			s += " stale"
		}
		out = append(out, fmt.Sprintf("%s (node %s)", s, st.Nodes[node].Status))
	}
	return strings.Join(out, ", ")
}

func testDiskFull(t *T) error {
	n := pick(t, t.C.Names)
	nd := t.C.Nodes[n]
	v := nd.Var()
	readOnly := t.Rand.IntN(2) == 0
	filler := filepath.Join(v, "chaos-filler")
	if readOnly {
		t.Fault("%s made read-only", v)
		if out, err := exec.Command("mount", "-o", "remount,ro", v).CombinedOutput(); err != nil {
			return fmt.Errorf("remount ro %s: %w: %s", v, err, out)
		}
	} else {
		t.Fault("%s filled", v)
		if err := fill(filler); err != nil {
			return err
		}
	}
	r := nd.Run(30*time.Second, "nodemgr", "freeze")
	switch {
	case r.Code == 0:
		t.ledger.NodeFrozen[n] = true
		t.Note("nodemgr freeze on %s acknowledged", n)
	case r.Code == 1 && strings.TrimSpace(r.Err) != "":
		t.Note("nodemgr freeze on %s refused: %s", n, firstLine(r.Err))
	default:
		return fmt.Errorf("%s: nodemgr freeze with a broken /var: no honest answer: %s", n, r)
	}
	s := pick(t, t.C.svcNames())
	ok, err := t.admin(n, s, "freeze")
	if err != nil {
		return err
	}
	if ok {
		t.ledger.SvcFrozen[s] = true
	}
	if readOnly {
		if out, err := exec.Command("mount", "-o", "remount,rw", v).CombinedOutput(); err != nil {
			return fmt.Errorf("remount rw %s: %w: %s", v, err, out)
		}
	} else if err := os.Remove(filler); err != nil {
		return err
	}
	t.Fault("%s repaired; daemon restart of %s", v, n)
	if err := nd.StopDaemon(); err != nil {
		return err
	}
	if err := nd.StartDaemon(); err != nil {
		return err
	}
	if err := t.ledgerHolds(20*time.Second, "after the repair and a restart"); err != nil {
		return err
	}
	if t.ledger.NodeFrozen[n] {
		if err := nd.must(30*time.Second, "nodemgr", "thaw"); err != nil {
			return err
		}
		t.ledger.NodeFrozen[n] = false
	}
	if ok {
		return t.thaw(n, s)
	}
	return nil
}

// fill writes path until its filesystem is full.
func fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return fmt.Errorf("fill %s: %w", path, err)
			}
			break
		}
	}
	for { // the last partial pages too
		if _, err := f.Write(buf[:1]); err != nil {
			return nil
		}
	}
}
