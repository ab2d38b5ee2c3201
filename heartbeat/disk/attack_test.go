package disk

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"haven/internal/clock"
)

// A host that can read and write the shared disk but lacks the cluster
// secret: it copies blocks, writes them back later, erases them. The
// tests below drive the servants' rounds by hand on a fake clock
// (writeRound, then readRound: the servant reads at a random time within
// the period, so the attacker's writes land between a node's write and
// its read), with the attacker acting in between.

const fakePeriod = 500 * time.Millisecond

type attackBed struct {
	t    *testing.T
	clk  *clock.Fake
	path string
	f    *os.File // the attacker's own descriptor
}

func newAttackBed(t *testing.T) *attackBed {
	path := filepath.Join(t.TempDir(), "hb.disk")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &attackBed{t: t, clk: clock.NewFake(time.Unix(1_700_000_000, 0)), path: path, f: f}
}

// disk is a node's servant on the bed's clock, its rounds driven by the
// test.
func (b *attackBed) disk(node string, run uint64, mod func(*Config)) *Disk {
	b.t.Helper()
	d := newDisk(b.t, b.path, node, run, func(c *Config) {
		c.Clock, c.Interval, c.Timeout = b.clk, fakePeriod, 2*time.Second
		if mod != nil {
			mod(c)
		}
	})
	d.begin()
	return d
}

// period runs one period of every disk: all write, all read, then the
// clock moves on.
func (b *attackBed) period(ds ...*Disk) {
	for _, d := range ds {
		d.writeRound()
	}
	for _, d := range ds {
		d.readRound()
	}
	b.clk.Advance(fakePeriod)
}

// stoppedRun runs n2's run 19 beside d1 for periods, then stops its
// daemon on purpose, and returns the "stopped" block it wrote last.
func (b *attackBed) stoppedRun(d1 *Disk, periods int) []byte {
	old := b.disk("n2", 19, nil)
	for range periods {
		b.period(d1, old)
	}
	old.Close(StateStopped)
	return b.copyBlock(BeatOffset(1))
}

// copyBlock returns the block at off as it is now.
func (b *attackBed) copyBlock(off int64) []byte {
	buf := make([]byte, BlockSize)
	if _, err := b.f.ReadAt(buf, off); err != nil {
		b.t.Fatal(err)
	}
	return buf
}

func (b *attackBed) write(block []byte, off int64) {
	if _, err := b.f.WriteAt(block, off); err != nil {
		b.t.Fatal(err)
	}
}

// eraseFences zeroes every fence block.
func (b *attackBed) eraseFences(slots int) {
	for i := range slots {
		b.write(make([]byte, BlockSize), FenceOffset(i))
	}
}

type fenceResult struct {
	how string
	err error
}

// fence starts d.Fence(target) and returns once the fence is registered.
func fence(t *testing.T, d *Disk, target string, wait time.Duration) <-chan fenceResult {
	t.Helper()
	return fenceWith(t, d, target, FenceOpts{Wait: wait})
}

// fenceWith is fence with all the terms.
func fenceWith(t *testing.T, d *Disk, target string, o FenceOpts) <-chan fenceResult {
	t.Helper()
	ch := make(chan fenceResult, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		how, err := d.Fence(ctx, target, o)
		ch <- fenceResult{how, err}
	}()
	within(t, "the fence registered", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.fences[target] != nil
	})
	return ch
}

// ended waits for the end of a fence (the rounds run in this goroutine:
// the fence has ended once a round ended it, or not at all).
func ended(t *testing.T, ch <-chan fenceResult) (fenceResult, bool) {
	t.Helper()
	select {
	case r := <-ch:
		return r, true
	case <-time.After(50 * time.Millisecond):
		return fenceResult{}, false
	}
}

