package daemon

import (
	"os"
	"path/filepath"
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
	b, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := loadDurable(path)
	if err != nil {
		t.Fatal(err)
	}
	g := got.Services["web"]
	if c := g.Restarts["app#main"]; c.Spent != 2 || !c.FailedAt.Equal(at) || c.LastFailure != "check says down" ||
		g.GaveUp != web.GaveUp || g.Excluded != web.Excluded {
		t.Fatalf("read back %+v", g)
	}
}
