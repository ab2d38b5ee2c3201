package disk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// fakeLiveness records NoteLinkAlive.
type fakeLiveness struct {
	mu    sync.Mutex
	calls map[string]int
}

func (f *fakeLiveness) NoteLinkAlive(peer, link string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[peer+"/"+link]++
}

func (f *fakeLiveness) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

var members = []string{"n3", "n1", "n2"} // sorted by New: n1 slot 0, n2 1, n3 2

const period = 20 * time.Millisecond

func newDisk(t *testing.T, path, node string, run uint64, mod func(*Config)) *Disk {
	t.Helper()
	cfg := Config{Path: path, Node: node, Members: members, Cluster: "prod", Secret: testSecret, Run: run,
		Interval: period, Timeout: 200 * time.Millisecond, Guard: GuardStops}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(StateShutdown) })
	return d
}

// halt stops d as a crash would: no last beat.
func (d *Disk) halt() {
	select {
	case <-d.quit:
	default:
		close(d.quit)
	}
	d.wg.Wait()
}

// within polls cond for up to 5s.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDiskSlotsAndLiveness(t *testing.T) {
	b := newAttackBed(t)
	live := &fakeLiveness{}
	d1 := b.disk("n1", 10, func(c *Config) { c.Liveness = live })
	d2 := b.disk("n2", 20, nil)
	if d1.Slot() != 0 || d2.Slot() != 1 {
		t.Fatalf("slots %d %d, want 0 1 (sorted members)", d1.Slot(), d2.Slot())
	}
	// the first block read is no advance; each later one is
	for range 4 {
		b.period(d1, d2)
	}
	if n := live.count("n2/disk"); n != 3 {
		t.Fatalf("n1 heard n2 on the disk %d times in 4 periods, want 3", n)
	}
	if n := live.count("n3/disk"); n != 0 {
		t.Fatalf("n3 never wrote its slot, yet counted alive %d times", n)
	}
	p, _ := d1.Peer("n2")
	if !p.Seen || p.Run != 20 || p.Counter < 3 {
		t.Fatalf("n2's slot as n1 reads it: %+v", p)
	}
	// n2 crashes: its slot stops advancing, and so do the calls
	for range 10 {
		b.period(d1)
	}
	if m := live.count("n2/disk"); m != 3 {
		t.Fatalf("n2's slot no longer advances, yet counted alive %d more times in 10 periods", m-3)
	}
}

// TestDiskHostileSlots: garbage, another cluster's and a forged block in
// the peers' slots and this node's fence block are logged, never alive,
// never a fence; the disk stays reachable.
func TestDiskHostileSlots(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	live := &fakeLiveness{}
	fenced := make(chan Fence, 1)
	b := newAttackBed(t)
	path := b.path
	d1 := b.disk("n1", 10, func(c *Config) {
		c.Liveness, c.Logger = live, zap.New(core)
		c.OnFenced = func(f Fence) { fenced <- f }
	})
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other := keys(t, "test", testSecret)
	forger := keys(t, "prod", otherSecret)
	garbage := make([]byte, BlockSize)
	for i := range garbage {
		garbage[i] = byte(i * 31)
	}
	for i := uint64(1); i <= 20; i++ {
		f.WriteAt(garbage, BeatOffset(1))                                                                        // n2: garbage
		f.WriteAt(other.EncodeBeat(Beat{Writer: "n3", Slot: 2, Run: 1, Counter: i}), BeatOffset(2))              // n3: other cluster
		f.WriteAt(forger.EncodeFence(Fence{Fencer: "n2", Target: "n1", Slot: 0, TargetRun: 10}), FenceOffset(0)) // forged fence
		f.WriteAt(make([]byte, 100), FenceOffset(2))                                                             // past the slots
		b.period(d1)
	}
	f.Truncate(BeatOffset(1) + 100) // n2's slot truncated, n3's gone
	for range 3 {
		b.period(d1)
	}
	if n := live.count("n2/disk") + live.count("n3/disk"); n != 0 {
		t.Fatalf("hostile slots counted alive %d times", n)
	}
	select {
	case f := <-fenced:
		t.Fatalf("a forged fence was obeyed: %+v", f)
	default:
	}
	if !d1.Reachable() {
		t.Fatal("hostile slots made the disk unreachable")
	}
	for _, want := range []string{"bad magic", "another cluster", "bad checksum", "truncated"} {
		if len(logs.FilterMessageSnippet("disk heartbeat").FilterFieldKey("error").Filter(func(e observer.LoggedEntry) bool {
			return strings.Contains(e.ContextMap()["error"].(string), want)
		}).All()) == 0 {
			t.Errorf("no log line for %q", want)
		}
	}
	// rate-limited: once a minute per slot and kind, not once a period
	if n := logs.FilterMessageSnippet("a peer's slot is unreadable").Len(); n > 4 {
		t.Errorf("%d log lines for the hostile peers' slots in 25 periods: not rate-limited", n)
	}
}