// TestDiskHeldSlotNeverFencesALiveNode: the link between n1 and n2 is cut
// and n1 fences n2. The attacker erases every fence block, and writes an
// old block of n2 back into n2's slot after each of n2's writes, so that
// n1 reads a slot that does not advance. n2 still learns the fence (n1's
// own beat announces it) and obeys; and n2, reading its slot back after
// the attacker's write, counts its disk lost at once (someone rewrites
// its slot) and keeps it lost while the attack goes on.
func TestDiskHeldSlotNeverFencesALiveNode(t *testing.T) {
	b := newAttackBed(t)
	var mu sync.Mutex
	var obeyed []Fence
	var states []bool
	var reasons []string
	d1 := b.disk("n1", 10, nil)
	d2 := b.disk("n2", 20, func(c *Config) {
		c.OnFenced = func(f Fence) { mu.Lock(); obeyed = append(obeyed, f); mu.Unlock() }
		c.OnState = func(ok bool, why string) {
			mu.Lock()
			states, reasons = append(states, ok), append(reasons, why)
			mu.Unlock()
		}
	})
	for range 6 {
		b.period(d1, d2)
	}
	if p, _ := d1.Peer("n2"); p.LastAdvance.IsZero() {
		t.Fatalf("n1 never saw n2's slot advance: %+v", p)
	}
	held := b.copyBlock(BeatOffset(1))
	res := fence(t, d1, "n2", 4*time.Second)
	for range 20 {
		d1.writeRound()
		d2.writeRound()
		b.eraseFences(3)
		b.write(held, BeatOffset(1))
		d1.readRound()
		d2.readRound()
		b.clk.Advance(fakePeriod)
	}
	snap := func() ([]Fence, []bool, []string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(obeyed), slices.Clone(states), slices.Clone(reasons)
	}
	ob, st, why := snap()
	if len(ob) != 1 || ob[0].Fencer != "n1" || ob[0].TargetRun != 20 {
		t.Fatalf("n2 obeyed %+v: want the fence announced in n1's beat, once, although every fence block was erased", ob)
	}
	if len(st) != 1 || st[0] || !strings.Contains(why[0], "rewritten by someone else") {
		t.Fatalf("n2's disk states %v %q: want lost once, because its slot was rewritten", st, why)
	}
	if d2.Reachable() {
		t.Fatal("n2 counts its disk reachable while its slot is rewritten")
	}
	// n2 never acknowledged (its crash command did not return here): the
	// fence may end by the stall only, n2 having counted its disk lost
	// (its split_action then stops it)
	if r, ok := ended(t, res); ok && strings.Contains(r.how, "acknowledged") {
		t.Fatalf("fence ended %+v without an acknowledgement", r)
	}
	// the attack stops: n2's slot advances again, and its disk is back
	// once hb.disk.timeout passed without a rewrite
	for range 8 {
		b.period(d1, d2)
	}
	if _, st, _ = snap(); !d2.Reachable() || len(st) != 2 || !st[1] {
		t.Fatalf("n2's disk states %v after the attack: want reachable again", st)
	}
}

// TestDiskAckBoundToNonce: a block of the target acknowledging another
// fence (another fencer's, or an earlier one's) does not end this fence;
// the target's acknowledgement of this nonce does.
func TestDiskAckBoundToNonce(t *testing.T) {
	b := newAttackBed(t)
	d1 := b.disk("n1", 10, nil)
	var d2 *Disk
	fenced := make(chan Fence, 4)
	d2 = b.disk("n2", 20, func(c *Config) { c.OnFenced = func(f Fence) { fenced <- f } })
	for range 4 {
		b.period(d1, d2)
	}
	res := fence(t, d1, "n2", time.Hour)
	// n2's next beat acknowledges a fence of n1 with another nonce (the
	// test writes it with the key, as a member would)
	b.period(d1, d2)
	d2.mu.Lock()
	d2.fencesIn[0] = [NonceLen]byte{9, 9, 9}
	d2.acked = true
	d2.obeyed = true
	d2.mu.Unlock()
	for range 4 {
		d1.writeRound()
		d2.writeRound()
		d1.readRound()
		b.clk.Advance(fakePeriod)
	}
	if r, ok := ended(t, res); ok {
		t.Fatalf("the fence ended on an acknowledgement of another nonce: %+v", r)
	}
	d2.mu.Lock()
	d2.acked, d2.obeyed = false, false
	delete(d2.fencesIn, 0)
	d2.mu.Unlock()
	b.period(d1, d2) // n2 reads the announcement
	select {
	case f := <-fenced:
		d2.Ack()
		if f.Fencer != "n1" {
			t.Fatalf("fence %+v", f)
		}
	default:
		t.Fatal("n2 did not read the fence announced in n1's beat")
	}
	b.period(d1, d2)
	b.period(d1, d2)
	r, ok := ended(t, res)
	if !ok || r.err != nil || !strings.Contains(r.how, "acknowledged by n2") {
		t.Fatalf("fence %+v (ended %v): want acknowledged by n2", r, ok)
	}
}

