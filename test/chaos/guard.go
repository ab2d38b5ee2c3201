package chaos

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DaemonLoss (docs/behaviour.md 3.1, the node guard): the daemon of a node
// running a service is killed (-9) or paused (SIGSTOP) alone, its
// services' processes left running, for long enough that its guard's
// lease runs out and the others take its services over. With the quorum
// on, never twice: the guard ends the services before any survivor's
// takeover gate opens. Without it the peers take over after hb.timeout,
// before the lease ends: both run until the guard acts (no promise; the
// audit reports the overlap), then one instance.
//
// The guard ends an app with SIGKILL: no stop script runs, so nothing
// journals its end. The suite's reaper does, from outside (reaper.go):
// the test takes the pids of the node's apps before the fault, checks the
// reaper watches each, and waits for their ends. Nothing the daemons say
// enters it.

// daemonLossHold is how long the daemon stays killed or paused: the
// lease (12 s by default, anchored on the beats the others heard), the
// guard's act, the survivors' gate and ready_period, with room to spare.
const daemonLossHold = 25 * time.Second

func testDaemonLoss(t *T) (err error) {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	n := where[s]
	nd := t.C.Nodes[n]
	svcs := servicesOn(where, n)
	q := t.C.Quorum()
	if !q {
		t.promised = false // the peers take over after hb.timeout, the guard acts at its lease's end
	}
	w, err := t.C.watchApps(n, svcs)
	if err != nil {
		return err
	}
	from := t.C.journalLines()
	kill := t.Rand.IntN(2) == 0
	if kill {
		t.Fault("kill -9 of the daemon of %s (running %v; its apps left running)", n, svcs)
		err = nd.Kill9()
	} else {
		t.Fault("SIGSTOP of the daemon of %s (running %v; its apps left running) for %s", n, svcs, daemonLossHold)
		err = nd.Signal(sigSTOP)
	}
	if err != nil {
		return err
	}
	start := t.lastFault
	var errs []error
	if q {
		errs = append(errs, t.takenOver(svcs, n, t.C.others(n), from, start, "loss of the daemon"))
	} else {
		for _, sv := range svcs {
			to, err := t.C.upOnlyOn(sv, t.C.others(n), splitBound)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			t.Note("%s up on %s %s after the fault", sv, to, time.Since(start).Round(100*time.Millisecond))
		}
	}
	// the guard ended the apps left there (the watcher saw each end)
	if err := waitUntil(time.Until(start.Add(daemonLossHold)), w.allGone, "%s's apps still alive %s after the loss of its daemon: its guard did not end them", n, daemonLossHold); err != nil {
		errs = append(errs, err)
	} else {
		for _, g := range w.ends() {
			t.Note("%s", g)
		}
	}
	time.Sleep(time.Until(start.Add(daemonLossHold)))
	if kill {
		t.Fault("start of the daemon of %s", n)
		errs = append(errs, nd.StartDaemon())
	} else {
		t.Fault("SIGCONT of the daemon of %s", n)
		errs = append(errs, nd.Signal(sigCONT))
	}
	errs = append(errs, t.guardFiredSaid(n, svcs))
	if !kill && q {
		// it sees the gap, votes alone and loses (nothing left to stop):
		// its split freeze ends once it hears the others again
		errs = append(errs, t.thawQuorumLosers("a daemon woken after a pause past hb.timeout"))
	}
	if !q {
		errs = append(errs, t.oneInstanceAfterHeal(t.C.svcNames()))
	}
	return errors.Join(errs...)
}

// guardFiredSaid waits until the daemon of n, back, logged that its guard
// ended svcs (guard_fired).
func (t *T) guardFiredSaid(n string, svcs []string) error {
	err := waitUntil(20*time.Second, func() bool {
		for _, l := range t.C.newLogLines(t.logs, `"guard_fired"`) {
			if strings.HasPrefix(l, n+":") {
				return true
			}
		}
		return false
	}, "the daemon of %s, back, did not say that its guard ended %v (guard_fired)", n, svcs)
	if err == nil {
		t.Note("%s's daemon, back, said guard_fired", n)
	}
	return err
}

// appWatch is the apps of a node whose end a test waits for; the reaper
// journals each end.
type appWatch struct {
	c    *Cluster
	node string
	pids map[int]string // pid -> service
	t0   time.Time
}

// watchApps takes the pids of the apps of svcs on n, each watched by the
// reaper.
func (c *Cluster) watchApps(n string, svcs []string) (*appWatch, error) {
	w := &appWatch{c: c, node: n, pids: map[int]string{}, t0: time.Now()}
	for _, s := range svcs {
		pid := c.appPid(s, n)
		if pid == 0 {
			return nil, fmt.Errorf("%s runs %s, yet no process of its app is there", n, s)
		}
		if err := waitUntil(time.Second, func() bool { return c.reaper.tracking(pid) }, "the reaper does not watch %s's app (pid %d) on %s", s, pid, n); err != nil {
			return nil, err
		}
		w.pids[pid] = s
	}
	return w, nil
}

// allGone reports whether every app watched ended and the reaper judged
// its end (journaled it).
func (w *appWatch) allGone() bool {
	for pid := range w.pids {
		if alive(pid) || w.c.reaper.tracking(pid) {
			return false
		}
	}
	return true
}

// ends says when each app watched ended.
func (w *appWatch) ends() []string {
	var out []string
	for pid, s := range w.pids {
		if at, ok := w.c.reaper.endOf(pid); ok {
			out = append(out, fmt.Sprintf("%s's app (pid %d) on %s gone %s after the watch began", s, pid, w.node, at.Sub(w.t0).Round(10*time.Millisecond)))
		}
	}
	slices.Sort(out)
	return out
}