// stuckDevice blocks every read and write while blocked, or fails them.
type stuckDevice struct {
	Device
	mu      sync.Mutex
	blocked chan struct{} // closed: unblocked
	fail    error
}

func (s *stuckDevice) wait() error {
	s.mu.Lock()
	ch, fail := s.blocked, s.fail
	s.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return fail
}

func (s *stuckDevice) ReadAt(p []byte, off int64) (int, error) {
	if err := s.wait(); err != nil {
		return 0, err
	}
	return s.Device.ReadAt(p, off)
}

func (s *stuckDevice) WriteAt(p []byte, off int64) (int, error) {
	if err := s.wait(); err != nil {
		return 0, err
	}
	return s.Device.WriteAt(p, off)
}

// TestDiskBlockingAndFailingDevice: a disk that blocks, then errors, is
// lost after Timeout (OnState), the servant keeps its period, the peer is
// never alive meanwhile, and the disk comes back when the device does.
func TestDiskBlockingAndFailingDevice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hb.disk")
	live := &fakeLiveness{}
	states := make(chan bool, 10)
	stuck := &stuckDevice{}
	d1 := newDisk(t, path, "n1", 10, func(c *Config) {
		c.Liveness = live
		c.OnState = func(ok bool, _ string) { states <- ok }
		c.Open = func(p string) (Device, error) {
			dev, err := OpenFile(p)
			stuck.Device = dev
			return stuck, err
		}
	})
	d2 := newDisk(t, path, "n2", 20, nil)
	d1.Start()
	d2.Start()
	within(t, "n2 alive", func() bool { return live.count("n2/disk") > 0 })
	stuck.mu.Lock()
	stuck.blocked = make(chan struct{})
	stuck.mu.Unlock()
	select {
	case ok := <-states:
		if ok {
			t.Fatal("reachable while blocked")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a blocked disk was not declared lost")
	}
	n := live.count("n2/disk")
	time.Sleep(10 * period)
	if live.count("n2/disk") != n {
		t.Fatal("counted alive through a blocked disk")
	}
	// the blocked I/O returns with EIO, and every later one fails
	stuck.mu.Lock()
	stuck.fail = syscall.EIO
	close(stuck.blocked)
	stuck.blocked = nil
	stuck.mu.Unlock()
	time.Sleep(10 * period)
	if d1.Reachable() || live.count("n2/disk") != n {
		t.Fatal("a failing disk counted reachable or alive")
	}
	stuck.mu.Lock()
	stuck.fail = nil
	stuck.mu.Unlock()
	select {
	case ok := <-states:
		if !ok {
			t.Fatal("lost twice")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the disk did not come back")
	}
	within(t, "n2 alive again", func() bool { return live.count("n2/disk") > n })
}

// TestDiskFenceAcknowledged: n1 fences n2; n2 reads the fence (once),
// acks it after its crash command; n1's Fence returns.
func TestDiskFenceAcknowledged(t *testing.T) {
	b := newAttackBed(t)
	fenced := make(chan Fence, 10)
	d1 := b.disk("n1", 10, nil)
	var d2 *Disk
	d2 = b.disk("n2", 20, func(c *Config) {
		c.OnFenced = func(f Fence) {
			fenced <- f
			d2.Ack() // the crash command returned
		}
	})
	d3 := b.disk("n3", 30, nil)
	for range 3 {
		b.period(d1, d2, d3)
	}
	if p, _ := d1.Peer("n2"); !p.Seen {
		t.Fatal("n1 does not see n2")
	}
	r, ok := fenceEnd(t, b, fence(t, d1, "n2", time.Hour), d1, d2, d3)
	if !ok || r.err != nil || !strings.Contains(r.how, "acknowledged by n2") {
		t.Fatalf("fence ended %+v (ended %v), want acknowledged by n2", r, ok)
	}
	f := <-fenced
	if f.Fencer != "n1" || f.Target != "n2" || f.TargetRun != 20 {
		t.Fatalf("fence read %+v", f)
	}
	// a second fencer of the same run is acknowledged as well, the crash
	// command is not run twice
	r, ok = fenceEnd(t, b, fence(t, d3, "n2", time.Hour), d1, d2, d3)
	if !ok || r.err != nil || !strings.Contains(r.how, "acknowledged") {
		t.Fatalf("second fencer: %+v (ended %v)", r, ok)
	}
	for range 5 {
		b.period(d1, d2, d3)
	}
	select {
	case f := <-fenced:
		t.Fatalf("crash command run twice for one run: %+v", f)
	default:
	}
}

// fenceEnd runs the periods of ds until the fence res ends, for at most
// 20 periods (ok false: not ended).
func fenceEnd(t *testing.T, b *attackBed, res <-chan fenceResult, ds ...*Disk) (fenceResult, bool) {
	t.Helper()
	for range 20 {
		b.period(ds...)
		if r, ok := ended(t, res); ok {
			return r, true
		}
	}
	return fenceResult{}, false
}

// TestDiskFenceStalled: a crashed target never acks; the fence is done
// once its slot has not advanced for the wait. A daemon stopped on
// purpose is not fenced by the disk. A restarted target ignores the fence
// aimed at its earlier run.
func TestDiskFenceStalled(t *testing.T) {
	b := newAttackBed(t)
	d1 := b.disk("n1", 10, nil)
	d2 := b.disk("n2", 20, nil)
	for range 4 {
		b.period(d1, d2)
	}
	if p, _ := d1.Peer("n2"); p.Counter <= 2 {
		t.Fatalf("n2's slot as n1 reads it: %+v", p)
	}
	// n2 crashes (no more rounds of it). The slot stalled for longer than
	// the wait before the fence began: the wait still runs from the
	// fence's start (the target reacts to a lost disk only once it lost
	// the majority too)
	wait := 3 * fakePeriod
	for range 8 {
		b.period(d1)
	}
	t0 := b.clk.Now()
	r, ok := fenceEnd(t, b, fence(t, d1, "n2", wait), d1)
	if !ok || r.err != nil || !strings.Contains(r.how, "has not advanced") {
		t.Fatalf("fence ended %+v (ended %v), want done by the stall", r, ok)
	}
	if el := b.clk.Now().Sub(t0); el < wait {
		t.Fatalf("fence done after %s, before the wait %s", el, wait)
	}
	// n2 restarts: the fence aimed at run 20 is not for run 21
	fenced := make(chan Fence, 1)
	d2b := b.disk("n2", 21, func(c *Config) { c.OnFenced = func(f Fence) { fenced <- f } })
	for range 5 {
		b.period(d1, d2b)
	}
	if p, _ := d1.Peer("n2"); p.Run != 21 {
		t.Fatalf("n2's new run not seen: %+v", p)
	}
	select {
	case f := <-fenced:
		t.Fatalf("a restarted node obeyed the fence of its earlier run: %+v", f)
	default:
	}
	// n2 stops on purpose (its services may run): the disk cannot fence it
	d2b.Close(StateStopped)
	r, ok = fenceEnd(t, b, fence(t, d1, "n2", wait), d1)
	if !ok || r.err == nil || !strings.Contains(r.err.Error(), "stopped on purpose") {
		t.Fatalf("fence of a daemon stopped on purpose: %+v (ended %v)", r, ok)
	}
	// a fence that cannot end in time says why
	d2c := b.disk("n2", 22, nil)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan fenceResult, 1)
	go func() {
		how, err := d1.Fence(ctx, "n2", FenceOpts{Wait: time.Hour})
		res <- fenceResult{how, err}
	}()
	within(t, "the fence registered", func() bool { d1.mu.Lock(); defer d1.mu.Unlock(); return d1.fences["n2"] != nil })
	if r, ok := fenceEnd(t, b, res, d1, d2c); ok {
		t.Fatalf("the fence of a live node that does not ack ended: %+v", r)
	}
	cancel()
	if r := <-res; r.err == nil || !strings.Contains(r.err.Error(), "no acknowledgement") {
		t.Fatalf("fence of a live node that does not ack: %+v", r)
	}
	if _, err := d1.Fence(context.Background(), "n9", FenceOpts{Wait: wait}); err == nil {
		t.Fatal("fence of a non-member")
	}
}