// TestDiskReplayedStoppedBlockCountsForNothing: the block n2 wrote at a
// clean stop of an earlier run, written back into its slot once its host
// died, neither blocks the fence ("stopped on purpose") nor counts as
// life: the fence ends by the stall.
func TestDiskReplayedStoppedBlockCountsForNothing(t *testing.T) {
	b := newAttackBed(t)
	d1 := b.disk("n1", 10, nil)
	stopped := b.stoppedRun(d1, 3)
	d2 := b.disk("n2", 20, nil)
	for range 4 {
		b.period(d1, d2)
	}
	// n2's host dies; the attacker writes the old "stopped" block back
	b.write(stopped, BeatOffset(1))
	res := fence(t, d1, "n2", 3*time.Second)
	var r fenceResult
	var ok bool
	for i := 0; i < 20 && !ok; i++ {
		b.period(d1)
		r, ok = ended(t, res)
	}
	if !ok || r.err != nil || !strings.Contains(r.how, "has not advanced") {
		t.Fatalf("fence %+v (ended %v): want done by the stall, the replayed block counting for nothing", r, ok)
	}
	if p, _ := d1.Peer("n2"); p.Run != 20 || !strings.Contains(p.Err, "older block") {
		t.Fatalf("n2's slot as n1 reads it: %+v", p)
	}
}

// TestDiskSavedFenceNotObeyed: a fence of n2's run, done by the stall
// while n2 did not read the disk, is copied off the disk with n1's beat
// announcing it; after the cluster healed both are written back: n2 obeys
// neither (n1's beat is no longer announcing it, the copy echoes an old
// block of n2), and the record of the fence was cleared at its end.
func TestDiskSavedFenceNotObeyed(t *testing.T) {
	b := newAttackBed(t)
	d1 := b.disk("n1", 10, nil)
	fenced := make(chan Fence, 4)
	d2 := b.disk("n2", 20, func(c *Config) { c.OnFenced = func(f Fence) { fenced <- f } })
	for range 4 {
		b.period(d1, d2)
	}
	// n2 does not run (paused): n1 fences it, done by the stall
	res := fence(t, d1, "n2", 2*time.Second)
	var savedBeat, savedFence []byte
	var r fenceResult
	var ok bool
	for i := 0; i < 20 && !ok; i++ {
		b.period(d1)
		if savedFence == nil {
			if f := b.copyBlock(FenceOffset(1)); !allZero(f) {
				savedBeat, savedFence = b.copyBlock(BeatOffset(0)), f
			}
		}
		r, ok = ended(t, res)
	}
	if !ok || !strings.Contains(r.how, "has not advanced") || savedFence == nil {
		t.Fatalf("fence %+v (ended %v, record saved %v)", r, ok, savedFence != nil)
	}
	b.period(d1)
	if !allZero(b.copyBlock(FenceOffset(1))) {
		t.Fatal("the record of the fence was not cleared at its end")
	}
	// n2 runs again (the cluster healed) for a while; then the copies are
	// written back, before and after n2's reads
	for range 10 {
		b.period(d1, d2)
	}
	for range 10 {
		d1.writeRound()
		d2.writeRound()
		b.write(savedBeat, BeatOffset(0))
		b.write(savedFence, FenceOffset(1))
		d1.readRound()
		d2.readRound()
		b.clk.Advance(fakePeriod)
	}
	select {
	case f := <-fenced:
		t.Fatalf("n2 obeyed a fence written back after it ended: %+v", f)
	default:
	}
	// n2 paused from before the fence until after it, the copy of n1's
	// beat being the first n2 reads: it echoes an old block of n2
	d2.mu.Lock()
	d2.peers["n1"].count = 1 // n2's view of n1 from long ago
	d2.mu.Unlock()
	b.write(savedBeat, BeatOffset(0))
	d2.readRound()
	select {
	case f := <-fenced:
		t.Fatalf("n2 obeyed a fence announced in a recorded beat of n1: %+v", f)
	default:
	}
}

