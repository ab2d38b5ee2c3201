package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/dataset"
	"haven/internal/paths"
	"haven/node"
)

// Names received from a peer are checked like local input before any use:
// a tombstone named ../../../victim or ../cluster deletes nothing outside
// the service directory, and invalid node names in targets and clears are
// not adopted.
func TestPeerNamesValidated(t *testing.T) {
	top := t.TempDir()
	p := paths.New(filepath.Join(top, "r"))
	if err := os.MkdirAll(filepath.Dir(p.NodeConf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, "victim.toml"), []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := p.ServiceConf("../../../victim"); got != filepath.Join(top, "victim.toml") {
		t.Fatalf("the test's victim is %s, the hostile name points at %s", filepath.Join(top, "victim.toml"), got)
	}
	d := pairDaemon(t, p)
	v := func(c uint64) dataset.Version { return dataset.Version{Counter: c, Origin: "n2"} }
	for i := 0; i < 3; i++ { // a peer repeats its data: one log line per name
		fromPeer(d, &dataset.Node{Configs: map[string]dataset.ConfigEntry{
			"../../../victim": {Version: v(5), Deleted: true},
			"../cluster":      {Version: v(5), Deleted: true},
			"gone":            {Version: v(5), Deleted: true},
		}})
		d.applyReady()
		// the config writes run in workers and post their results
		for d.workers.Wait(); len(d.ev) > 0; d.workers.Wait() {
			(<-d.ev)()
		}
	}
	for _, f := range []string{filepath.Join(top, "victim.toml"), p.Cluster} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a tombstone from a peer deleted %s: %v", f, err)
		}
	}
	if _, ok := d.dur.Tombstones["../../../victim"]; ok {
		t.Fatal("a tombstone with an invalid name was recorded")
	}
	if _, ok := d.dur.Tombstones["gone"]; !ok {
		t.Fatal("a valid tombstone was not recorded")
	}

	d.drv.Input(node.ServiceKept{Service: "web"})
	fromPeer(d, &dataset.Node{Targets: map[string]dataset.Target{
		"web":    {Expect: dataset.ExpectPlaced, Node: "../../evil", ID: "x", Version: v(7)},
		"../web": {Expect: dataset.ExpectPlaced, Node: "n1", ID: "y", Version: v(7)},
	}})
	if tg := d.dur.Services["web"].Target; !tg.Version.IsZero() {
		t.Fatalf("a target naming an invalid node was adopted: %+v", tg)
	}
	fromPeer(d, &dataset.Node{Clears: map[string]dataset.ClearRequest{
		"web":    {Node: "../../evil", Version: v(8)},
		"../web": {Version: v(8)},
	}})
	if c := d.dur.Services["web"].Clear; !c.Version.IsZero() {
		t.Fatalf("a clear naming an invalid node was adopted: %+v", c)
	}
	d.log.Sync()
	log, _ := os.ReadFile(p.NodeLog())
	if n := strings.Count(string(log), `"svc": "../../../victim"`); n != 1 {
		t.Fatalf("the refused name is logged %d times, want once:\n%s", n, log)
	}
}
