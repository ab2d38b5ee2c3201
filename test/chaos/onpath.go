package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"haven/dataset"
)

// On-path attacker faults: an attacker between two hosts who has no
// cluster secret but sees every packet of one host to another and decides
// what becomes of it. It cannot forge or change a frame (the envelope
// refuses it); it can hold frames back and deliver them later, reorder
// them, and pass some kinds while dropping others. Each fault acts on the
// packets of `from` arriving at `to`, in to's namespace (an iptables rule
// of its chaos chain, and for holding and reordering a netlink queue bound
// by this process, as Delay does): the packets keep their real addresses.
// Heal removes them all; packets still held are then delivered.

// onPathQueueBase numbers the queues of the attacker (base + host index),
// apart from Delay's.
const onPathQueueBase = 4300

// onPath is the attacker's queue into one host.
type onPath struct {
	dl   *delayer
	rule []string // the iptables rule that feeds the queue, to delete it
}

func (op *onPath) queue() *delayer {
	if op == nil {
		return nil
	}
	return op.dl
}

// Withhold holds back every every-th datagram of from arriving at to, until
// ReleaseHeld (or Heal): the others pass at once. What a withheld datagram
// carried is authentic and, delivered late, a replay of the past.
func (b *Bed) Withhold(from, to string, every int) error {
	n := 0
	return b.intercept(from, to, "udp", func() (time.Duration, bool) {
		n++
		return 0, every > 0 && n%every == 0
	})
}

// Reorder delays every packet of from (of every host when from is "")
// arriving at to by its own random time in [0, max): packets overtake each
// other (both protocols).
func (b *Bed) Reorder(from, to string, max time.Duration, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, uint64(max)))
	return b.intercept(from, to, "all", func() (time.Duration, bool) {
		return time.Duration(r.Int64N(int64(max))), false
	})
}

// ReleaseHeld delivers the datagrams of the attacker's queue into to that
// Withhold held back, newest first, and returns how many.
func (b *Bed) ReleaseHeld(to string) int {
	if op := b.onpath[to]; op != nil {
		return op.dl.releaseHeld()
	}
	return 0
}

// BeatsOnly passes the small datagrams of from arriving at to (a beat is
// about 200 bytes on the wire) and drops the rest: every TCP segment (the
// streams that carry full copies and configs) and every datagram longer
// than maxLen bytes (the data).
func (b *Bed) BeatsOnly(from, to string, maxLen int) error {
	if err := b.drop(to, "-s", b.Addr[from], "-p", "tcp"); err != nil {
		return err
	}
	return b.drop(to, "-s", b.Addr[from], "-p", "udp", "-m", "length", "--length", fmt.Sprintf("%d:65535", maxLen+1))
}

