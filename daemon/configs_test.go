package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/api"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/heartbeat"
	"haven/internal/clock"
	"haven/internal/paths"
	"haven/node"
)

// pairCluster is the cluster.toml of a cluster of n1 and n2.
const pairCluster = "[cluster]\nname = \"pair\"\nsecret = \"" + "44d8c85eafe06f3385e89433d8ae793868630c6fec75411a70dfeef4f2eb9f33" + "\"\n" +
	"[nodes]\nn1 = \"127.0.0.1:10000\"\nn2 = \"127.0.0.2:10000\"\n"

// pairDaemon is n1 of a cluster of n1 and n2, on the test's goroutine,
// its loop not started (the test runs what the workers post: drain):
// fromPeer plays n2's heartbeats.
func pairDaemon(t testing.TB, p paths.Paths) *Daemon {
	t.Helper()
	return newTestDaemon(t, p, pairCluster)
}

// fromPeer hands d the heartbeat of peer n2 carrying data (n2 heard up
// first), as the heartbeat does.
func fromPeer(d *Daemon, data *dataset.Node) {
	if d.core.PeerStatus("n2", d.clk.Now()) != dataset.NodeUp {
		d.drv.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: "n2"})
	}
	data.Name = "n2"
	data.Gen++
	d.drv.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: data})
}

// newTestDaemon writes node.toml (n1) and cluster.toml under p and makes
// the daemon.
func newTestDaemon(t testing.TB, p paths.Paths, cluster string) *Daemon {
	t.Helper()
	for f, content := range map[string]string{
		// no guard: its program is not beside the test's binary
		p.NodeConf: "[node]\nname = \"n1\"\nguard = false\n",
		p.Cluster:  cluster,
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := New(Options{Paths: p, Clock: clock.NewFake(clock.Real{}.Now())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.workers.Wait()
		d.persist.close()
		d.lock.Close()
	})
	return d
}

// runUntil runs on the test's goroutine, as the loop would, what the
// workers and the persister post, until done holds (20s at most).
func runUntil(t testing.TB, d *Daemon, what string, done func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !done() {
		select {
		case f := <-d.ev:
			f()
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: not done after 20s", what)
		}
	}
}

// A config file is written off the loop; a keyword edit asked while a
// peer's config is being written waits for that write, so that it is made
// on the newest content: the peer's change is not lost under it.
func TestKeywordEditWaitsForTheConfigWriteInFlight(t *testing.T) {
	d := pairDaemon(t, paths.New(filepath.Join(t.TempDir(), "r")))
	const a = "[DEFAULT]\nnodes = [\"n1\"]\n"
	cfg, err := tomlfile.ParseService("web.toml", "web", []byte(a))
	if err != nil {
		t.Fatal(err)
	}
	var created *node.Answer
	d.editConfig(node.ConfigRequest{Service: "web", Config: cfg, What: "created"}, func(an node.Answer) { created = &an })
	runUntil(t, d, "create", func() bool { return created != nil })
	if created == nil || created.Err != nil {
		t.Fatalf("create: got %+v, want answered", created)
	}

	const b = a + "priority = 7\n"
	fromPeer(d, &dataset.Node{Configs: map[string]dataset.ConfigEntry{"web": {Version: dataset.Version{Counter: 50, Origin: "n2"},
		Digest: dataset.ConfigDigest([]byte(b)), Raw: b}}})
	d.applyReady() // the peer's config is being written
	if !d.core.ConfigBusy("web") {
		t.Fatal("the peer's config is not in flight")
	}
	// n2 gone: the edit below waits for no peer's adoption
	d.drv.Heartbeat(heartbeat.Event{Kind: heartbeat.Down, Node: "n2"})
	var setErr error
	answered := false
	d.whenConfigIdle("web", func() {
		d.keyword(api.KeywordRequest{Name: "web", Op: "set", Kws: []string{"DEFAULT.orchestrate=start"}}, keywordCheck{}, func(_ any, err error) {
			answered, setErr = true, err
		})
	})
	runUntil(t, d, "set", func() bool { return answered })
	if !answered || setErr != nil {
		t.Fatalf("set: answered %v, %v; want answered", answered, setErr)
	}
	raw, err := os.ReadFile(d.p.ServiceConf("web"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "priority = 7") || !strings.Contains(string(raw), "orchestrate") {
		t.Fatalf("config on disk:\n%s\nwant the peer's priority and the set's orchestrate", raw)
	}
	if kc := d.core.KnownConfig("web"); kc.Version.Counter <= 50 || kc.Digest != dataset.ConfigDigest(raw) {
		t.Fatalf("recorded %+v, want a version after the peer's, with the digest of the file", kc)
	}
}
