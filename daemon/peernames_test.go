package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"haven/dataset"
	"haven/internal/clock"
	"haven/internal/paths"
)

// Names received from a peer are checked like local input before any use:
// a tombstone named ../../../victim or ../cluster deletes nothing outside
// the service directory, and invalid node names in targets and clears are
// not adopted.
func TestPeerNamesValidated(t *testing.T) {
	top := t.TempDir()
	p := paths.New(filepath.Join(top, "r"))
	for f, content := range map[string]string{
		p.NodeConf:                        "[node]\nname = \"n1\"\n",
		p.Cluster:                         "[cluster]\nname = \"solo\"\n",
		filepath.Join(top, "victim.toml"): "precious\n",
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.ServiceConf("../../../victim"); got != filepath.Join(top, "victim.toml") {
		t.Fatalf("the test's victim is %s, the hostile name points at %s", filepath.Join(top, "victim.toml"), got)
	}
	d, err := New(Options{Paths: p, Clock: clock.NewFake(clock.Real{}.Now())})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		d.persist.close()
		d.lock.Close()
	}()
	v := func(c uint64) dataset.Version { return dataset.Version{Counter: c, Origin: "n2"} }
	for i := 0; i < 3; i++ { // a peer repeats its data: one log line per name
		d.core.MergeConfigs("n2", d.drv.ValidConfigs("n2", map[string]dataset.ConfigEntry{
			"../../../victim": {Version: v(5), Deleted: true},
			"../cluster":      {Version: v(5), Deleted: true},
			"gone":            {Version: v(5), Deleted: true},
		}), d.clk.Now())
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

	d.dur.Services["web"] = durableService{}
	d.core.MergeTargets("n2", d.drv.ValidTargets(map[string]dataset.Target{
		"web":    {Expect: dataset.ExpectPlaced, Node: "../../evil", ID: "x", Version: v(7)},
		"../web": {Expect: dataset.ExpectPlaced, Node: "n1", ID: "y", Version: v(7)},
	}), d.clk.Now(), d.snapshot)
	if tg := d.dur.Services["web"].Target; !tg.Version.IsZero() {
		t.Fatalf("a target naming an invalid node was adopted: %+v", tg)
	}
	d.core.MergeClears("n2", d.drv.ValidClears(map[string]dataset.ClearRequest{
		"web":    {Node: "../../evil", Version: v(8)},
		"../web": {Version: v(8)},
	}), d.clk.Now())
	if c := d.dur.Services["web"].Clear; !c.Version.IsZero() {
		t.Fatalf("a clear naming an invalid node was adopted: %+v", c)
	}
	d.log.Sync()
	log, _ := os.ReadFile(p.NodeLog())
	if n := strings.Count(string(log), `"svc": "../../../victim"`); n != 1 {
		t.Fatalf("the refused name is logged %d times, want once:\n%s", n, log)
	}
}
