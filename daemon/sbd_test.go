package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/heartbeat"
	"haven/heartbeat/disk"
	"haven/internal/clock"
	"haven/node/driver"
)

// TestWatchdogPetsStopWhenTheLoopIsBlocked: the pulse pets the watchdog
// only when the loop runs it: a loop blocked in a handler pets nothing,
// and pets again once it runs.
func TestWatchdogPetsStopWhenTheLoopIsBlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watchdog")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wd, err := openWatchdog(path, 0, true) // a file of the tests: records the pets
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{ev: make(chan func(), 1024), quit: make(chan struct{}), clk: clock.Real{}, log: zap.NewNop(),
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
	within("3 pets", func() bool { return size() >= 3 })
	release := make(chan struct{})
	blocked := make(chan struct{})
	d.post(func() { close(blocked); <-release }) // a handler that hangs
	<-blocked
	s0 := size()
	time.Sleep(4 * pulsePeriod)
	if s := size(); s != s0 {
		close(release)
		t.Fatalf("%d pets while the loop was blocked", s-s0)
	}
	close(release)
	within("pets again", func() bool { return size() >= s0+2 })
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
