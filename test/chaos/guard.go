package chaos

import (
	"errors"
	"fmt"
	"strings"
	"sync"
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
// journals its end. The suite does, from outside: it holds the pids of
// the node's apps taken before the fault and polls /proc every 20 ms;
// the stop line is appended once a pid is gone (after the process's end,
// so the journal's up interval still covers its life). Nothing the
// daemons say enters it.

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
	defer func() { err = errors.Join(err, w.stop()) }()
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

// appWatch follows app processes from outside the cluster: each one's end
// is journaled (a stop line) as soon as /proc shows it gone.
type appWatch struct {
	c     *Cluster
	node  string
	mu    sync.Mutex
	left  map[int]string // pid -> service, not seen gone yet
	ended []string
	err   error
	done  chan struct{}
	wg    sync.WaitGroup
	t0    time.Time
}

// watchApps starts watching the apps of svcs on n, every 20 ms.
func (c *Cluster) watchApps(n string, svcs []string) (*appWatch, error) {
	w := &appWatch{c: c, node: n, left: map[int]string{}, done: make(chan struct{}), t0: time.Now()}
	for _, s := range svcs {
		pid := c.appPid(s, n)
		if pid == 0 {
			return nil, fmt.Errorf("%s runs %s, yet no process of its app is there", n, s)
		}
		w.left[pid] = s
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tk.C:
				w.poll()
			}
		}
	}()
	return w, nil
}

func (w *appWatch) poll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for pid, s := range w.left {
		if alive(pid) {
			continue
		}
		delete(w.left, pid)
		if err := w.c.journalStop(w.node, s); err != nil && w.err == nil {
			w.err = err
		}
		w.ended = append(w.ended, fmt.Sprintf("%s's app (pid %d) on %s gone %s after the watch began", s, pid, w.node, time.Since(w.t0).Round(10*time.Millisecond)))
	}
}

// allGone reports whether every app watched was seen gone.
func (w *appWatch) allGone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.left) == 0
}

func (w *appWatch) ends() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ended...)
}

// stop ends the watch: a last poll, so that an end is journaled before
// the audits read the journal.
func (w *appWatch) stop() error {
	close(w.done)
	w.wg.Wait()
	w.poll()
	return w.err
}
