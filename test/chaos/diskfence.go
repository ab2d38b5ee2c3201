package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"haven/heartbeat/disk"
)

// DiskFence, the test of the disk-fence rounds (diskmode.go): a host that
// reads and writes the fencing disk but lacks the secret (DiskAttack, run
// in the suite's own process, beside the daemons) attacks while links are
// cut (docs/security.md, "Can write the shared disk, lacks the secret").
// One of, drawn:
//
//   - held: the owner of a service is cut off from the others (the
//     arbitrator with them) while the attacker holds its slot at the block
//     it had when the attack began and erases every fence block: the
//     owner counts its disk lost (its slot rewritten) and its quorum lost,
//     stops and freezes; the survivors count its fence done once its slot
//     stalled (its beats say it stops by itself) and take over;
//   - recorded: the attacker records the owner's beats for a few seconds,
//     the owner's host crashes (daemon and apps killed, links cut) and the
//     recording is played back into its slot, one block a beat period:
//     none is newer than the newest the survivors read, the stall goes on,
//     they take over;
//   - stopped: the owner's daemon is restarted cleanly (its "stopped"
//     block copied off the disk), then its host crashes and the copy is
//     written back every 200 ms: a block of an earlier run says nothing of
//     the run fenced, the survivors take over.
//
// Never twice is the audit's (the journal); the test checks that the
// services fail over within splitBound plus the disk's part of the fence
// wait, and that the owner stopped (held).
func testDiskFence(t *T) error {
	where, err := t.where()
	if err != nil {
		return err
	}
	s := pick(t, t.C.Services).Name
	owner := where[s]
	slot := slices.Index(slices.Sorted(slices.Values(t.C.Names)), owner)
	switch t.Rand.IntN(3) {
	case 0:
		return t.diskHeld(where, owner, slot)
	case 1:
		return t.diskRecorded(where, owner, slot)
	}
	return t.diskStopped(owner, slot)
}

// attack runs a in the suite's process until the returned stop is called;
// stop returns the attack's error and the number of blocks it wrote.
func (t *T) attack(a DiskAttack) (stop func() error) {
	a.Path, a.Slots = t.C.DiskPath(), len(t.C.Names)
	ctx, cancel := context.WithCancel(context.Background())
	var wrote int
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wrote, err = a.Run(ctx)
	}()
	return func() error {
		cancel()
		wg.Wait()
		t.Note("the attacker wrote %d blocks", wrote)
		return err
	}
}

func (t *T) diskHeld(where map[string]string, owner string, slot int) error {
	rest := t.C.others(owner)
	lost := servicesOn(where, owner)
	from := t.C.journalLines()
	stop := t.attack(DiskAttack{Hold: []int{slot}, EraseFences: true, Delay: 5 * time.Millisecond})
	t.Fault("held: the attacker holds %s's slot and erases every fence block; %s (running %v) cut off, %v with the arbitrator", owner, owner, lost, rest)
	if err := t.C.Bed.Partition([]string{owner}, append(slices.Clone(rest), "arb")); err != nil {
		return errors.Join(err, stop())
	}
	start := t.lastFault
	errs := []error{t.lostQuorum(owner, splitStopBound), t.takenOver(lost, owner, rest, from, start, "cut with its slot held")}
	t.Fault("heal, the attacker stopped")
	errs = append(errs, stop(), t.C.Bed.Heal(), t.thawLosers([]string{owner}))
	return errors.Join(errs...)
}

// crashHost crashes n's host: its daemon and its services' apps killed,
// its links cut.
func (t *T) crashHost(where map[string]string, n string) error {
	if err := t.C.Nodes[n].Kill9(); err != nil {
		return err
	}
	if err := t.C.killAppsOn(where, n); err != nil {
		return err
	}
	return t.C.Bed.Cut(n)
}

// failedOver waits until each service of lost's is up on one of the
// others (never twice is the audit's), then stops the attack, restores
// lost's links and starts its daemon again.
func (t *T) failedOver(where map[string]string, lost string, stop func() error) error {
	var errs []error
	for _, s := range servicesOn(where, lost) {
		to, err := t.C.upOnlyOn(s, t.C.others(lost), splitBound+t.C.diskFenceExtra())
		if err != nil {
			errs = append(errs, fmt.Errorf("the survivors never took %s over from the crashed %s: %w", s, lost, err))
			continue
		}
		t.Note("%s failed over to %s %s after the crash", s, to, time.Since(t.lastFault).Round(100*time.Millisecond))
	}
	t.Fault("the attacker stopped, %s's links restored and its daemon started", lost)
	errs = append(errs, stop(), t.C.Bed.Restore(lost), t.C.Nodes[lost].StartDaemon())
	return errors.Join(errs...)
}

func (t *T) diskRecorded(where map[string]string, owner string, slot int) error {
	rec := filepath.Join(t.C.Work, fmt.Sprintf("recording-%s-%d", owner, time.Now().UnixNano()))
	defer os.Remove(rec)
	d := 3*time.Second + time.Duration(t.Rand.Int64N(int64(3*time.Second)))
	t.Fault("recorded: the attacker records %s's beats for %s", owner, d.Round(100*time.Millisecond))
	stopRec := t.attack(DiskAttack{Record: rec, RecordSlot: slot})
	time.Sleep(d)
	if err := stopRec(); err != nil {
		return err
	}
	t.Fault("crash of %s's host (running %v), its recording played back into its slot", owner, servicesOn(where, owner))
	if err := t.crashHost(where, owner); err != nil {
		return err
	}
	return t.failedOver(where, owner, t.attack(DiskAttack{Play: rec, PlaySlot: slot, PlayEvery: hbTimeout / 6}))
}

func (t *T) diskStopped(owner string, slot int) error {
	t.Fault("stopped: clean restart of %s's daemon, its \"stopped\" block copied off the disk", owner)
	if err := t.C.Nodes[owner].StopDaemon(); err != nil {
		return err
	}
	f, err := os.Open(t.C.DiskPath())
	if err != nil {
		return err
	}
	stopped := make([]byte, disk.BlockSize)
	_, err = f.ReadAt(stopped, disk.BeatOffset(slot))
	f.Close()
	if err != nil {
		return err
	}
	if err := t.C.Nodes[owner].StartDaemon(); err != nil {
		return err
	}
	where, err := t.where()
	if err != nil {
		return err
	}
	t.Fault("crash of %s's host (running %v), its old \"stopped\" block written back every 200ms", owner, servicesOn(where, owner))
	if err := t.crashHost(where, owner); err != nil {
		return err
	}
	return t.failedOver(where, owner, t.attack(DiskAttack{Replay: map[int64][]byte{disk.BeatOffset(slot): stopped}, ReplayEvery: 200 * time.Millisecond}))
}
