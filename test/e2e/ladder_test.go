package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/testbed"
)

// The restart ladder with real daemons on loopback: newCluster's
// monitor_interval is 300ms, hb.timeout 3s, ready_period 2s.

const ladderMonitorInterval = 300 * time.Millisecond

// zombieCheck is testbed.PidApp's check that also says down for a killed
// app not yet reaped (a zombie answers kill -0): in a container whose pid 1
// reaps orphans late, kill -0 alone sees a killed app up for seconds.
const zombieCheck = `check = "sh -c 'p=$(cat {var}/main.pid 2>/dev/null) && kill -0 $p 2>/dev/null && ! grep -qs \"^State:.*Z\" /proc/$p/status'"`

// ladderService is testbed.HAService on n1, n2 with monitor_action act and
// its monitored app's restart and restart_delay.
func ladderService(act string, restart int, delay string) string {
	svc := testbed.HAService(`["n1", "n2"]`, `monitor_action = "`+act+`"`)
	i := strings.Index(svc, "check = ")
	j := i + strings.Index(svc[i:], "\n")
	return svc[:i] + zombieCheck + svc[j:] +
		"restart = " + strconv.Itoa(restart) + "\nrestart_delay = \"" + delay + "\"\n"
}

// appPid is the pid of the app of svc on n when it runs, 0 otherwise.
func appPid(n *node, svc string) int {
	b, err := os.ReadFile(filepath.Join(n.root, "var", "services", svc, "main.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil && strings.Contains(string(st), "\nState:\tZ") {
		return 0 // killed, not yet reaped
	}
	return pid
}

// killApp kills the app of svc on n (as a crash of the application alone)
// and returns when, and its pid.
func killApp(t *testing.T, n *node, svc string) (time.Time, int) {
	t.Helper()
	pid := appPid(n, svc)
	if pid == 0 {
		t.Fatalf("%s: the app of %s does not run", n.name, svc)
	}
	at := time.Now()
	if err := syscallKill(pid); err != nil {
		t.Fatal(err)
	}
	return at, pid
}

// restartedOn waits for the app of svc to run on n with a pid other than
// old, and returns how long after since.
func restartedOn(t *testing.T, n *node, svc string, old int, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	waitFor(t, within, svc+" running again on "+n.name, func() bool {
		p := appPid(n, svc)
		return p != 0 && p != old
	})
	return time.Since(since)
}

func resourceOf(n *node, svc string) dataset.Resource {
	return n.instance(svc).Resources["app#main"]
}

// Kill the app of a monitored service: the daemon restarts it alone, on the
// same node, within monitor_interval + restart_delay + 1s; the count is
// spent (print status: restart 1 remaining, the last failure) and the
// service never moves.
func TestLadderRestartsTheAppLocally(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	const delay = 500 * time.Millisecond
	// a second, unmonitored app: it keeps running while app#main restarts
	side := "[app.side]\nstart = \"sh -c 'sleep 100000 >/dev/null 2>&1 & echo $! > {var}/side.pid'\"\n" +
		"stop = \"sh -c 'kill $(cat {var}/side.pid) 2>/dev/null; rm -f {var}/side.pid'\"\n"
	createService(t, c["n1"], "web", ladderService("switch", 2, delay.String())+side)
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	waitFor(t, 5*time.Second, "web's app running", func() bool { return appPid(c["n1"], "web") != 0 })
	sidePid := readFile(t, filepath.Join(c["n1"].root, "var", "services", "web", "side.pid"))

	at, old := killApp(t, c["n1"], "web")
	took := restartedOn(t, c["n1"], "web", old, at, 20*time.Second)
	bound := ladderMonitorInterval + delay + time.Second
	t.Logf("LADDER local restart: kill to running again on n1 took %s (bound monitor_interval %s + restart_delay %s + 1s = %s)",
		took.Round(time.Millisecond), ladderMonitorInterval, delay, bound)
	if took > bound {
		t.Errorf("the local restart took %s, more than %s", took, bound)
	}
	if os.Getenv("LADDER_DEBUG") != "" {
		t.Logf("killed at %s\n%s", at.UTC().Format("15:04:05.000"), readFile(t, filepath.Join(c["n1"].root, "log", "node.log")))
	}
	waitFor(t, 10*time.Second, "n1 idle with 1 restart remaining", func() bool {
		i := c["n1"].instance("web")
		r := i.Resources["app#main"]
		return i.Monitor.State == dataset.Idle && i.Avail == dataset.StatusUp && r.RestartRemaining == 1 && r.LastFailure != ""
	})
	if got := readFile(t, filepath.Join(c["n1"].root, "var", "services", "web", "side.pid")); got != sidePid {
		t.Fatalf("app#side was restarted too (pid %q, was %q): the ladder restarts the failed resource alone", got, sidePid)
	}
	tree := c["n1"].must("svcmgr", "-s", "web", "print", "status")
	if !strings.Contains(tree, "restart 1 remaining") || !strings.Contains(tree, "last failure") {
		t.Fatalf("print status does not show the ladder:\n%s", tree)
	}
	if w := where(c["n2"], "web"); len(w) != 1 || w[0] != "n1" {
		t.Fatalf("web up on %v, want n1 only", w)
	}
	if p := appPid(c["n2"], "web"); p != 0 {
		t.Fatalf("web's app runs on n2 too (pid %d)", p)
	}

	// svcmgr restart: refused where the service does not run, done where
	// it runs, and the ladder is given back
	if r := c["n2"].run("svcmgr", "-s", "web", "restart"); r.Code != 1 || !strings.Contains(r.Out+r.Err, "web runs on n1: restart it there") {
		t.Fatalf("restart on n2: want exit 1 naming n1, got %s", r)
	}
	old = appPid(c["n1"], "web")
	if out := c["n1"].must("svcmgr", "-s", "web", "restart"); !strings.Contains(out, "web: restarted") {
		t.Fatalf("restart on n1: %q", out)
	}
	if p := appPid(c["n1"], "web"); p == 0 || p == old {
		t.Fatalf("after svcmgr restart the app's pid is %d (was %d), want a new process", p, old)
	}
	if n := resourceOf(c["n1"], "web").RestartRemaining; n != 2 {
		t.Fatalf("after svcmgr restart: %d restarts remaining, want 2", n)
	}
}

// Killed more than `restart` times, with monitor_action switch, the
// service runs on n2, and n1 does not take it back.
func TestLadderSwitchesAndNeverComesBack(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{})
	createService(t, c["n1"], "web", ladderService("switch", 1, "200ms"))
	waitFor(t, 15*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	waitFor(t, 5*time.Second, "web's app running", func() bool { return appPid(c["n1"], "web") != 0 })

	at, old := killApp(t, c["n1"], "web")
	restartedOn(t, c["n1"], "web", old, at, 20*time.Second)
	waitFor(t, 10*time.Second, "the restart counted", func() bool {
		i := c["n1"].instance("web")
		return i.Monitor.State == dataset.Idle && i.Resources["app#main"].RestartRemaining == 0
	})
	at, _ = killApp(t, c["n1"], "web")
	took := restartedOn(t, c["n2"], "web", 0, at, 30*time.Second)
	t.Logf("LADDER switch: kill (restarts spent) to running on n2 took %s (monitor_interval %s + stop + ready_period 2s + start)",
		took.Round(time.Millisecond), ladderMonitorInterval)
	waitFor(t, 10*time.Second, "web up on n2 only", upOnlyOn(c["n1"], "web", "n2"))
	// the exclusion ends once it runs on n2; n1 never takes it back by itself
	waitFor(t, 10*time.Second, "n1's exclusion cleared", func() bool {
		i := c["n1"].instance("web")
		return i.Excluded == "" && i.GaveUp == ""
	})
	deadline := time.Now().Add(5 * time.Second) // two ready periods and more
	for time.Now().Before(deadline) {
		if p := appPid(c["n1"], "web"); p != 0 {
			t.Fatalf("web's app runs on n1 again (pid %d): a ping-pong back", p)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !upOnlyOn(c["n1"], "web", "n2")() {
		t.Fatalf("web up on %v, want n2 only", where(c["n1"], "web"))
	}
}

// monitor_action freezestop: stopped and frozen on n1. monitor_action
// crash: node.toml's crash_command (harmless here) is called once.
func TestLadderFreezeStopAndCrash(t *testing.T) {
	t.Parallel() // loopback daemons on ports of its own (testbed.FreePort); mostly waits
	mark := filepath.Join(t.TempDir(), "crashed")
	c := startCluster(t, []string{"n1", "n2"}, clusterOpts{extra: `crash_command = "echo called >> ` + mark + `"`})
	createService(t, c["n1"], "web", ladderService("freezestop", 0, "100ms"))
	createService(t, c["n1"], "db", ladderService("crash", 0, "100ms"))
	waitFor(t, 15*time.Second, "web and db up on n1", func() bool {
		return upOnlyOn(c["n2"], "web", "n1")() && upOnlyOn(c["n2"], "db", "n1")() &&
			appPid(c["n1"], "web") != 0 && appPid(c["n1"], "db") != 0
	})

	killApp(t, c["n1"], "web")
	waitFor(t, 15*time.Second, "web frozen and stopped on n1", func() bool {
		i := c["n1"].instance("web")
		return i.Frozen && i.Avail == dataset.StatusDown && i.Monitor.State == dataset.Idle && appPid(c["n1"], "web") == 0
	})

	killApp(t, c["n1"], "db")
	waitFor(t, 15*time.Second, "the crash command called", func() bool {
		b, _ := os.ReadFile(mark)
		return strings.Count(string(b), "called") >= 1
	})
	// read before n2 takes db (ready_period 2s): db up there ends n1's give-up
	var ss dataset.ServiceStatus
	if err := json.Unmarshal([]byte(c["n1"].must("svcmgr", "-s", "db", "print", "status", "--format", "json")), &ss); err != nil {
		t.Fatal(err)
	}
	if g := ss.Instances["n1"].GaveUp; !strings.Contains(g, "monitor_action crash") {
		t.Fatalf("db on n1: gave_up %q, want the crash monitor_action", g)
	}
	// the node kept running (a harmless crash_command): its give-up makes it
	// no candidate, and n2 takes db as it would once n1 went down
	waitFor(t, 15*time.Second, "db up on n2", upOnlyOn(c["n2"], "db", "n2"))
	// several checks of db more on n1 (monitor interval 100ms), the nodes
	// settled: no second call
	afterChecks(t, 5, 30*time.Second, c["n1"])
	settled(t, 30*time.Second, c["n1"], c["n2"])
	if b, _ := os.ReadFile(mark); strings.Count(string(b), "called") != 1 {
		t.Fatalf("crash command called %d times, want once", strings.Count(string(b), "called"))
	}
	if log := readFile(t, filepath.Join(c["n1"].root, "log", "node.log")); !strings.Contains(log, "node action crash") {
		t.Fatal("node.log does not say the node action crash")
	}
}
