package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"haven/config/tomlfile"
	"haven/dataset"
	"haven/heartbeat"
	"haven/internal/version"
	hnode "haven/node"
	"haven/test/testbed"
)

// insider is a member of the cluster run by the test itself: the real
// heartbeat, holding the cluster secret of its cluster.toml (an insider:
// docs/security.md, "The cluster secret is root on every node"), which
// announces whatever data the test gives it, under its own name.
type insider struct {
	name string
	hb   heartbeat.Heartbeat
	mu   sync.Mutex
	gen  uint64
	// data is what it announces; its configs are the newest it heard of
	// each service (it relays them as a member does, so that the edits
	// made on the nodes are confirmed by it), unless the test forged one.
	data   dataset.Node
	forged map[string]bool
	heard  map[string]dataset.ConfigEntry // the newest of the peers'
}

// newInsider runs member name of n's cluster (its cluster.toml and the
// heartbeat address of its node.toml), in place of its daemon.
func newInsider(t *testing.T, n *node) *insider {
	t.Helper()
	cl, err := tomlfile.LoadCluster(filepath.Join(n.root, "etc", "cluster.toml"), n.name)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := tomlfile.LoadNode(filepath.Join(n.root, "etc", "node.toml"))
	if err != nil {
		t.Fatal(err)
	}
	hb, err := heartbeat.NewMemberlist(heartbeat.Config{Node: n.name, BindAddr: nc.HB.Addr, BindPort: nc.HB.Port,
		Members: cl.Nodes, ClusterName: cl.Name, Secret: cl.Secret, Timeout: nc.HB.Timeout, Interval: nc.HB.Interval})
	if err != nil {
		t.Fatal(err)
	}
	in := &insider{name: n.name, hb: hb, forged: map[string]bool{}, heard: map[string]dataset.ConfigEntry{},
		data: dataset.Node{Name: n.name, Monitor: dataset.NodeIdle, Compat: version.Compat,
			Services: map[string]dataset.Instance{}, Configs: map[string]dataset.ConfigEntry{}}}
	go func() {
		for ev := range hb.Events() {
			if ev.Kind == heartbeat.Data && ev.Data != nil {
				in.relay(ev.Data.Configs)
			}
		}
	}()
	t.Cleanup(func() { hb.Close() })
	in.mu.Lock()
	in.publishLocked()
	in.mu.Unlock()
	return in
}

// relay takes the configs of a peer that win over those announced.
func (in *insider) relay(cs map[string]dataset.ConfigEntry) {
	in.mu.Lock()
	defer in.mu.Unlock()
	changed := false
	for name, e := range cs {
		if !e.Wins(in.heard[name]) {
			continue
		}
		in.heard[name] = e
		if !in.forged[name] {
			in.data.Configs[name] = e
			changed = true
		}
	}
	if changed {
		in.publishLocked()
	}
}

// forge announces e as the insider's config of svc from now on.
func (in *insider) forge(svc string, e dataset.ConfigEntry) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.forged[svc] = true
	in.data.Configs[svc] = e
	in.publishLocked()
}

// relayAgain ends the forgery of svc: the insider announces the newest
// config of svc its peers hold again, as a member does.
func (in *insider) relayAgain(svc string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.forged, svc)
	in.data.Configs[svc] = in.heard[svc]
	in.publishLocked()
}

// publishLocked announces the data as a new generation (a fresh copy of
// its maps: the heartbeat keeps what it is given).
func (in *insider) publishLocked() {
	in.gen++
	d := in.data
	d.Gen = in.gen
	d.Configs = make(map[string]dataset.ConfigEntry, len(in.data.Configs))
	for k, v := range in.data.Configs {
		d.Configs[k] = v
	}
	in.hb.Publish(d)
}

