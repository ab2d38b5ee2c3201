package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"haven/heartbeat/disk"
	"haven/test/chaos"
	"haven/test/testbed"
)

// diskNodeKeys are the node.toml keys of a node of the disk tests: its
// split_action and crash_command, and [hb.disk] on path.
func diskNodeKeys(split, crash, path string, fence bool, timeout string) string {
	return fmt.Sprintf("split_action = %q\ncrash_command = %q\n\n[hb.disk]\npath = %q\nfence = %v\ntimeout = %q\n", split, crash, path, fence, timeout)
}

// diskBed3 is a 3-node bed with quorum on, the disk fencing (a file of
// the host, hb.disk.timeout 2s), each node's split_action split and crash
// command crash(the bed's work directory), and web up on n1 only.
func diskBed3(t *testing.T, split string, crash func(work string) string) (q *quorumBed, diskFile string) {
	t.Helper()
	diskFile = filepath.Join(t.TempDir(), "hb.disk")
	q = newQuorumBedWith(t, []string{"n1", "n2", "n3"}, func(w, _ string) string {
		return diskNodeKeys(split, crash(w), diskFile, true, "2s")
	}, nil, nil, 1)
	createService(t, q.nodes["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(q.nodes["n2"], "web", "n1"))
	return q, diskFile
}

// diskFIFOBed3 is a 3-node bed with quorum on and the disk fencing
// (hb.disk.timeout 1s), each node's split_action split and crash command
// `touch WORK/crashed`, cluster.toml's extra sections clusterExtra (nil:
// none) with hosts added to the bed; n1's [hb.disk] path is a FIFO (every
// I/O fails: it can neither read nor write the disk), the others share a
// file.
func diskFIFOBed3(t *testing.T, split string, clusterExtra func(*chaos.Bed) string, hosts map[string]string) *quorumBed {
	t.Helper()
	dir := t.TempDir()
	diskFile, fifo := filepath.Join(dir, "hb.disk"), filepath.Join(dir, "hb.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return newQuorumBedWith(t, []string{"n1", "n2", "n3"}, func(w, name string) string {
		path := diskFile
		if name == "n1" {
			path = fifo
		}
		return diskNodeKeys(split, "touch "+w+"/crashed", path, true, "1s")
	}, clusterExtra, hosts, 1)
}

// survivorStarts waits until n2 or n3 starts web after cut (the
// journal's clock).
func (q *quorumBed) survivorStarts(within time.Duration, cut float64) {
	q.t.Helper()
	q.waitFor(within, "a survivor starts web", func() bool {
		_, a := q.first("n2", "start", cut)
		_, b := q.first("n3", "start", cut)
		return a || b
	})
}

// n1HostDies kills n1's host: its links cut, its daemon killed, its web
// app stopped. It returns when it began (the journal's clock).
func (q *quorumBed) n1HostDies() (cut float64) {
	q.t.Helper()
	cut = uptime(q.t)
	q.cut("n1")
	if pid := testbed.DaemonPID(q.nodes["n1"].root); pid > 0 {
		q.ok(syscall.Kill(pid, syscall.SIGKILL))
	}
	vars, err := os.ReadFile(filepath.Join(q.work, "var-n1"))
	q.ok(err)
	if out, err := exec.Command(filepath.Join(q.work, "stop.sh"), "web", "n1", strings.TrimSpace(string(vars))).CombinedOutput(); err != nil {
		q.t.Fatalf("stop n1's app: %v: %s", err, out)
	}
	return cut
}

// TestNetnsDiskFence: 3 nodes with quorum, a disk heartbeat on a file of
// the host shared by the namespaces, fence = true, no [stonith] command,
// split_action disabled (only the fence stops the owner). Every network
// link of the owner n1 is cut: the survivors fence it through the disk,
// n1 reads the fence in its slot and runs its (harmless) crash command,
// which stops its app; its slot acknowledges the fence; the survivors take
// over after it, and the external journal shows no overlap.
func TestNetnsDiskFence(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	// the crash command stops the app where it runs (n1's: the survivors
	// never run it) and says it ran
	q, _ := diskBed3(t, "disabled", func(w string) string {
		return fmt.Sprintf(`touch %s/crashed; for v in %s/var-*; do %s/stop.sh web ${v##*/var-} $(cat $v); done`, w, w, w)
	})
	c, work := q.nodes, q.work
	// the disk shows in the status object, svcmon and the daemon status
	q.waitFor(20*time.Second, "n2 shows the fencing disk reachable and n1's slot alive", func() bool {
		dk := c["n2"].status().Disk
		return dk != nil && dk.Fence && dk.Reachable && dk.Slots["n1"].Alive && dk.Slots["n3"].Alive
	})
	if out := c["n2"].must("svcmon"); !strings.Contains(out, "disk (fence)") || !strings.Contains(out, "slot ") {
		t.Fatalf("svcmon shows no disk row:\n%s", out)
	}
	if out := c["n2"].must("nodemgr", "daemon", "status"); !strings.Contains(out, "the fencing device") || !strings.Contains(out, "slot n1") {
		t.Fatalf("nodemgr daemon status shows no disk:\n%s", out)
	}
	cut := uptime(t)
	q.cut("n1")
	q.waitFor(40*time.Second, "n1 runs its crash command (fenced through the disk)", func() bool {
		_, err := os.Stat(filepath.Join(work, "crashed"))
		return err == nil
	})
	q.survivorStarts(40*time.Second, cut)
	q.noOverlap()
	stop, ok := q.first("n1", "stop", cut)
	if !ok {
		q.dump()
		t.Fatal("n1 never stopped web: the takeover did not wait for the fence")
	}
	for _, n := range []string{"n2", "n3"} {
		if s, ok := q.first(n, "start", cut); ok {
			t.Logf("n1 stopped web %.1fs after the cut, %s started it %.1fs after the cut", stop.T-cut, n, s.T-cut)
		}
		if s, ok := q.first(n, "start", cut); ok && s.T < stop.T {
			t.Fatalf("%s started web at %.2f, before n1's stop at %.2f", n, s.T, stop.T)
		}
	}
	log2, log3 := nodeLog(t, c["n2"]), nodeLog(t, c["n3"])
	if !strings.Contains(log2+log3, "acknowledged by n1") {
		q.dump()
		t.Fatal("no survivor's log says n1's slot acknowledged the fence")
	}
	if !strings.Contains(log2+log3, "fenced n1") {
		t.Fatal("no survivor's log says n1 was fenced")
	}
	if l := nodeLog(t, c["n1"]); !strings.Contains(l, "fenced through the disk by n") {
		t.Fatalf("n1's log does not say it was fenced through the disk:\n%s", l)
	}
	if !frozen(c["n1"]) {
		t.Fatal("n1 is not frozen after its fence")
	}
}

// TestWatchdogPets: node.watchdog_device names a regular file: refused
// (exit 2, naming the file, line and key); in the tests' mode
// (HAVEN_WATCHDOG_FILE=1) the file records the pets (one byte each): the
// daemon pets it while its loop runs, never
// while it is paused (SIGSTOP), again after SIGCONT, and writes the magic
// "V" at a clean stop.
func TestWatchdogPets(t *testing.T) {
	t.Parallel()
	wd := filepath.Join(t.TempDir(), "watchdog")
	writeFile(t, wd, "")
	n := newNode(t, "n1", testbed.NodeToml{Name: "n1", Keys: []string{`monitor_interval = "300ms"`, fmt.Sprintf("watchdog_device = %q", wd)}}.String())
	if r := n.run("nodemgr", "daemon", "start"); r.Code != 2 || !strings.Contains(r.Err, "not a watchdog device (a regular file") || !strings.Contains(r.Err, "etc/node.toml:4: node.watchdog_device: ") {
		t.Fatalf("a regular file as the watchdog: %s, want refused (exit 2)", r)
	}
	// HAVEN_WATCHDOG_FILE=1: the tests' mode, a regular file records the
	// pets (no watchdog driver on the test hosts)
	r, err := testbed.Command{Bin: filepath.Join(binDir, "nodemgr"), Root: n.root, Args: []string{"daemon", "start"}, Env: []string{"HAVEN_WATCHDOG_FILE=1"}}.Run()
	if err != nil || r.Code != 0 {
		t.Fatalf("daemon start in the tests' mode: %v %s", err, r)
	}
	size := func() int64 {
		st, err := os.Stat(wd)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	waitFor(t, 10*time.Second, "3 pets", func() bool { return size() >= 3 })
	pid := testbed.DaemonPID(n.root)
	if pid == 0 {
		t.Fatal("no daemon pid")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	time.Sleep(200 * time.Millisecond) // a pet in flight lands
	s0 := size()
	time.Sleep(2 * time.Second) // 4 pulse periods
	if s := size(); s != s0 {
		t.Fatalf("%d pets while the daemon was paused", s-s0)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	waitFor(t, 10*time.Second, "pets again after SIGCONT", func() bool { return size() >= s0+2 })
	n.must("nodemgr", "daemon", "stop")
	waitFor(t, 10*time.Second, "the daemon stopped", func() bool { return testbed.DaemonPID(n.root) == 0 })
	b, err := os.ReadFile(wd)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != 'V' {
		t.Fatalf("no magic close: the watchdog file ends with %q", b[max(0, len(b)-3):])
	}
}

// TestNetnsDiskErrorsNeverFence: the disk heartbeat's path is a FIFO, on
// which every read and write fails (ESPIPE): each daemon logs the disk
// lost, keeps running and answering, and nothing moves while the network
// holds; every link of the owner cut, the survivors cannot fence it
// through the disk: the fence fails and the takeover stays blocked (no
// false fence), the owner runs no crash command.
func TestNetnsDiskErrorsNeverFence(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	fifo := filepath.Join(t.TempDir(), "hb.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var work string
	q := newQuorumBedWith(t, []string{"n1", "n2", "n3"}, func(w, _ string) string {
		work = w
		return diskNodeKeys("disabled", "touch "+w+"/crashed", fifo, true, "1s")
	}, nil, nil, 1)
	c := q.nodes
	for _, n := range []string{"n1", "n2", "n3"} {
		q.waitFor(20*time.Second, n+" logs the disk lost", func() bool { return strings.Contains(nodeLog(t, c[n]), "disk heartbeat lost") })
	}
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	cut := uptime(t)
	q.cut("n1")
	q.waitFor(60*time.Second, "the disk fence of n1 fails on a survivor", func() bool {
		return strings.Contains(nodeLog(t, c["n2"])+nodeLog(t, c["n3"]), "fence of n1 failed")
	})
	for _, l := range strings.Split(nodeLog(t, c["n2"])+nodeLog(t, c["n3"]), "\n") {
		if strings.Contains(l, "fence of n1 failed") {
			t.Logf("%s", l)
			break
		}
	}
	for _, n := range []string{"n2", "n3"} {
		if _, ok := q.first(n, "start", cut); ok {
			q.dump()
			t.Fatalf("%s started web without a fence", n)
		}
	}
	if _, ok := q.first("n1", "stop", cut); ok {
		t.Fatal("n1 stopped web: nothing fenced it")
	}
	if _, err := os.Stat(filepath.Join(work, "crashed")); err == nil {
		t.Fatal("n1 ran its crash command")
	}
	if !strings.Contains(c["n2"].must("svcmon"), "fenc") {
		t.Fatalf("svcmon on n2 does not show the blocked takeover:\n%s", c["n2"].must("svcmon"))
	}
}

// TestNetnsDiskFenceStall: the owner's crash command stops its app and
// kills its daemon (a host that went down): no acknowledgement comes, and
// the survivors count the fence done once n1's slot has not advanced for
// the fence wait (2 x hb.disk.timeout + the self-stop deadline), n1's
// beats saying it stops by itself without the disk (split_action stop:
// with disabled the stall would prove nothing), then take over; the
// journal shows no overlap.
func TestNetnsDiskFenceStall(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	// $PPID of the command's shell is the daemon
	q, _ := diskBed3(t, "stop", func(w string) string {
		return fmt.Sprintf(`for v in %s/var-*; do %s/stop.sh web ${v##*/var-} $(cat $v); done; kill -9 $PPID`, w, w)
	})
	c := q.nodes
	cut := uptime(t)
	q.cut("n1")
	q.survivorStarts(60*time.Second, cut)
	q.noOverlap()
	logs := nodeLog(t, c["n2"]) + nodeLog(t, c["n3"])
	if !strings.Contains(logs, "n1's slot has not advanced for") || strings.Contains(logs, "acknowledged by n1") {
		q.dump()
		t.Fatal("the survivors' logs do not say the fence was done by the stall of n1's slot")
	}
	if !strings.Contains(logs, "fenced n1: fenced through the disk: n1's slot has not advanced") || strings.Contains(logs, "its fence command succeeded") {
		t.Fatal("the survivors' logs say a fence command succeeded, or not that the disk fenced n1")
	}
	if !strings.Contains(logs, "it stops by itself without the disk, its beats say; it has no watchdog") {
		t.Fatal("the survivors' logs do not say the stall counted because n1's beats say it stops by itself")
	}
	stop, _ := q.first("n1", "stop", cut)
	for _, n := range []string{"n2", "n3"} {
		if s, ok := q.first(n, "start", cut); ok {
			t.Logf("n1 stopped web %.1fs after the cut, %s started it %.1fs after the cut", stop.T-cut, n, s.T-cut)
		}
	}
}

// TestNetnsDiskLostSplitAction: n1 cannot read the fencing disk (its path
// is a FIFO: every I/O fails) and is cut from n2 and n3 but still reaches
// an arbitrator of weight 2, so its vote keeps the quorum (3 of 5). It
// applies its split_action all the same: without the disk and without a
// majority of the members, a survivor may be fencing it through a disk it
// cannot read. The survivors (4 of 5) fence it through the disk, count the
// fence done after the stall of its slot, and take over after its stop.
func TestNetnsDiskLostSplitAction(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	const arbAddr = "192.0.2.50"
	q := diskFIFOBed3(t, "stop", func(*chaos.Bed) string {
		return fmt.Sprintf("[arbitrator.witness]\nuri = \"http://%s:8080/\"\ntimeout = \"1s\"\nweight = 2\n", arbAddr)
	}, map[string]string{"arb": arbAddr})
	startArbitrator(t, q.bed, "arb", arbAddr)
	c := q.nodes
	q.waitFor(20*time.Second, "n1 hears the arbitrator and lost its disk", func() bool {
		qs := c["n1"].status().Cluster.QuorumState
		return qs != nil && len(qs.Arbitrators) == 1 && qs.Arbitrators[0].Answered && strings.Contains(nodeLog(t, c["n1"]), "disk heartbeat lost")
	})
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	cut := uptime(t)
	for _, p := range [][2]string{{"n1", "n2"}, {"n2", "n1"}, {"n1", "n3"}, {"n3", "n1"}} {
		q.ok(q.bed.OneWay(p[0], p[1]))
	}
	q.waitFor(30*time.Second, "n1 stops web by its split_action", func() bool { _, ok := q.first("n1", "stop", cut); return ok })
	if l := nodeLog(t, c["n1"]); !strings.Contains(l, "the fencing disk is lost and this node hears 1 of 3 members") {
		q.dump()
		t.Fatal("n1's log does not say it applied its split_action for the lost disk")
	}
	if qs := c["n1"].status().Cluster.QuorumState; qs == nil || qs.Lost || !qs.LastSurvive {
		t.Fatalf("n1's quorum state %+v: want its vote kept (the disk rule, not the vote, stopped it)", qs)
	}
	q.survivorStarts(60*time.Second, cut)
	q.noOverlap()
	if !frozen(c["n1"]) {
		t.Fatal("n1 is not frozen after its split stop")
	}
}

// TestNetnsDiskLinkKeepsCutOwnerUp: with [hb.disk] fence = false the disk
// is one more heartbeat link. The owner cut from every network link while
// its slot advances is not down: no vote, no failover (the external journal
// shows web on n1 only); the survivors show the split with the disk alive
// (svcmgr explain) and the links (svcmon). After the heal nothing moved.
func TestNetnsDiskLinkKeepsCutOwnerUp(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	diskFile := filepath.Join(t.TempDir(), "hb.disk")
	q := newQuorumBedWith(t, []string{"n1", "n2", "n3"}, func(w, _ string) string {
		return diskNodeKeys("stop", "touch "+w+"/crashed", diskFile, false, "2s")
	}, nil, nil, 1)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	q.waitFor(20*time.Second, "n2 hears n1 on the disk link too", func() bool {
		for _, l := range c["n2"].status().Heartbeat["n1"].Links {
			if l.Name == "disk" && l.Up {
				return true
			}
		}
		return false
	})
	cut := uptime(t)
	q.cut("n1")
	// three hb.timeout (3 s): a network-only cluster would have voted and
	// failed over by then
	q.waitFor(20*time.Second, "n2 explains n1 silent on the network, alive on the disk", func() bool {
		out := c["n2"].must("svcmgr", "-s", "web", "explain")
		return strings.Contains(out, "n1: silent on every network link but its disk slot advances")
	})
	// watched for three hb.timeout (3 s) plus the ready window: the
	// failover, the vote and the stop must not come, and n1 must stay up
	for end := time.Now().Add(9 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if st := c["n2"].status(); st.Nodes["n1"].Status != "up" {
			q.dump()
			t.Fatalf("n2 sees n1 %s while n1's disk slot advances", st.Nodes["n1"].Status)
		}
		for _, n := range []string{"n2", "n3"} {
			if e, ok := q.first(n, "start", cut); ok {
				q.dump()
				t.Fatalf("%s started web at %.2f: a failover although n1's disk slot advances", n, e.T)
			}
		}
		if e, ok := q.first("n1", "stop", cut); ok {
			q.dump()
			t.Fatalf("n1 stopped web at %.2f (a lost vote?) although it hears every peer on the disk", e.T)
		}
	}
	q.restore("n1")
	q.waitFor(20*time.Second, "n1 heard on the network again", func() bool {
		for _, l := range c["n2"].status().Heartbeat["n1"].Links {
			if l.Name != "disk" && !l.Up {
				return false
			}
		}
		return true
	})
	// n3's copy of n1's data is confirmed a moment after the links are up
	// (stale until then: neither up nor down)
	var w []string
	if testbed.WaitFor(10*time.Second, 100*time.Millisecond, "", func() bool {
		w = where(c["n3"], "web")
		return len(w) == 1 && w[0] == "n1"
	}) != nil {
		t.Fatalf("web up on %v after the heal, want n1 only", w)
	}
	if e, ok := q.first("n1", "stop", cut); ok {
		t.Fatalf("n1 stopped web at %.2f", e.T)
	}
	q.noOverlap()
}

// startDiskAttacker runs a (chaos.DiskAttack) as a process of its own (this
// test binary, see TestMain) until stop is called or the test ends; its
// output goes to the test's log.
func startDiskAttacker(t *testing.T, a chaos.DiskAttack) (stop func()) {
	t.Helper()
	spec, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), chaos.DiskAttackEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			t.Logf("%s", strings.TrimSpace(out.String()))
		})
	}
	t.Cleanup(stop)
	return stop
}

// diskAttackBed is the layout of docs/operations.md "A 2-node cluster with
// the disk instead of IPMI": quorum, a plain arbitrator both nodes reach,
// hb.disk.fence and no [stonith] command, split_action stop. n1 runs db1
// and db2, n2 runs web, so that n1 fences first when the link between
// them is cut (the side running more services). A node's crash command
// stops its apps and kills its daemon (a host that went down).
func diskAttackBed(t *testing.T, diskFile string) *quorumBed {
	t.Helper()
	const arbAddr = "192.0.2.50"
	q := newQuorumBedWith(t, []string{"n1", "n2"}, func(w, name string) string {
		crash := "true"
		if name != "" {
			crash = fmt.Sprintf(`touch %s/crashed-%s; for s in web db1 db2; do [ -e %s/svcvar-%s-$s ] && %s/stop.sh $s %s $(cat %s/svcvar-%s-$s); done; kill -9 $PPID`,
				w, name, w, name, w, name, w, name)
		}
		return diskNodeKeys("stop", crash, diskFile, true, "2s")
	}, func(*chaos.Bed) string {
		return fmt.Sprintf("[arbitrator.witness]\nuri = \"http://%s:8080/\"\ntimeout = \"1s\"\n", arbAddr)
	}, map[string]string{"arb": arbAddr}, 1)
	startArbitrator(t, q.bed, "arb", arbAddr)
	c := q.nodes
	waitFor(t, 20*time.Second, "both hear the arbitrator", func() bool {
		for _, n := range []string{"n1", "n2"} {
			qs := c[n].status().Cluster.QuorumState
			if qs == nil || len(qs.Arbitrators) != 1 || !qs.Arbitrators[0].Answered {
				return false
			}
		}
		return true
	})
	createService(t, c["n1"], "db1", q.service("n1", "n2"))
	createService(t, c["n1"], "db2", q.service("n1", "n2"))
	createService(t, c["n1"], "web", q.service("n2", "n1"))
	q.waitFor(40*time.Second, "db1, db2 up on n1 and web up on n2", func() bool {
		return upOnlyOn(c["n1"], "db1", "n1")() && upOnlyOn(c["n1"], "db2", "n1")() && upOnlyOn(c["n1"], "web", "n2")()
	})
	q.waitFor(20*time.Second, "each node's disk reachable, the other's slot alive", func() bool {
		a, b := c["n1"].status().Disk, c["n2"].status().Disk
		return a != nil && b != nil && a.Reachable && b.Reachable && a.Slots["n2"].Alive && b.Slots["n1"].Alive
	})
	return q
}

// cutBetween cuts the network between n1 and n2 only (both still reach the
// arbitrator).
func (q *quorumBed) cutBetween(a, b string) {
	q.ok(q.bed.OneWay(a, b))
	q.ok(q.bed.OneWay(b, a))
}

// TestNetnsDiskHeldSlotNeverTakesOverALiveNode: the link between n1 and
// n2 is cut (both keep the vote with the arbitrator) and n1 fences n2,
// which runs web. An attacker without the secret erases every fence block
// and writes n2's block of the cut back into n2's slot 5 ms after each
// of n2's writes (n2 reads its block back at once: it sees its own), so that n2's slot never advances for n1. n2
// still learns the fence from n1's beat (or, its slot rewritten, counts
// its disk lost and stops by its split_action): web is stopped on n2
// before n1 starts it, the external journal shows no overlap.
func TestNetnsDiskHeldSlotNeverTakesOverALiveNode(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	diskFile := filepath.Join(t.TempDir(), "hb.disk")
	q := diskAttackBed(t, diskFile)
	c := q.nodes
	cut := uptime(t)
	startDiskAttacker(t, chaos.DiskAttack{Path: diskFile, Slots: 2, Hold: []int{1}, EraseFences: true, Delay: 5 * time.Millisecond})
	q.cutBetween("n1", "n2")
	q.waitFor(60*time.Second, "n1 starts web", func() bool { _, ok := q.first("n1", "start", cut); return ok })
	q.noOverlap()
	stop, ok := q.first("n2", "stop", cut)
	start, _ := q.first("n1", "start", cut)
	if !ok || stop.T > start.T {
		q.dump()
		t.Fatalf("n1 started web at %.2f, n2 stopped it at %.2f (%v): a takeover of a live node", start.T-cut, stop.T-cut, ok)
	}
	t.Logf("n2 stopped web %.1fs after the cut, n1 started it %.1fs after the cut", stop.T-cut, start.T-cut)
	if _, err := os.Stat(filepath.Join(q.work, "crashed-n1")); err == nil {
		t.Fatal("n1 ran its crash command: the survivor was fenced")
	}
	if w := where(c["n1"], "db1"); len(w) != 1 || w[0] != "n1" {
		t.Fatalf("db1 up on %v, want n1", w)
	}
}

// TestNetnsDiskOldStoppedBlockNeverBlocksTakeover: the block n1 wrote at
// an earlier clean `nodemgr daemon stop` ("stopped on purpose") is kept by
// an attacker without the secret; n1's daemon runs again, then its host
// dies (its link cut, its daemon and app killed), and the attacker writes
// the old block back into n1's slot once. The block is of an earlier run,
// older than the newest read: it counts for nothing, the survivors fence
// n1 by the stall of its slot and take web over (it blocked the takeover
// for ever: "the disk cannot fence it").
func TestNetnsDiskOldStoppedBlockNeverBlocksTakeover(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q, diskFile := diskBed3(t, "stop", func(w string) string { return "touch " + w + "/crashed" })
	c := q.nodes
	c["n1"].must("nodemgr", "daemon", "stop")
	q.waitFor(20*time.Second, "n1's daemon stopped", func() bool { return testbed.DaemonPID(c["n1"].root) == 0 })
	f, err := os.Open(diskFile)
	q.ok(err)
	stopped := make([]byte, disk.BlockSize)
	_, err = f.ReadAt(stopped, disk.BeatOffset(0))
	f.Close()
	q.ok(err)
	restarted := time.Now()
	q.startDaemon("n1")
	// the stopped block read once is alive for hb.disk.timeout (2s) at
	// most: alive 3s after the restart, the slot advances in the new run
	q.waitFor(30*time.Second, "n2 sees n1's new run advance on the disk", func() bool {
		st := c["n2"].status()
		return time.Since(restarted) > 3*time.Second && st.Disk.Slots["n1"].Alive && st.Nodes["n1"].Status == "up"
	})
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	cut := q.n1HostDies()
	startDiskAttacker(t, chaos.DiskAttack{Path: diskFile, Slots: 3, Replay: map[int64][]byte{disk.BeatOffset(0): stopped}})
	q.survivorStarts(60*time.Second, cut)
	q.noOverlap()
	if logs := nodeLog(t, c["n2"]) + nodeLog(t, c["n3"]); strings.Contains(logs, "stopped on purpose") || !strings.Contains(logs, "older block") {
		t.Fatal("the survivors counted the old block: no log of it as older than the newest read, or a fence refused for it")
	}
}
