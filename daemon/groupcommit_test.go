package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"haven/dataset"
	"haven/internal/paths"
	"haven/node"
)

// joinConfigs gives d a peer's full copy of n configs (a node joining a
// cluster of n services) and runs the loop until every one is installed
// and its state is on disk. It returns how many times the state was
// encoded.
func joinConfigs(t testing.TB, d *Daemon, n int) int {
	es := make(map[string]dataset.ConfigEntry, n)
	for i := 0; i < n; i++ {
		raw := fmt.Sprintf("[DEFAULT]\nnodes = [\"n1\"]\npriority = %d\n", i)
		es[fmt.Sprintf("svc%04d", i)] = dataset.ConfigEntry{Version: dataset.Version{Counter: uint64(i + 1), Origin: "n2"},
			Digest: dataset.ConfigDigest([]byte(raw)), Raw: raw}
	}
	before := d.ps.encodes
	fromPeer(d, &dataset.Node{Configs: es})
	d.applyReady()
	last := fmt.Sprintf("svc%04d", n-1)
	runUntil(t, d, "install", func() bool {
		return d.core.KnownConfig(last).Version.Counter == uint64(n) && len(d.services) == n && d.settled() &&
			!d.core.ConfigBusy(last) && d.core.AnyBusy() == false
	})
	return d.ps.encodes - before
}

// A node receiving N configs in one full copy encodes its
// whole state (O(N) bytes) a bounded number of times, not once per config
// installed: with 500 services the daemons of a 16-node cluster reached
// 0.75-1 GB each.
func TestJoinEncodesTheStateFewTimes(t *testing.T) {
	d := pairDaemon(t, paths.New(filepath.Join(t.TempDir(), "r")))
	const n = 500
	enc := joinConfigs(t, d, n)
	if enc > 40 {
		t.Fatalf("the state was encoded %d times to install %d configs: want a bounded number (a group commit)", enc, n)
	}
	t.Logf("%d configs installed with %d state encodings", n, enc)
}

// BenchmarkJoinConfigs is the time (and, run alone, the peak RSS: see
// docs/benchmarks.md) of a node installing the N configs of a peer's full
// copy.
func BenchmarkJoinConfigs(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				d := pairDaemon(b, paths.New(filepath.Join(b.TempDir(), "r")))
				enc := joinConfigs(b, d, n)
				b.ReportMetric(float64(enc), "encodes/op")
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heapsys-MB")
			}
		})
	}
}

// A change that waits for the write in flight (group commit) when the loop
// ends is written by the stop: the persister writes it after that one.
func TestStopWritesTheChangesWaitingForTheWriteInFlight(t *testing.T) {
	d := loopDaemon(t)
	d.setFrozen("web", true, "first")
	d.applyReady()
	handed := d.ps.handed
	d.drv.Input(node.NodeFrozenSet{Frozen: true, Reason: "second"})
	d.applyReady()
	if d.ps.handed != handed || d.settled() {
		t.Fatalf("the second change was handed out while the first is being written (seq %d -> %d)", handed, d.ps.handed)
	}
	d.flushState()
	if _, err := d.persist.close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d.p.Var, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeState(b)
	if err != nil || !st.NodeFrozen || !st.Services["web"].Frozen {
		t.Fatalf("the file after the stop: node frozen %v, web frozen %v (%v); want both", st.NodeFrozen, st.Services["web"].Frozen, err)
	}
}
