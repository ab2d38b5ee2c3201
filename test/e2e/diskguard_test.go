package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// What a stalled slot of the fencing disk proves (docs/operations.md,
// "SBD-style fencing", "What a stall proves"), and what an acknowledgement
// means, with real daemons and the disk file of the host.

// TestNetnsDiskStallOfUnguardedNodeProvesNothing: split_action disabled,
// and the owner n1 cannot read or write the disk (its path is a FIFO).
// Every link of n1 cut: it loses the quorum and, its split_action
// disabled, keeps web; it cannot read the fence. Its slot never advances
// on the disk, which proves nothing of its services: nothing says it stops
// by itself (its data over the network says split_action disabled), so the
// survivors never count it fenced and never start web (they did, 6 s
// after the fence began, before the rule: web up twice).
func TestNetnsDiskStallOfUnguardedNodeProvesNothing(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q := diskFIFOBed3(t, "disabled", nil, nil)
	c := q.nodes
	createService(t, c["n1"], "web", q.service("n1", "n2", "n3"))
	q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	cut := uptime(t)
	q.cut("n1")
	// the fence wait is 2 x 1s + the self-stop deadline (4 s): a fence
	// that counted the stall would be done about 10 s after the cut;
	// watched until 20 s after a survivor said the stall proves nothing
	said := time.Time{}
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end) && (said.IsZero() || time.Since(said) < 20*time.Second); time.Sleep(500 * time.Millisecond) {
		for _, n := range []string{"n2", "n3"} {
			if e, ok := q.first(n, "start", cut); ok {
				q.noOverlap()
				q.dump()
				t.Fatalf("%s started web %.1fs after the cut: n1's stalled slot was taken for its fence", n, e.T-cut)
			}
		}
		if said.IsZero() && strings.Contains(nodeLog(t, c["n2"])+nodeLog(t, c["n3"]), "the stall proves nothing") {
			said = time.Now()
			t.Logf("a survivor said the stall of n1's slot proves nothing %.1fs after the cut", uptime(t)-cut)
		}
	}
	if said.IsZero() {
		q.dump()
		t.Fatal("no survivor said the stall of n1's slot proves nothing within 60s")
	}
	q.noOverlap()
	if _, ok := q.first("n1", "stop", cut); ok {
		t.Fatal("n1 stopped web: its split_action is disabled and it cannot read the fence")
	}
	logs := nodeLog(t, c["n2"]) + nodeLog(t, c["n3"])
	if !strings.Contains(logs, "no block of its run") || !strings.Contains(logs, "does not say it stops by itself") {
		t.Fatal("the survivors' logs do not say why the stall proves nothing")
	}
	if strings.Contains(logs, "fenced n1") {
		t.Fatal("a survivor counted n1 fenced")
	}
	q.restore("n1")
	q.waitFor(30*time.Second, "web up on n1 only after the heal", upOnlyOn(c["n2"], "web", "n1"))
}

