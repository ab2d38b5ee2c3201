package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"haven/dataset"
)

// ResourceRecover: the restart ladder (docs/operations.md, "Resource
// failures"). Every test service has monitor = true, restart = 2,
// restart_delay = 1s and monitor_action = switch; the nodes check every
// monitor_interval (300ms, at most every 500ms: the daemon's tick).

// restartBound is how soon a killed app is back on its node: found down
// within a check period (the tick), restarted restart_delay later, plus
// the machine's slack.
const restartBound = 500*time.Millisecond + ladderDelay + 4*time.Second

// switchBound is how soon a service whose starts fail on its node is up
// on another: each of its restarts (delay, a failing start, the next
// check), then the switch (its stop, the next leader's ready_period, the
// start), plus slack.
const switchBound = time.Duration(ladderRestarts+1)*(500*time.Millisecond+ladderDelay) + readyPeriod + slack

func testResourceRecover(t *T) error {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	n := where[s]
	from := t.C.journalLines()
	t.Fault("kill -9 of the process of %s on %s", s, n)
	if err := t.C.killApp(s, n); err != nil {
		return err
	}
	killed := t.lastFault
	if err := waitUntil(restartBound+10*time.Second, func() bool { return t.C.appPid(s, n) != 0 }, "%s not restarted on %s within %s", s, n, restartBound+10*time.Second); err != nil {
		return err
	}
	if l := t.newLines(from); !slices.Equal(l, []string{n + " " + s + " stop", n + " " + s + " start"}) {
		return fmt.Errorf("a local restart of %s on %s, yet the journal has: %s", s, n, strings.Join(l, ", "))
	}
	ev, _ := ReadJournal(t.C.Journal)
	took := sinceBoot(ev[len(ev)-1].T).Sub(killed)
	t.Note("%s restarted on %s %s after the kill", s, n, took.Round(100*time.Millisecond))
	// restart_delay after it was found down, so never sooner after the
	// kill (the journal's clock has 10 ms steps)
	if took < ladderDelay-20*time.Millisecond {
		return fmt.Errorf("%s restarted on %s %s after the kill, sooner than restart_delay %s", s, n, took.Round(10*time.Millisecond), ladderDelay)
	}
	if took > restartBound {
		return fmt.Errorf("%s restarted on %s %s after the kill, over the bound %s (a check period + restart_delay %s + slack)", s, n, took.Round(100*time.Millisecond), restartBound, ladderDelay)
	}
	// its starts fail there: the restart left is spent, monitor_action
	// switch moves it
	unfail, err := t.killFailing(s, n)
	if err != nil {
		return err
	}
	defer unfail()
	to, err := t.C.upOnlyOn(s, t.C.others(n), splitBound)
	if err != nil {
		return fmt.Errorf("restarts spent on %s, monitor_action switch: %w", n, err)
	}
	took = time.Since(t.lastFault)
	t.Note("%s moved to %s %s after the kill, its restarts on %s spent", s, to, took.Round(100*time.Millisecond), n)
	if took > switchBound {
		return fmt.Errorf("%s moved to %s %s after the kill, over the bound %s (%d restarts, the switch)", s, to, took.Round(100*time.Millisecond), switchBound, ladderRestarts)
	}
	unfail()
	// the exclusion of n ends once the service is up on another node; a
	// failed state is cleared as an admin does once the cause is fixed
	var inst dataset.Instance
	if err := waitUntil(ledgerBound, func() bool {
		st, err := t.C.Nodes[n].Status()
		inst = st.Services[s].Instances[n]
		return err == nil && inst.Excluded == ""
	}, ""); err != nil {
		return fmt.Errorf("%s up on %s, yet %s still shows its instance excluded after %s: %s", s, to, n, ledgerBound, inst.Excluded)
	}
	return t.clearFailed(s, n)
}

// killFailing makes the starts of svc fail on n (the file R/fail-SVC-NODE
// that start.sh reads), then kills its process there: the restart ladder
// spends its restarts and monitor_action moves it. undo makes its starts
// work again (it may be called more than once).
func (t *T) killFailing(svc, n string) (undo func(), err error) {
	marker := filepath.Join(t.C.Work, "fail-"+svc+"-"+n)
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return nil, err
	}
	undo = func() { os.Remove(marker) }
	t.Fault("kill -9 of the process of %s on %s, its starts failing there", svc, n)
	if err := t.C.killApp(svc, n); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}
