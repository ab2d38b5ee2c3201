package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/heartbeat/disk"
	"haven/test/chaos"
	"haven/test/testbed"
)

// Blocks of the shared disk copied and written back by a host without the
// secret (docs/security.md, "Can write the shared disk, lacks the
// secret"), with real daemons and an attacker process writing the file.

// diskReplayBed is a 3-node bed with quorum on, [hb.disk] on a file of the
// host (fence as given, hb.disk.timeout 2s), split_action stop, and a
// crash command that appends the node's name to the file crashed of the
// work directory, then runs then ("" none).
func diskReplayBed(t *testing.T, fence bool, then string) (q *quorumBed, diskFile string) {
	t.Helper()
	diskFile = filepath.Join(t.TempDir(), "hb.disk")
	q = newQuorumBedWith(t, []string{"n1", "n2", "n3"}, func(w, name string) string {
		crash := fmt.Sprintf("echo %s >> %s/crashed", name, w)
		if then != "" {
			crash += "; " + then
		}
		return diskNodeKeys("stop", crash, diskFile, fence, "2s")
	}, nil, nil, 1)
	return q, diskFile
}

// readBlock reads the block at off of the disk file (nil when short).
func readBlock(t *testing.T, path string, off int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, disk.BlockSize)
	if n, _ := f.ReadAt(b, off); n < disk.BlockSize {
		return nil
	}
	return b
}

// pauseIdleN1 puts web on n2 (n3, then n1, after it) and pauses n1's
// daemon (SIGSTOP), which runs no service; resume sends SIGCONT (at the
// end of the test at the latest).
func pauseIdleN1(q *quorumBed) (resume func()) {
	q.t.Helper()
	c := q.nodes
	createService(q.t, c["n1"], "web", q.service("n2", "n3", "n1"))
	q.waitFor(30*time.Second, "web up on n2 only", upOnlyOn(c["n1"], "web", "n2"))
	pid := testbed.DaemonPID(c["n1"].root)
	q.ok(syscall.Kill(pid, syscall.SIGSTOP))
	var once sync.Once
	resume = func() { once.Do(func() { syscall.Kill(pid, syscall.SIGCONT) }) }
	q.t.Cleanup(resume)
	return resume
}

// TestNetnsDiskSavedFenceNeverCrashesAHealthyNode: n1 (running no
// service) is paused past hb.timeout; n2 and n3 fence it through the
// disk, and the fence is done by the stall of its slot. Meanwhile the
// attacker copies n1's fence block and the fencers' beats announcing the
// fence. n1 wakes (it lost the quorum: stopped, frozen, thawed as an admin
// does): the cluster healed. The attacker then writes the copies back
// every 100 ms for 15 s: n1 never obeys them (no crash command, no freeze,
// nothing moves), a fence being obeyed only while its fencer's own beat
// announces it now.
func TestNetnsDiskSavedFenceNeverCrashesAHealthyNode(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q, diskFile := diskReplayBed(t, true, "")
	c := q.nodes
	resume := pauseIdleN1(q)
	saved := map[int64][]byte{}
	q.waitFor(60*time.Second, "a survivor counts n1 fenced, its fence copied off the disk", func() bool {
		if f := readBlock(t, diskFile, disk.FenceOffset(0)); f != nil && !bytes.Equal(f, make([]byte, disk.BlockSize)) {
			saved[disk.FenceOffset(0)] = f
			for _, s := range []int{1, 2} {
				saved[disk.BeatOffset(s)] = readBlock(t, diskFile, disk.BeatOffset(s))
			}
		}
		return strings.Contains(nodeLog(t, c["n2"])+nodeLog(t, c["n3"]), "fenced n1")
	})
	if len(saved) != 3 {
		t.Fatal("n1's fence block was never seen on the disk")
	}
	time.Sleep(time.Second) // the fencers' next beats announce no fence
	resume()
	q.waitFor(30*time.Second, "n1 stopped by the lost quorum and frozen", func() bool { return frozen(c["n1"]) })
	c["n1"].must("nodemgr", "thaw")
	q.converge([]string{"n1", "n2", "n3"}, 30*time.Second)
	q.waitFor(10*time.Second, "n1 thawed", func() bool { return !frozen(c["n1"]) })
	from := uptime(t)
	logBefore := len(nodeLog(t, c["n1"]))
	startDiskAttacker(t, chaos.DiskAttack{Path: diskFile, Slots: 3, Replay: saved, ReplayEvery: 100 * time.Millisecond})
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if l := nodeLog(t, c["n1"])[logBefore:]; strings.Contains(l, "fenced through the disk by") {
			t.Fatalf("n1 obeyed a fence written back after the cluster healed:\n%s", l)
		}
		if frozen(c["n1"]) {
			t.Fatal("n1 froze while the saved fence was written back")
		}
	}
	if b, _ := os.ReadFile(filepath.Join(q.work, "crashed")); strings.Contains(string(b), "n1") {
		t.Fatalf("n1 ran its crash command: %q", b)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		for _, k := range []string{"start", "stop"} {
			if e, ok := q.first(n, k, from); ok {
				t.Fatalf("%s: web %s at %.1f while the saved fence was written back: nothing may move", n, k, e.T-from)
			}
		}
	}
	if !strings.Contains(nodeLog(t, c["n1"])[logBefore:], "older block") {
		t.Fatal("n1 did not log the fencers' beats written back as older than the newest read")
	}
}

