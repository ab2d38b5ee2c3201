package chaos

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// testFlap is a flapping partition: a node (the owner of a random service)
// cut off from the others and healed again and again for flapFor, each cut
// and each heal lasting a random time around hb.timeout, so that the
// declarations of it down, its vote, its split_action and the takeover
// gate of the others are begun and cut short in every order. The audits
// then hold the promise of every test: with quorum on never twice (a flex
// service never above flex_max), and every service back where it may run.
func testFlap(t *T) error {
	where, err := t.where()
	if err != nil {
		return err
	}
	n := where[pick(t, t.C.Services).Name]
	rest := append(t.C.others(n), "arb")
	if !t.C.Quorum() {
		t.promised = false
	}
	var cuts, heals []time.Duration
	end := time.Now().Add(flapFor)
	for time.Now().Before(end) {
		// a cut from 0.3 to 2.5 hb.timeout: some end before the others
		// declare n down, some after its vote and their gate opened
		on := time.Duration(float64(hbTimeout) * (0.3 + 2.2*t.Rand.Float64()))
		off := time.Duration(float64(hbTimeout) * (0.2 + 1.3*t.Rand.Float64()))
		t.mu.Lock()
		t.lastFault = time.Now()
		t.mu.Unlock()
		if err := t.C.Bed.Partition([]string{n}, rest); err != nil {
			return err
		}
		time.Sleep(on)
		if err := t.C.Bed.Heal(); err != nil {
			return err
		}
		t.mu.Lock()
		t.lastFault = time.Now()
		t.mu.Unlock()
		cuts, heals = append(cuts, on), append(heals, off)
		time.Sleep(off)
	}
	t.Fault("flapping partition of %s (running %v) from %v with the arbitrator: %d cuts of %s to %s, heals of %s to %s, for %s; healed",
		n, servicesOn(where, n), t.C.others(n), len(cuts), round(slices.Min(cuts)), round(slices.Max(cuts)), round(slices.Min(heals)), round(slices.Max(heals)), flapFor)
	if !t.C.Quorum() {
		return t.oneInstanceAfterHeal(t.C.svcNames())
	}
	var errs []error
	// whoever lost a vote on the way stopped and froze: that freeze ends
	// by itself now that the cluster is whole
	errs = append(errs, t.thawLosers(t.quorumLosers()))
	if l := t.quorumLosers(); len(l) > 0 {
		t.Note("lost a vote on the way: %v", l)
	}
	return errors.Join(errs...)
}

// flapFor is how long the partition flaps.
const flapFor = 30 * time.Second

func round(d time.Duration) string { return fmt.Sprint(d.Round(100 * time.Millisecond)) }