// intercept queues the packets of from arriving at to (proto "udp",
// "tcp" or "all") to this process, where pick decides each one's fate. It
// replaces an attacker's queue set before into to.
func (b *Bed) intercept(from, to, proto string, pick func() (time.Duration, bool)) error {
	if err := b.noOnPath([]string{to}); err != nil {
		return err
	}
	q := uint16(onPathQueueBase + slices.Index(b.Names(), to))
	var dl *delayer
	err := InNetns(b.NS[to], func() (err error) {
		dl, err = newDelayer(q, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("attacker's queue into %s: %w", to, err)
	}
	dl.pick = pick
	if err := b.chain(to); err != nil {
		dl.close()
		return err
	}
	rule := []string{chainName, "-i", Dev, "-p", proto}
	if from != "" {
		rule = append(rule, "-s", b.Addr[from])
	}
	rule = append(rule, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(q), "--queue-bypass")
	if err := b.iptables(to, append([]string{"-A"}, rule...)...); err != nil {
		dl.close()
		return err
	}
	if b.onpath == nil {
		b.onpath = map[string]*onPath{}
	}
	b.onpath[to] = &onPath{dl: dl, rule: rule}
	return nil
}

// noOnPath removes the attacker's queues into the hosts ns: their rules,
// then the queues, whose held packets are delivered.
func (b *Bed) noOnPath(ns []string) error {
	var errs []error
	for _, n := range ns {
		op := b.onpath[n]
		if op == nil {
			continue
		}
		delete(b.onpath, n)
		if err := b.iptables(n, append([]string{"-D"}, op.rule...)...); err != nil {
			errs = append(errs, err)
		}
		op.dl.close()
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove the on-path attacker: %v", errs)
	}
	return nil
}

// decide applies the attacker's choice to packet id (the reader's
// goroutine): withheld, delivered after its own delay, or at once.
func (dl *delayer) decide(id uint32) {
	d, withhold := dl.pick()
	switch {
	case withhold:
		dl.mu.Lock()
		dl.withheld = append(dl.withheld, id)
		dl.mu.Unlock()
	case d > 0:
		dl.timers.Add(1)
		time.AfterFunc(d, func() {
			defer dl.timers.Done()
			dl.accept(id)
		})
	default:
		dl.accept(id)
	}
}

// releaseHeld delivers the withheld packets, newest first.
func (dl *delayer) releaseHeld() int {
	dl.mu.Lock()
	ids := dl.withheld
	dl.withheld = nil
	dl.mu.Unlock()
	for i := len(ids) - 1; i >= 0; i-- {
		dl.accept(ids[i])
	}
	return len(ids)
}

// OnPath: the attacker's three faults over a running cluster: reordering between every pair, beats only from the
// node running a service to another while the service leaves it, and
// datagrams of a node withheld, then delivered after it crashed. The
// promises: no node declared down by reordering, never twice (the
// journal's audit), a node's stale view of a service never trusted for
// longer than hb.timeout, and a dead node never shown up again.

// onPathReorder is the largest delay of a packet while reordering: within
// a beat period (500 ms), so no beat is late enough to be missed.
const onPathReorder = 300 * time.Millisecond

// BeatLen is the largest datagram that passes as a beat (IP length), for
// BeatsOnly. Measured (iptables length counters in a 2-node bed): beats
// are 300-339 bytes on the wire since they carry the "heard" echo next to
// the ack (a 2-node beat's JSON is about 260 bytes, the envelope,
// memberlist's framing and the IP and UDP headers about 70 more; every
// other member adds two echoes, about 60 bytes), a delta carrying an
// instance 880 bytes and more. At 300, every beat was dropped too: the
// link went down instead of passing beats only (CI of stop 49,
// TestNetnsLinkBeatsOnlyIsDegraded).
const BeatLen = 600

func testOnPath(t *T) error {
	seed := t.Rand.Uint64()
	if err := t.lossyPhase(fmt.Sprintf("reordering (each packet delayed 0-%s)", onPathReorder), func(n string) error {
		return t.C.Bed.Reorder("", n, onPathReorder, seed)
	}); err != nil {
		return err
	}
	if err := t.onPathBeatsOnly(); err != nil {
		return err
	}
	return t.onPathWithheld()
}

// onPathBeatsOnly: o hears only the beats of n, which runs s; s's process
// dies on n and its starts fail there, so the ladder moves it. o must not
// go on showing s up on n for longer than hb.timeout (+ slack) after it
// stopped there.
func (t *T) onPathBeatsOnly() error {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	n := where[s]
	o := pick(t, t.C.others(n))
	t.Fault("an attacker passes only the beats of %s to %s (no data)", n, o)
	if err := t.C.Bed.BeatsOnly(n, o, BeatLen); err != nil {
		return err
	}
	defer t.C.Bed.Heal()
	unfail, err := t.killFailing(s, n)
	if err != nil {
		return err
	}
	defer unfail()
	// o's view of s on n, while s has no process on n
	const bound = hbTimeout + 3*time.Second
	var since time.Time
	end := time.Now().Add(splitBound)
	for time.Now().Before(end) {
		st, err := t.C.Nodes[o].Status()
		inst := st.Services[s].Instances[n]
		trusted := err == nil && inst.Avail == dataset.StatusUp && !inst.Stale && !st.Heartbeat[n].Stale && st.Nodes[n].Status == dataset.NodeUp
		if trusted && t.C.appPid(s, n) == 0 {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) > bound {
				return fmt.Errorf("%s hearing only the beats of %s shows %s up there %s after it died (stale data trusted; bound hb.timeout + 3s)", o, n, s, time.Since(since).Round(100*time.Millisecond))
			}
		} else {
			since = time.Time{}
			if err == nil && t.C.appPid(s, n) == 0 && anyUpElsewhere(st, s, n) {
				break
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fault("the attacker stops (%d packets dropped)", t.C.Bed.Dropped(o))
	if err := t.C.Bed.Heal(); err != nil {
		return err
	}
	unfail()
	if _, err := t.C.upOnlyOn(s, t.C.Names, splitBound); err != nil {
		return err
	}
	return t.clearFailed(s, n)
}

// anyUpElsewhere says whether st shows svc up on a node other than n.
func anyUpElsewhere(st dataset.ClusterStatus, svc, n string) bool {
	for node, i := range st.Services[svc].Instances {
		if node != n && i.Avail == dataset.StatusUp {
			return true
		}
	}
	return false
}

// clearFailed clears svc's instance on n when its ladder gave up there
// (as an admin does once the cause is fixed).
func (t *T) clearFailed(svc, n string) error {
	st, err := t.C.Nodes[n].Status()
	if err != nil {
		return err
	}
	if inst := st.Services[svc].Instances[n]; inst.Monitor.State != dataset.Idle || inst.GaveUp != "" {
		t.Note("%s's instance on %s: %s %s: cleared", svc, n, inst.Monitor.State, inst.GaveUp)
		return t.C.Nodes[n].must(30*time.Second, "svcmgr", "-s", svc, "clear")
	}
	return nil
}

// onPathWithheld: an attacker holds back every 3rd datagram of n to the
// others; n crashes (its daemon and apps killed); once the others saw it
// down and took its services over, the attacker delivers what it held.
// Authentic but old, those datagrams must not bring n back up, nor make
// the new owner stop its copy.
func (t *T) onPathWithheld() error {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	n := where[s]
	others := t.C.others(n)
	t.Fault("an attacker withholds every 3rd datagram of %s to %v", n, others)
	for _, o := range others {
		if err := t.C.Bed.Withhold(n, o, 3); err != nil {
			t.C.Bed.Heal()
			return err
		}
	}
	defer t.C.Bed.Heal()
	time.Sleep(2*time.Second + time.Duration(t.Rand.Int64N(int64(2*time.Second))))
	svcs := servicesOn(where, n)
	t.Fault("crash of %s (kill -9 of its daemon and of the apps of %v)", n, t.C.appsOn(where, n))
	nd := t.C.Nodes[n]
	if err := nd.Kill9(); err != nil {
		return err
	}
	if err := t.C.killAppsOn(where, n); err != nil {
		return err
	}
	to, err := t.C.upOnlyOn(s, others, splitBound)
	if err != nil {
		return err
	}
	// every service of the crashed node taken over before the journal's
	// mark: a later takeover of another one is not a move
	for _, x := range svcs {
		if _, err := t.C.upOnlyOn(x, others, splitBound); err != nil {
			return err
		}
	}
	if err := waitUntil(splitBound, func() bool {
		for _, o := range others {
			if !t.C.sees(o, n, dataset.NodeDown) {
				return false
			}
		}
		return true
	}, "the others never saw the crashed %s down", n); err != nil {
		return err
	}
	from := t.C.journalLines()
	held := 0
	for _, o := range others {
		held += t.C.Bed.ReleaseHeld(o)
	}
	t.Fault("the attacker delivers the %d datagrams of %s it held, newest first", held, n)
	end := time.Now().Add(2 * hbTimeout)
	for time.Now().Before(end) {
		for _, o := range others {
			if t.C.sees(o, n, dataset.NodeUp) {
				return fmt.Errorf("%s shows the crashed %s up again %s after the attacker delivered %d held datagrams", o, n, time.Since(t.lastFault).Round(100*time.Millisecond), held)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := t.nothingMoved(from, fmt.Sprintf("%s runs on %s; old datagrams of the dead %s must change nothing", s, to, n)); err != nil {
		return err
	}
	if err := t.C.Bed.Heal(); err != nil {
		return err
	}
	t.Fault("restart of %s", n)
	return nd.StartDaemon()
}