// TestNetnsDiskRecordedBlocksNeverShowADeadNodeUp: the disk is one more
// heartbeat link (fence = false). The attacker records n3's beat blocks
// for 8 s; n3's host dies (its daemon killed, its links cut), n1 and n2
// restart their daemons (new runs), and the attacker plays the recording
// back into n3's slot, in order, one block a beat period, for 15 s: n1
// and n2 never show n3 up, its disk slot never alive, its disk link never
// up, a block that does not echo the reader's present run proving nothing.
func TestNetnsDiskRecordedBlocksNeverShowADeadNodeUp(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q, diskFile := diskReplayBed(t, false, "")
	c := q.nodes
	q.waitFor(20*time.Second, "n1 hears n3 on the disk link", func() bool {
		for _, l := range c["n1"].status().Heartbeat["n3"].Links {
			if l.Name == disk.LinkName && l.Up {
				return true
			}
		}
		return false
	})
	rec := filepath.Join(q.work, "n3.rec")
	recorder := startDiskAttacker(t, chaos.DiskAttack{Path: diskFile, Slots: 3, Record: rec, RecordSlot: 2})
	time.Sleep(8 * time.Second)
	recorder()
	st, err := os.Stat(rec)
	q.ok(err)
	if st.Size() < 8*disk.BlockSize {
		t.Fatalf("recorded %d blocks of n3 in 8s", st.Size()/disk.BlockSize)
	}
	// n3's host dies
	q.cut("n3")
	q.ok(syscall.Kill(testbed.DaemonPID(c["n3"].root), syscall.SIGKILL))
	for _, n := range []string{"n1", "n2"} {
		c[n].must("nodemgr", "daemon", "stop")
		q.waitFor(20*time.Second, n+"'s daemon stopped", func() bool { return testbed.DaemonPID(c[n].root) == 0 })
		q.startDaemon(n)
	}
	q.waitFor(30*time.Second, "n1 and n2 see each other up, n3 down", func() bool {
		a, b := c["n1"].status(), c["n2"].status()
		return a.Nodes["n2"].Status == dataset.NodeUp && b.Nodes["n1"].Status == dataset.NodeUp &&
			a.Nodes["n3"].Status != dataset.NodeUp && b.Nodes["n3"].Status != dataset.NodeUp
	})
	startDiskAttacker(t, chaos.DiskAttack{Path: diskFile, Slots: 3, Play: rec, PlaySlot: 2, PlayEvery: 500 * time.Millisecond})
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, n := range []string{"n1", "n2"} {
			st := c[n].status()
			if s := st.Nodes["n3"].Status; s == dataset.NodeUp {
				t.Fatalf("%s shows the dead n3 up from its recorded blocks", n)
			}
			if st.Disk != nil && st.Disk.Slots["n3"].Alive {
				t.Fatalf("%s shows n3's disk slot alive from its recorded blocks", n)
			}
			for _, l := range st.Heartbeat["n3"].Links {
				if l.Name == disk.LinkName && l.Up {
					t.Fatalf("%s shows n3's disk link up from its recorded blocks", n)
				}
			}
		}
	}
}