// frozenDevice returns, once frozen, the blocks as they were then: a disk
// that lies (or a host that writes old blocks back).
type frozenDevice struct {
	Device
	mu   sync.Mutex
	snap []byte
}

func (f *frozenDevice) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	snap := f.snap
	f.mu.Unlock()
	if snap == nil {
		return f.Device.ReadAt(p, off)
	}
	return copy(p, snap[min(off, int64(len(snap))):]), nil
}

// TestDiskOwnSlotReadBack: a disk that returns old blocks is lost: this
// node's slot must read back as written (else a fencer would see a stall
// this node never had, or this node a life that is not there).
func TestDiskOwnSlotReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hb.disk")
	states := make(chan bool, 10)
	fd := &frozenDevice{}
	d1 := newDisk(t, path, "n1", 10, func(c *Config) {
		c.OnState = func(ok bool, _ string) { states <- ok }
		c.Open = func(p string) (Device, error) {
			dev, err := OpenFile(p)
			fd.Device = dev
			return fd, err
		}
	})
	d1.Start()
	within(t, "a few rounds", func() bool { d1.mu.Lock(); defer d1.mu.Unlock(); return d1.counter > 3 })
	snap := make([]byte, 6*BlockSize)
	n, _ := fd.Device.ReadAt(snap, 0)
	fd.mu.Lock()
	fd.snap = snap[:n]
	fd.mu.Unlock()
	select {
	case ok := <-states:
		if ok {
			t.Fatal("reachable")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a disk that returns old blocks was not declared lost")
	}
}
