package heartbeat

import (
	"fmt"
	"testing"
	"time"

	"haven/dataset"
)

// TestMemWithheldAfterCrash: an attacker on the path from n01 to n02,
// without the secret, holds back every 3rd frame of n01 and delivers them
// after n01 crashed and n02 declared it down. Authentic
// but old, they must not bring n01 back up, nor change its data; a genuine
// restart of n01 is still seen up at once.
func TestMemWithheldAfterCrash(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n01", svcNode("n01", 1, "web"))
	c.collect()
	k := 0
	c.net.Withhold("n01", "n02", func([]byte) bool { k++; return k%3 == 0 })
	for i := 2; i <= 6; i++ { // deltas and beats, some of them held
		c.publish("n01", svcNode("n01", uint64(i), "web", fmt.Sprint("s", i)))
		c.net.Advance(3 * time.Second)
	}
	c.net.Crash("n01")
	c.net.Advance(20 * time.Second)
	if peerOf(t, c.hb["n02"], "n01").Up || c.take("n02", Down, "n01") != 1 {
		t.Fatal("the crashed n01 not declared down")
	}
	before := c.seen["n02"]["n01"]
	held := c.net.ReleaseHeld("n02")
	if held < 3 {
		t.Fatalf("the attacker held %d frames, want several", held)
	}
	c.net.Advance(time.Second)
	if peerOf(t, c.hb["n02"], "n01").Up || c.take("n02", Up, "n01") != 0 {
		t.Fatalf("the crashed n01 up again after the attacker delivered %d held frames", held)
	}
	if c.seen["n02"]["n01"] != before {
		t.Fatal("held frames of the crashed n01 changed its data")
	}
	c.net.Advance(time.Minute)
	if peerOf(t, c.hb["n02"], "n01").Up {
		t.Fatal("n01 up again a minute later")
	}
	// A genuine restart of n01: up at once, its new data taken.
	c.net.Withhold("n01", "n02", nil)
	c.join("n01", testSecret, "prod")
	if c.take("n02", Up, "n01") != 1 {
		t.Fatal("the restarted n01 not up")
	}
	want := map[string]dataset.Node{"n01": svcNode("n01", 1, "db")}
	c.publish("n01", want["n01"])
	if err := c.converged(want, "n02"); err != nil {
		t.Fatal(err)
	}
}

// TestMemWithheldWhileUp: frames held back from a live peer and delivered
// late (newest first, after newer ones) neither refresh its liveness nor
// undo its data; the peer is declared down Timeout after its crash, not
// Timeout after the late delivery.
func TestMemWithheldWhileUp(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n01", svcNode("n01", 1, "web"))
	k := 0
	c.net.Withhold("n01", "n02", func([]byte) bool { k++; return k%2 == 0 })
	for i := 2; i <= 5; i++ {
		c.publish("n01", svcNode("n01", uint64(i), "web", fmt.Sprint("s", i)))
		c.net.Advance(3 * time.Second)
	}
	want := map[string]dataset.Node{"n01": svcNode("n01", 5, "web", "s5")}
	c.net.Crash("n01")
	last := peerOf(t, c.hb["n02"], "n01").LastHeard
	c.net.Advance(10 * time.Second)
	if !peerOf(t, c.hb["n02"], "n01").Up {
		t.Fatal("n01 down before Timeout")
	}
	c.net.ReleaseHeld("n02")
	if got := peerOf(t, c.hb["n02"], "n01").LastHeard; !got.Equal(last) {
		t.Fatalf("held frames refreshed n01's liveness: last heard %s, was %s", got, last)
	}
	if err := c.converged(want, "n02"); err != nil {
		t.Fatal(err)
	}
	c.net.Advance(last.Add(15 * time.Second).Sub(c.clk.Now()))
	if peerOf(t, c.hb["n02"], "n01").Up {
		t.Fatal("n01 not down Timeout after its crash")
	}
}

// A host suspended for a while (its monotonic clock stood still): every
// message of its run then comes with a lag far above the least seen. They
// refresh nothing at first, then, late for Timeout, the run is measured
// again: the peer is up again, not shut out for good.
func TestMemLaggingRunMeasuredAgain(t *testing.T) {
	c := newMemCluster(t, 2)
	c.publish("n01", svcNode("n01", 1, "web"))
	c.net.Advance(10 * time.Second)
	n01 := c.hb["n01"].(*memHB).c
	n01.mu.Lock()
	n01.epoch = n01.epoch.Add(time.Minute) // its clock stood still for a minute
	n01.mu.Unlock()
	c.take("n02", Down, "n01")
	c.net.Advance(3 * 15 * time.Second)
	if !peerOf(t, c.hb["n02"], "n01").Up {
		t.Fatal("a run whose clock stood still is shut out for good")
	}
	if n := c.take("n02", Down, "n01"); n > 1 {
		t.Fatalf("n01 went down %d times", n)
	}
}