// announcedFences returns the fences announced in the beats of the
// members of slots, read from the disk file with the cluster's secret (the
// test reads what the daemons wrote).
func announcedFences(t *testing.T, n *node, path string, slots ...int) []disk.Announce {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.root, "etc", "cluster.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var secret string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "secret = "); ok {
			secret = strings.Trim(v, `"`)
		}
	}
	k, err := disk.NewKeys("netns", secret)
	if err != nil {
		t.Fatal(err)
	}
	var out []disk.Announce
	for _, s := range slots {
		if bt, err := k.DecodeBeat(readBlock(t, path, disk.BeatOffset(s)), s); err == nil {
			out = append(out, bt.Fences...)
		}
	}
	return out
}

// TestNetnsDiskFenceAbandonedWhenTheNodeIsBack: n1 (running no service)
// is paused past hb.timeout: n2 and n3 declare it down and fence it
// through the disk. It wakes before the fence's wait ended (lost quorum,
// it stops and freezes) and reads the fence, whose crash command hangs
// (it acknowledges nothing). Once n2 and n3 hear n1 again they abandon
// their fences, nothing waiting for them any more: within 2 s their beats
// announce none (they did until the fence's time ran out, 16 s after its
// start), so that an admin's thaw holds: n1 obeys no fence after it.
func TestNetnsDiskFenceAbandonedWhenTheNodeIsBack(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q, diskFile := diskReplayBed(t, true, "sleep 30")
	c := q.nodes
	resume := pauseIdleN1(q)
	q.waitFor(20*time.Second, "a survivor announces the fence of n1", func() bool { return len(announcedFences(t, c["n2"], diskFile, 1, 2)) > 0 })
	resume()
	q.waitFor(20*time.Second, "n2 and n3 hear n1 again", func() bool {
		return peerStatus(c["n2"], "n1") == dataset.NodeUp && peerStatus(c["n3"], "n1") == dataset.NodeUp
	})
	back := time.Now()
	q.waitFor(10*time.Second, "n2's and n3's beats announce no fence", func() bool { return len(announcedFences(t, c["n2"], diskFile, 1, 2)) == 0 })
	t.Logf("n2's and n3's beats announce no fence %.1fs after both heard n1 again", time.Since(back).Seconds())
	if time.Since(back) > 2*time.Second {
		t.Fatalf("the fences of n1 were still announced %.1fs after n2 and n3 heard it again", time.Since(back).Seconds())
	}
	q.waitFor(20*time.Second, "n1 frozen (lost quorum, or fenced)", func() bool { return frozen(c["n1"]) })
	c["n1"].must("nodemgr", "thaw")
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if len(announcedFences(t, c["n2"], diskFile, 1, 2)) > 0 {
			t.Fatal("a fence of n1 announced again while n2 and n3 hear it")
		}
		if !strings.Contains(nodeLog(t, c["n2"])+nodeLog(t, c["n3"]), "disk fence abandoned") {
			t.Fatal("no survivor says it abandoned its fence of n1")
		}
	}
	if frozen(c["n1"]) {
		t.Fatal("n1 frozen again after its thaw")
	}
}