// 2-node cluster plus an insider n3 that announces a config of web at a
// version counter of exactly 2^48, the bound of an earlier release: every
// node took it, and every later version (2^48+1) was "beyond
// 281474976710656" at the peers: `set` failed for ever, a `freeze`
// answered rc 0 on n2 but n1 never froze. Now a counter far ahead of the
// node's clock is refused (and said), and cluster administration goes on:
// a set made on n2 reaches n1, a freeze reaches both nodes. Then the
// insider announces a counter just below the new bound: it is taken, and
// the versions go on after it (the bound moves with the clock: nothing
// freezes at it).
func TestInsiderCounterAtTheBound(t *testing.T) {
	c := newCluster(t, []string{"n1", "n2", "n3"}, clusterOpts{})
	c["n1"].startDaemon()
	c["n2"].startDaemon()
	in := newInsider(t, c["n3"])
	for _, n := range []string{"n1", "n2"} {
		waitFor(t, 20*time.Second, n+" sees n3 up", func() bool { return peerStatus(c[n], "n3") == dataset.NodeUp })
	}
	svc := strings.Replace(testbed.PidService, `orchestrate = "no"`, "orchestrate = \"no\"\nnodes = [\"n1\", \"n2\"]", 1)
	createService(t, c["n1"], "web", svc)
	waitFor(t, 20*time.Second, "web installed on n2", func() bool {
		_, err := os.Stat(filepath.Join(c["n2"].root, "etc", "services", "web.toml"))
		return err == nil
	})

	evil := svc + "\n# insider\n"
	in.forge("web", dataset.ConfigEntry{Version: dataset.Version{Counter: 1 << 48, Origin: "n3"},
		Digest: dataset.ConfigDigest([]byte(evil)), Raw: evil, Includes: map[string]uint64{"n3": 1 << 48}})
	conf := func(n string) string { return readFile(t, filepath.Join(c[n].root, "etc", "services", "web.toml")) }
	waitFor(t, 20*time.Second, "n1 and n2 take n3's config at 2^48, or say they refuse it", func() bool {
		for _, n := range []string{"n1", "n2"} {
			if !strings.Contains(conf(n), "# insider") && !strings.Contains(nodeLog(t, c[n]), "281474976710656") {
				return false
			}
		}
		return true
	})
	in.relayAgain("web")

	c["n2"].must("svcmgr", "-s", "web", "set", "--kw", "app#main.timeout=11s")
	if got := strings.TrimSpace(c["n1"].must("svcmgr", "-s", "web", "get", "--kw", "app#main.timeout")); got != "11s" {
		t.Fatalf("n1: app#main.timeout = %q after n2's set, want 11s", got)
	}
	c["n2"].must("svcmgr", "-s", "web", "freeze")
	waitFor(t, 20*time.Second, "web frozen on n1 and n2 (n2's freeze)", func() bool {
		return c["n1"].instance("web").Frozen && c["n2"].instance("web").Frozen
	})
	for _, n := range []string{"n1", "n2"} {
		if strings.Contains(conf(n), "# insider") {
			t.Fatalf("%s installed the insider's config at 2^48", n)
		}
	}

	// just below the bound, by this host's clock: taken, and the
	// versions go on after it
	near := uint64(time.Now().UnixMilli()) + uint64(hnode.VersionLead.Milliseconds()) - 5000
	near2 := svc + "\n# insider, near the bound\n"
	in.forge("web", dataset.ConfigEntry{Version: dataset.Version{Counter: near, Origin: "n3"},
		Digest: dataset.ConfigDigest([]byte(near2)), Raw: near2, Includes: map[string]uint64{"n3": near}})
	waitFor(t, 20*time.Second, "n1 and n2 install n3's config near the bound", func() bool {
		return strings.Contains(conf("n1"), "near the bound") && strings.Contains(conf("n2"), "near the bound")
	})
	in.relayAgain("web")
	c["n1"].must("svcmgr", "-s", "web", "set", "--kw", "app#main.timeout=12s")
	if got := strings.TrimSpace(c["n2"].must("svcmgr", "-s", "web", "get", "--kw", "app#main.timeout")); got != "12s" {
		t.Fatalf("n2: app#main.timeout = %q after n1's set, want 12s", got)
	}
	c["n1"].must("svcmgr", "-s", "web", "thaw")
	waitFor(t, 20*time.Second, "web thawed on n1 and n2 (n1's thaw)", func() bool {
		return !c["n1"].instance("web").Frozen && !c["n2"].instance("web").Frozen
	})
	t.Logf("versions went on past %d", near)
}
