package daemon

import (
	"testing"
	"time"

	"haven/node"
)

// The restart ladder's durable state (counters, give-up, exclusion) is
// written and read back by the strict decoder; files without it (older
// ones, TestDurableOldFormat) still load.
func TestDurableKeepsTheLadder(t *testing.T) {
	st := sampleDurable()
	at := time.Date(2030, 1, 1, 0, 0, 5, 0, time.UTC)
	web := st.Services["web"]
	web.Restarts = map[string]node.RestartCount{"app#main": {Spent: 2, LastFailure: "check says down", FailedAt: at}}
	web.GaveUp, web.Excluded = "app#main down, 2 restarts spent", "monitor_action switch"
	st.Services["web"] = web
	g := roundTrip(t, st).Services["web"]
	if c := g.Restarts["app#main"]; c.Spent != 2 || !c.FailedAt.Equal(at) || c.LastFailure != "check says down" ||
		g.GaveUp != web.GaveUp || g.Excluded != web.Excluded {
		t.Fatalf("read back %+v", g)
	}
}
