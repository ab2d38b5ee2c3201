package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

// failingService is an ha service of testbed.PidApp whose start fails on a
// node while {var}/nostart exists there.
func failingService(nodes string) string {
	return strings.Replace(testbed.HAService(nodes, ""),
		`start = "sh -c 'sleep`, `start = "sh -c 'test ! -e {var}/nostart || exit 1; sleep`, 1)
}

// An on-path attacker passes n1's beats to n2 and drops its data (every TCP
// segment, every datagram longer than a beat). web dies on n1 and cannot
// start there again. n2 hears n1 all along; it must mark n1 stale within
// about hb.timeout (3s) and stop showing web up there (the instance is
// "? stale"), and, n1 being heard (it may still run web: n2 cannot know),
// n2 does not start web while n1 is stale. Once the data passes again, n1
// is current again in n2's view.
func TestNetnsStaleWhenOnlyBeatsPass(t *testing.T) {
	t.Parallel() // a bed of its own
	names := []string{"n1", "n2"}
	b := newNetBed(t, names, `rejoin_grace_period = "10s"`)
	c := b.nodes
	for _, n := range names {
		b.startDaemon(n)
	}
	b.converge(names, 15*time.Second)
	createService(t, c["n1"], "web", failingService(`["n1", "n2"]`))
	waitFor(t, 15*time.Second, "web up on n1 only (seen from n2)", upOnlyOn(c["n2"], "web", "n1"))
	if hb := c["n2"].status().Heartbeat["n1"]; hb.Stale || !hb.Up {
		t.Fatalf("n2's heartbeat view of n1 %+v before the attack, want up, not stale", hb)
	}

	b.ok(b.bed.BeatsOnly("n1", "n2", chaos.BeatLen))
	writeFile(t, filepath.Join(c["n1"].root, "var", "services", "web", "nostart"), "")
	pid := appPid(c["n1"], "web")
	if pid == 0 {
		t.Fatal("no process of web on n1")
	}
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "n1 sees web down", func() bool {
		return c["n1"].status().Services["web"].Instances["n1"].Avail != dataset.StatusUp
	})
	// n2: stale within hb.timeout (+ slack), web no longer shown up on n1
	waitFor(t, 8*time.Second, "n2 marks n1 stale", func() bool {
		st := c["n2"].status()
		hb := st.Heartbeat["n1"]
		return hb.Up && hb.Stale && st.Nodes["n1"].Status == dataset.NodeUp
	})
	took := time.Since(killed)
	t.Logf("n2 marked n1 stale %s after web died there (hb.timeout 3s); %d packets dropped", took.Round(10*time.Millisecond), b.bed.Dropped("n2"))
	st := c["n2"].status()
	if i := st.Services["web"].Instances["n1"]; i.Avail == dataset.StatusUp || !i.Stale {
		t.Fatalf("n2 shows web on n1 as %+v while n1 is stale, want not up, stale", i)
	}
	if hb := st.Heartbeat["n1"]; hb.AnnouncedGen <= hb.Gen || hb.BehindMs <= 0 {
		t.Fatalf("n2's heartbeat view of n1 %+v: want announced_gen > gen, behind_ms > 0", hb)
	}
	if out := c["n2"].must("svcmon"); !strings.Contains(out, "stale") {
		t.Fatalf("svcmon on n2 does not mark n1 stale:\n%s", out)
	}
	// stale, not down: n2 starts nothing because of n1 (it may run web)
	end := time.Now().Add(6 * time.Second)
	for time.Now().Before(end) {
		if appPid(c["n2"], "web") != 0 {
			t.Fatalf("n2 started web while n1 is stale (heard, its data unknown)")
		}
		if hb := c["n2"].status().Heartbeat["n1"]; !hb.Stale {
			t.Fatalf("n1 no longer stale in n2's view while only its beats pass: %+v", hb)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(nodeLog(t, c["n2"]), "data of n1 is stale") {
		t.Fatal("n2's node.log does not say n1's data is stale")
	}

	// the attacker stops: n1's data is current again in n2's view
	b.ok(b.bed.Heal())
	os.Remove(filepath.Join(c["n1"].root, "var", "services", "web", "nostart"))
	waitFor(t, 10*time.Second, "n1 current again in n2's view", func() bool {
		st := c["n2"].status()
		hb := st.Heartbeat["n1"]
		return hb.Up && !hb.Stale && !st.Services["web"].Instances["n1"].Stale
	})
}
