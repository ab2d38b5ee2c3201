package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// diskCluster is n1 n2 with web up on n1, and db and log on n1 only
// (orchestrate no).
func diskCluster(t *testing.T, opt Options) *Cluster {
	t.Helper()
	only := "[DEFAULT]\nnodes = [\"n1\"]\norchestrate = \"no\"\n"
	return webCluster(t, opt, map[string]string{"db": only, "log": only})
}

// lineWith is the first timeline line that has every one of ss.
func lineWith(c *Cluster, ss ...string) string {
next:
	for _, l := range c.Timeline() {
		for _, s := range ss {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		{
			return l
		}
	}
	return ""
}

// On a slow disk an answer waits for the write it rests on: a freeze is
// answered once its state is on disk, not before; what the node has on
// disk meanwhile is the old state.
func TestSlowDiskHoldsTheAnswer(t *testing.T) {
	c := diskCluster(t, Options{})
	if err := c.Disk("n1", "slow", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := c.Admin("n1", "db", "freeze", "", true)
	if err != nil || !strings.Contains(res, "answered when") {
		t.Fatalf("freeze on a slow disk answered at once: %q, %v", res, err)
	}
	if c.Node("n1").dur.Services["db"].Frozen {
		t.Fatal("the freeze is on disk before the write ended")
	}
	c.Run(1900 * time.Millisecond)
	if l := lineWith(c, `answer to "freeze"`); l != "" {
		t.Fatalf("answered before the write ended: %s", l)
	}
	c.Run(200 * time.Millisecond)
	if l := lineWith(c, `answer to "freeze": freeze done`); l == "" {
		t.Fatalf("no answer once the write ended:\n%s", strings.Join(c.Timeline(), "\n"))
	}
	if !c.Node("n1").dur.Services["db"].Frozen {
		t.Fatal("answered, and the freeze is not on disk")
	}
}

// Group commit: while a write is in flight, the changes that follow wait
// for it and go to the disk in one write.
func TestSlowDiskGroupCommit(t *testing.T) {
	c := diskCluster(t, Options{})
	c.Disk("n1", "slow", 2*time.Second)
	before := c.Writes("n1")
	for _, svc := range []string{"db", "log", "web"} {
		if _, err := c.Admin("n1", svc, "freeze", "", true); err != nil {
			t.Fatal(err)
		}
	}
	c.Run(5 * time.Second)
	if n := c.Writes("n1") - before; n != 2 {
		t.Fatalf("three freezes in a row took %d writes, want 2 (the first, then the two that waited for it)", n)
	}
	for _, svc := range []string{"db", "log", "web"} {
		if !c.Node("n1").dur.Services[svc].Frozen {
			t.Fatalf("%s's freeze is not on disk", svc)
		}
		if l := lineWith(c, " "+svc+" ", `answer to "freeze": freeze done`); l == "" {
			t.Fatalf("%s's freeze not answered:\n%s", svc, strings.Join(c.Timeline(), "\n"))
		}
	}
}

// A failed write rolls the change back: the stop --local (which freezes
// first) fails with the cause, the stop is not run, the freeze is undone;
// the node recovers once its disk takes writes again.
func TestFailingDiskRollsBack(t *testing.T) {
	c := diskCluster(t, Options{})
	c.Disk("n1", "fail", 0)
	c.Admin("n1", "web", "stop", "", true)
	c.Run(3 * time.Second)
	if l := lineWith(c, `answer to "stop": error: state not saved`); l == "" {
		t.Fatalf("the stop on a failing disk was not failed:\n%s", strings.Join(c.Timeline(), "\n"))
	}
	if up := c.UpOn("web"); !slices.Equal(up, []string{"n1"}) {
		t.Fatalf("web up on %v: a stop resting on an undone write ran", up)
	}
	if c.Node("n1").d.core.Frozen("web") || c.Node("n1").dur.Services["web"].Frozen {
		t.Fatal("the freeze of the failed write was not rolled back")
	}
	c.Disk("n1", "ok", 0)
	c.Run(time.Second)
	res, err := c.Admin("n1", "web", "freeze", "", true)
	if err != nil || res != "freeze done" || !c.Node("n1").dur.Services["web"].Frozen {
		t.Fatalf("after the disk recovered: %q, %v, on disk %v", res, err, c.Node("n1").dur.Services["web"].Frozen)
	}
}

// svcmgr start --wait --time: the answer comes at the deadline, with
// where the target stands, when the target is not reached by then.
func TestWaitDeadline(t *testing.T) {
	c := diskCluster(t, Options{})
	c.actDur["web"]["start"] = time.Minute // the start outlasts the wait
	c.Admin("n1", "web", "stop", "", false)
	c.Run(10 * time.Second)
	if up := c.UpOn("web"); len(up) != 0 {
		t.Fatalf("web up on %v after stop", up)
	}
	res, err := c.AdminWaitFor("n1", "web", "start", "", 5*time.Second)
	if err != nil || !strings.Contains(res, "waiting") {
		t.Fatalf("start --wait: %q, %v", res, err)
	}
	c.Run(4900 * time.Millisecond)
	if l := lineWith(c, `answer to "start"`); l != "" {
		t.Fatalf("answered before the deadline: %s", l)
	}
	c.Run(200 * time.Millisecond)
	if l := lineWith(c, `answer to "start": error:`); l == "" {
		t.Fatalf("no answer at the deadline:\n%s", strings.Join(c.Timeline(), "\n"))
	}
}
