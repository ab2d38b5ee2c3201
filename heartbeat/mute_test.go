package heartbeat

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestMemMuteLooksDead: a node whose Mute says true sends nothing (the
// daemon's loop is wedged): its peers declare it down after hb.timeout,
// as a dead node, though it still hears them; unmuted, it is up again.
func TestMemMuteLooksDead(t *testing.T) {
	c := newMemCluster(t, 2)
	var muted atomic.Bool
	cfg := c.cfg("n02", testSecret, "prod")
	cfg.Mute = muted.Load
	h, err := c.net.Join(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.hb["n02"] = h
	c.publish("n02", svcNode("n02", 1, "a"))
	c.net.Advance(7 * time.Second)
	if !peerOf(t, c.hb["n01"], "n02").Up {
		t.Fatal("n02 not up before the mute")
	}
	c.take("n01", Down, "n02")
	muted.Store(true)
	sent := h.Stats().Sent
	c.net.Advance(16 * time.Second)
	if n := c.take("n01", Down, "n02"); n != 1 {
		t.Fatalf("muted n02 not declared down after hb.timeout (%d events)", n)
	}
	if got := h.Stats().Sent; got != sent {
		t.Errorf("a muted node sent %d frames", got-sent)
	}
	if !peerOf(t, h, "n01").Up {
		t.Error("muted n02 stopped hearing n01")
	}
	muted.Store(false)
	c.net.Advance(5 * time.Second)
	if c.take("n01", Up, "n02") != 1 {
		t.Fatal("n02 not up again once unmuted")
	}
}
