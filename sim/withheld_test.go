package sim

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Attack, at the node level: an on-path attacker without
// the secret holds back some of n1's authentic frames to n2 and delivers
// them after n1 crashed and n2 took the service over. The dead n1 must not
// come back up at n2, and n2 must not stop its healthy copy (before: n2 saw
// the service on two nodes, stopped its own, and it ran nowhere).
func TestWithheldFramesAfterCrashKeepSurvivor(t *testing.T) {
	c := webCluster(t, Options{}, nil)
	k := 0
	c.net.Withhold("n1", "n2", func([]byte) bool { k++; return k%3 == 0 })
	c.Run(6 * time.Second)
	if err := c.Crash("n1"); err != nil {
		t.Fatal(err)
	}
	c.Run(20 * time.Second)
	if up := c.UpOn("web"); !slices.Equal(up, []string{"n2"}) {
		t.Fatalf("after n1's crash web up on %v, want n2", up)
	}
	held := c.net.ReleaseHeld("n2")
	if held < 2 {
		t.Fatalf("the attacker held %d frames, want several", held)
	}
	for i := 0; i < 60; i++ { // every second: the survivor's copy is never stopped
		c.Run(time.Second)
		if up := c.UpOn("web"); !slices.Equal(up, []string{"n2"}) {
			t.Fatalf("%d held frames of the crashed n1 delivered: web up on %v, want n2\n%s", held, up, timeline(c))
		}
	}
}

func timeline(c *Cluster) string {
	var s string
	for _, l := range c.Timeline() {
		s += l + "\n"
	}
	return s
}

// The on-path lines refuse what they cannot do, naming the line.
func TestOnPathLinesBadInput(t *testing.T) {
	for _, line := range []string{"withhold n1 n1", "withhold n1 n9", "withhold n1 n2 0", "lose n1 n2", "lose n1 n2 x", "release", "release n1 n2", "duplicate n1"} {
		_, err := RunScript("bad", "cluster n1 n2\nservice web nodes=n1,n2 orchestrate=ha\nrun 1s\n"+line+"\n")
		if err == nil || !strings.Contains(err.Error(), "bad:4:") {
			t.Errorf("%q: got %v, want an error at bad:4", line, err)
		}
	}
}