// TestDiskRecordedBlocksNeverAlive: the attacker records n2's blocks,
// n2's host dies and n1 restarts; the recording played back in order,
// one block a period, never makes n2 alive on the disk.
func TestDiskRecordedBlocksNeverAlive(t *testing.T) {
	b := newAttackBed(t)
	d1 := b.disk("n1", 10, nil)
	d2 := b.disk("n2", 20, nil)
	var rec [][]byte
	for range 12 {
		b.period(d1, d2)
		rec = append(rec, b.copyBlock(BeatOffset(1)))
	}
	d1.halt()
	live := &fakeLiveness{}
	d1b := b.disk("n1", 11, func(c *Config) { c.Liveness = live })
	for _, blk := range rec {
		b.write(blk, BeatOffset(1))
		b.period(d1b)
	}
	if n := live.count("n2/disk"); n != 0 {
		t.Fatalf("n2 counted alive %d times from a recording", n)
	}
	if p, _ := d1b.Peer("n2"); !p.LastAdvance.IsZero() {
		t.Fatalf("n2's slot advanced from a recording: %+v", p)
	}
	// the real n2 (a new run) is alive at once
	d2b := b.disk("n2", 21, nil)
	for range 4 {
		b.period(d1b, d2b)
	}
	if live.count("n2/disk") == 0 {
		t.Fatal("the real n2 is not alive")
	}
}

// TestDiskFencerDoubtsWhileItsSlotIsRewritten: n1 fences a dead n2, but
// someone rewrites n1's own slot: n1 counts its disk lost and no stall
// while it is (what it reads may be a lie), and the stall counts again
// from the end of the doubt.
func TestDiskFencerDoubtsWhileItsSlotIsRewritten(t *testing.T) {
	b := newAttackBed(t)
	core, logs := observer.New(zap.WarnLevel)
	d1 := b.disk("n1", 10, func(c *Config) { c.Logger = zap.New(core) })
	d2 := b.disk("n2", 20, nil)
	for range 4 {
		b.period(d1, d2)
	}
	old := b.copyBlock(BeatOffset(0))
	d2.halt()
	res := fence(t, d1, "n2", 3*time.Second)
	for range 20 {
		d1.writeRound()
		b.write(old, BeatOffset(0))
		d1.readRound()
		b.clk.Advance(fakePeriod)
	}
	if r, ok := ended(t, res); ok {
		t.Fatalf("the fence ended while n1's own slot was rewritten: %+v", r)
	}
	if d1.Reachable() {
		t.Fatal("n1 counts its disk reachable while its slot is rewritten")
	}
	if logs.FilterMessageSnippet("does not read back").Len() == 0 {
		t.Fatal("no log of the rewritten slot")
	}
	var r fenceResult
	var ok bool
	for i := 0; i < 30 && !ok; i++ {
		b.period(d1)
		r, ok = ended(t, res)
	}
	if !ok || !strings.Contains(r.how, "has not advanced") {
		t.Fatalf("fence %+v (ended %v) after the attack", r, ok)
	}
}
