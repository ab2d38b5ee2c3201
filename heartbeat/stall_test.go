package heartbeat

import (
	"testing"
	"time"
)

// stallCluster is three nodes at the fast failover profile (hb.timeout 1s,
// a beat every 333ms), converged and quiet, their events forgotten.
func stallCluster(t *testing.T) *memCluster {
	c := newMemClusterHB(t, 3, time.Second, time.Second/3)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	c.net.Advance(10 * time.Second)
	c.collect()
	c.evs = map[string][]Event{}
	return c
}

// Unlucky sequence: n01's process is not scheduled for twice hb.timeout
// (SIGSTOP, a VM paused, a host starved) while its peers go on beating.
// When it runs again its tick comes before the beats waiting in its
// socket. Its peers were never silent, it was: it declares nobody down
// (before: both peers down at that tick, then up again once it read the
// beats, and with cluster.quorum off a takeover of everything they ran).
func TestMemStalledNodeDeclaresNobodyDown(t *testing.T) {
	for _, stall := range []time.Duration{1100 * time.Millisecond, 2 * time.Second, 30 * time.Second} {
		c := stallCluster(t)
		c.net.Pause("n01", true)
		c.net.Advance(stall)
		c.net.Pause("n01", false)
		c.net.Advance(3 * time.Second)
		for _, p := range []string{"n02", "n03"} {
			if n := len(c.events("n01", Down, p)); n != 0 {
				t.Errorf("stall of %s: n01 declared the live %s down (%d Down events)", stall, p, n)
			}
		}
		if st := c.hb["n01"].Stats(); st.Stalls != 1 || st.Stalled < stall {
			t.Errorf("stall of %s: n01's stats say %d stalls for %s, want 1 of at least the stall", stall, st.Stalls, st.Stalled)
		}
		if st := c.hb["n02"].Stats(); st.Stalls != 0 {
			t.Errorf("n02 ran throughout: %d stalls in its stats", st.Stalls)
		}
		// its peers did hear nothing from it for the stall: that is theirs to say
		if n := len(c.events("n02", Down, "n01")); n != 1 {
			t.Errorf("stall of %s: n02 saw n01 silent for it: %d Down events, want 1", stall, n)
		}
	}
}

// A peer that really died is still declared down after a stall: never
// earlier than hb.timeout after its last frame, within hb.timeout of
// running after the stall's end, and later than without the stall by at
// most the stall's length.
func TestMemStalledNodeStillDeclaresTheDead(t *testing.T) {
	const timeout = time.Second
	for _, tc := range []struct {
		name          string
		before, stall time.Duration // n03 dead that long before the stall; the stall
	}{
		{"dead at the stall", 0, 2 * time.Second},
		{"dead before the stall", 600 * time.Millisecond, 2 * time.Second},
		{"dead before a short stall", 300 * time.Millisecond, 500 * time.Millisecond},
		{"dead long before a stall", 900 * time.Millisecond, 5 * time.Second},
	} {
		c := stallCluster(t)
		killed := c.clk.Now()
		c.net.Crash("n03")
		c.net.Advance(tc.before)
		c.net.Pause("n01", true)
		c.net.Advance(tc.stall)
		end := c.clk.Now()
		c.net.Pause("n01", false)
		var downAt time.Time
		for waited := time.Duration(0); waited < 5*time.Second; waited += 10 * time.Millisecond {
			if len(c.events("n01", Down, "n03")) > 0 {
				downAt = c.clk.Now()
				break
			}
			c.net.Advance(10 * time.Millisecond)
		}
		switch {
		case downAt.IsZero():
			t.Errorf("%s: n01 never declared the dead n03 down after its stall", tc.name)
		case downAt.Sub(killed) < timeout-timeout/3:
			// its last frame came at most a beat period before its death
			t.Errorf("%s: n03 declared down %s after its death: earlier than hb.timeout after its last frame", tc.name, downAt.Sub(killed))
		case downAt.Sub(end) > timeout+10*time.Millisecond:
			t.Errorf("%s: n03 declared down %s after the stall's end: more than hb.timeout of running", tc.name, downAt.Sub(end))
		case downAt.Sub(killed) > timeout+tc.stall+10*time.Millisecond:
			t.Errorf("%s: n03 declared down %s after its death: later than hb.timeout and the stall", tc.name, downAt.Sub(killed))
		default:
			t.Logf("%s: down %s after the death, %s after the stall's end", tc.name, downAt.Sub(killed), downAt.Sub(end))
		}
		// n02 ran throughout: its Down of n03 is not delayed
		if n := len(c.events("n02", Down, "n03")); n != 1 {
			t.Errorf("%s: n02 gave %d Down events of n03, want 1", tc.name, n)
		}
	}
}
