package daemon

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/driver"
	"haven/heartbeat"
	"haven/heartbeat/disk"
	"haven/internal/clock"
)

// TestWatchdogPetsStopWhenTheLoopIsBlocked: the pulse pets the watchdog
// only when the loop runs it: a loop blocked in a handler pets nothing
// however many periods pass, and pets again once it runs. The pulse runs
// on a fake clock: each period passes once the pulse waits on the clock
// (or its request waits behind the blocked loop), so no period is lost to
// a slow machine.
func TestWatchdogPetsStopWhenTheLoopIsBlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watchdog")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wd, err := openWatchdog(path, 0, true) // a file of the tests: records the pets
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	d := &Daemon{ev: make(chan func(), 1024), quit: make(chan struct{}), clk: clk, log: zap.NewNop(),
		node: &config.NodeConfig{}}
	s := &sbd{wd: wd, quit: make(chan struct{}), done: make(chan struct{})}
	d.sbd = s
	loopDone := make(chan struct{})
	go func() { // the loop
		defer close(loopDone)
		for {
			select {
			case f := <-d.ev:
				f()
			case <-d.quit:
				return
			}
		}
	}()
	go d.pulse(s)
	defer func() {
		close(s.quit)
		<-s.done
		close(d.quit)
		<-loopDone
	}()
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	within := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("not within 10s: " + what)
			}
		}
	}
	// periodsUntil lets pulse periods pass until cond holds, each once the
	// pulse waits on the clock (the loop ran its last request)
	periodsUntil := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; ; i++ {
			within(what+", or the pulse waiting on the clock", func() bool { return cond() || clk.Waiting() > 0 })
			if cond() {
				return
			}
			if i == 20 {
				t.Fatal("not within 20 periods: " + what)
			}
			clk.Advance(pulsePeriod)
		}
	}
	periodsUntil("3 pets", func() bool { return size() >= 3 })
	release := make(chan struct{})
	var unblock sync.Once
	defer unblock.Do(func() { close(release) }) // before the loop's end
	blocked := make(chan struct{})
	d.post(func() { close(blocked); <-release }) // a handler that hangs
	<-blocked
	s0 := size()
	// four periods, each once the pulse is at rest: it waits on the
	// clock, or its request waits behind the blocked handler
	for range 4 {
		within("the pulse at rest", func() bool { return clk.Waiting() > 0 || len(d.ev) > 0 })
		clk.Advance(pulsePeriod)
	}
	if s := size(); s != s0 {
		t.Fatalf("%d pets while the loop was blocked", s-s0)
	}
	within("the pulse's request waiting for the loop", func() bool { return len(d.ev) > 0 })
	unblock.Do(func() { close(release) })
	periodsUntil("pets again", func() bool { return size() >= s0+2 })
	if err := wd.disarm(); err != nil {
		t.Fatal(err)
	}
}

// fakeLinkHB is a heartbeat with the links' NoteLinkAlive.
type fakeLinkHB struct {
	heartbeat.Heartbeat
	heard []string
}

func (f *fakeLinkHB) NoteLinkAlive(peer, link string) { f.heard = append(f.heard, peer+"/"+link) }

// TestDiskLivenessGlue: the disk tells a heartbeat that has
// NoteLinkAlive of the slots that advance, unless the disk fences.
func TestDiskLivenessGlue(t *testing.T) {
	hb := &fakeLinkHB{}
	l := diskLiveness(hb, false)
	if l == nil {
		t.Fatal("a heartbeat with NoteLinkAlive is not told")
	}
	l.NoteLinkAlive("n2", disk.LinkName)
	if len(hb.heard) != 1 || hb.heard[0] != "n2/disk" {
		t.Fatalf("heard %v", hb.heard)
	}
	if diskLiveness(hb, true) != nil {
		t.Fatal("a fencing disk keeps peers alive")
	}
	if diskLiveness(nil, false) != nil {
		t.Fatal("no heartbeat (a lone node) got one")
	}
}

// TestDiskFencedMembers: with fence = true, every other member without a
// [stonith.NODE] command is fenced through the disk.
func TestDiskFencedMembers(t *testing.T) {
	n := &config.NodeConfig{Name: "n1", HB: config.HBConfig{Disk: config.HBDiskConfig{Path: "/d", Fence: true}}}
	cl := &config.ClusterConfig{Nodes: []config.Member{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}},
		Stonith: map[string]config.Stonith{"n3": {Node: "n3"}}}
	if got := driver.DiskFenced(n, cl); len(got) != 1 || got[0] != "n2" {
		t.Fatalf("fenced through the disk: %v, want [n2]", got)
	}
	n.HB.Disk.Fence = false
	if got := driver.DiskFenced(n, cl); got != nil {
		t.Fatalf("fence = false: %v", got)
	}
}
