package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"haven/internal/clock"
	"haven/internal/paths"
)

// Each run of a cluster node records a heartbeat incarnation greater than
// every earlier one before it sends anything, even when the clock went
// backwards: peers drop the frames of earlier runs as replays.
func TestIncarnationNeverGoesBackwards(t *testing.T) {
	p := paths.New(filepath.Join(t.TempDir(), "r"))
	files := map[string]string{
		p.NodeConf: "[node]\nname = \"n1\"\nguard = false\n[hb]\naddr = \"127.0.0.1\"\nport = 17001\n",
		p.Cluster:  "[cluster]\nname = \"c\"\nsecret = \"" + testSecret + "\"\n[nodes]\nn1 = \"127.0.0.1:17001\"\nn2 = \"127.0.0.1:17002\"\n",
	}
	for f, content := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := func(now time.Time) uint64 {
		t.Helper()
		d, err := New(Options{Paths: p, Clock: clock.NewFake(now)})
		if err != nil {
			t.Fatal(err)
		}
		inc := d.dur.Incarnation
		d.lock.Close()
		d.log.Sync()
		got, err := loadDurable(p.State())
		if err != nil {
			t.Fatal(err)
		}
		if got.Incarnation != inc {
			t.Fatalf("incarnation %d in memory, %d on disk: it must be on disk before the daemon goes on", inc, got.Incarnation)
		}
		return inc
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	first := start(now)
	if first != uint64(now.UnixNano()) {
		t.Fatalf("first incarnation %d, want the clock's %d", first, now.UnixNano())
	}
	second := start(now.Add(-time.Hour)) // the clock went backwards
	if second != first+1 {
		t.Fatalf("after a clock step back: incarnation %d, want %d", second, first+1)
	}
	third := start(now.Add(time.Hour))
	if third != uint64(now.Add(time.Hour).UnixNano()) {
		t.Fatalf("third incarnation %d, want the clock's %d", third, now.Add(time.Hour).UnixNano())
	}
}

const testSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