// TestNetnsDiskAckMeansNothingRuns: split_action disabled, and a crash
// command that returns 0 without crashing anything (a kernel that ignored
// the sysrq). Every link of the owner n1 cut: it keeps web (disabled),
// reads the fence in a survivor's beat, runs its crash command, which
// returns: n1 then stops web, and acknowledges the fence only once it is
// stopped; the survivors start web after that stop (the acknowledgement
// came as soon as the crash command returned, web still running on n1:
// up twice). After the heal an admin thaws n1 and web moves back to it;
// n1 cut again (the same run): it obeys the new fence anew (its crash
// command runs again, web stops) instead of acknowledging it at once.
func TestNetnsDiskAckMeansNothingRuns(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q, _ := diskBed3(t, "disabled", func(w string) string { return "echo crash >> " + w + "/crashed" })
	c := q.nodes
	crashes := func() int {
		b, _ := os.ReadFile(filepath.Join(q.work, "crashed"))
		return strings.Count(string(b), "crash")
	}
	for round := 1; round <= 2; round++ {
		cut := uptime(t)
		q.cut("n1")
		q.survivorStarts(40*time.Second, cut)
		q.noOverlap()
		stop, ok := q.first("n1", "stop", cut)
		if !ok {
			q.dump()
			t.Fatalf("round %d: a survivor started web, n1 never stopped it", round)
		}
		for _, n := range []string{"n2", "n3"} {
			if s, ok := q.first(n, "start", cut); ok {
				t.Logf("round %d: n1 stopped web %.1fs after the cut, %s started it %.1fs after the cut", round, stop.T-cut, n, s.T-cut)
			}
		}
		if n := crashes(); n != round {
			t.Fatalf("round %d: n1 ran its crash command %d times in all, want %d", round, n, round)
		}
		if !strings.Contains(nodeLog(t, c["n2"])+nodeLog(t, c["n3"]), "acknowledged by n1") {
			t.Fatalf("round %d: no survivor says n1 acknowledged the fence", round)
		}
		if round == 2 {
			break
		}
		q.restore("n1")
		q.waitFor(30*time.Second, "n2 sees n1 up again", func() bool { return peerStatus(c["n2"], "n1") == dataset.NodeUp })
		if !frozen(c["n1"]) {
			t.Fatal("n1 is not frozen after its fence")
		}
		c["n1"].must("nodemgr", "thaw")
		q.waitFor(20*time.Second, "n1 thawed", func() bool { return !frozen(c["n1"]) })
		c["n1"].must("svcmgr", "-s", "web", "switch", "--to", "n1", "--wait", "--time", "40s")
		q.waitFor(30*time.Second, "web up on n1 only", upOnlyOn(c["n2"], "web", "n1"))
	}
}

// TestNetnsDiskRestartedNodeFencedInItsNetworkRun: n1's daemon is stopped
// on purpose (its slot says "stopped", web keeps running), then started
// again with a disk path it cannot use (a FIFO: the multipath device not
// there yet): the survivors hear its new run on the network but never read
// a block of it. Its host then dies. The survivors fence the run the
// network heard, which the old "stopped" block says nothing of; its data
// over the network says it stops by itself (split_action stop), so the
// stall counts and they take web over (the fence was aimed at the run of
// the "stopped" block and refused for ever: "the disk cannot fence it").
func TestNetnsDiskRestartedNodeFencedInItsNetworkRun(t *testing.T) {
	t.Parallel() // a bed of its own (namespaces): runs beside the other netns tests
	q, diskFile := diskBed3(t, "stop", func(w string) string { return "touch " + w + "/crashed" })
	c := q.nodes
	c["n1"].must("nodemgr", "daemon", "stop")
	q.waitFor(20*time.Second, "n1's daemon stopped", func() bool { return testbed.DaemonPID(c["n1"].root) == 0 })
	fifo := filepath.Join(filepath.Dir(diskFile), "hb.fifo")
	q.ok(syscall.Mkfifo(fifo, 0o600))
	path := filepath.Join(c["n1"].root, "etc", "node.toml")
	old, err := os.ReadFile(path)
	q.ok(err)
	q.ok(testbed.WriteNodeToml(c["n1"].root, strings.Replace(string(old), fmt.Sprintf("path = %q", diskFile), fmt.Sprintf("path = %q", fifo), 1)))
	q.startDaemon("n1")
	q.waitFor(30*time.Second, "n2 sees n1 up again, web on n1 only", func() bool {
		return peerStatus(c["n2"], "n1") == dataset.NodeUp && upOnlyOn(c["n2"], "web", "n1")()
	})
	if !strings.Contains(nodeLog(t, c["n1"]), "disk heartbeat lost") {
		q.waitFor(20*time.Second, "n1 logs its disk lost", func() bool { return strings.Contains(nodeLog(t, c["n1"]), "disk heartbeat lost") })
	}
	cut := q.n1HostDies()
	q.survivorStarts(60*time.Second, cut)
	q.noOverlap()
	logs := nodeLog(t, c["n2"]) + nodeLog(t, c["n3"])
	if strings.Contains(logs, "stopped on purpose") || !strings.Contains(logs, "no block of its run") {
		q.dump()
		t.Fatal("the survivors did not fence n1's network run by its data over the network (or refused the fence for the old stopped block)")
	}
	for _, n := range []string{"n2", "n3"} {
		if s, ok := q.first(n, "start", cut); ok {
			t.Logf("%s started web %.1fs after n1's host died", n, s.T-cut)
		}
	}
}
