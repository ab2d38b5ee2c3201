package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// ordersCore is signedCore with the signed orders on (admin keys, the
// cluster feature level 2): it returns the core, its driver, and alice's
// signers of a config, a deletion and a target of web; eve is a key
// cluster.toml does not hold.
type orderSigners struct {
	config func(text string, serial uint64) string
	del    func(service string, serial uint64) string
	target func(expect, node string, serial uint64) string
	eve    ed25519.PrivateKey
	alice  ed25519.PrivateKey
}

func ordersCore(t *testing.T) (*Core, *cfgDriver, orderSigners) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, eve, _ := ed25519.GenerateKey(rand.Reader)
	c, d := cfgCore("n1", "n2")
	check := config.SignatureCheck{Cluster: "prod", Keys: map[string]ed25519.PublicKey{"alice": pub}}
	c.cfg.SignedConfigs, c.cfg.Admin, c.state.FeatureLevel = true, check, 2
	c.cfg.Configs = sigCodec{check: check}
	s := orderSigners{eve: eve, alice: priv}
	s.config = func(text string, serial uint64) string {
		out, err := config.SignService([]byte(text), "prod", "web", "alice", priv, serial)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	s.del = func(service string, serial uint64) string {
		sig, err := config.SignDeletion("prod", service, "alice", priv, serial)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	s.target = func(expect, node string, serial uint64) string {
		sig, err := config.SignTarget("prod", "web", expect, node, "alice", priv, serial)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	return c, d, s
}

// downWeb checks web down here: a deletion then runs no stop first.
func downWeb(c *Core, d *cfgDriver) {
	c.checkNow("web")
	rd := d.drive(t0)
	c.checkDone(rd.Check[len(rd.Check)-1], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	d.drive(t0)
}

// tombstone is a peer's tombstone of a service at v, signed sig.
func tombstone(v dataset.Version, sig string) dataset.ConfigEntry {
	return dataset.ConfigEntry{Version: v, Deleted: true, Sig: sig}
}

// A stolen member (n2) deletes web everywhere: its tombstone wins by its
// version but carries no admin signature, or a bad one (another key under
// alice's name, a key not listed, another cluster's, another service's, a
// target's signature), or an old one (a serial not above the config's
// installed here): each refused, said once as config_refused (a
// deletion), and web's config kept. An admin's deletion is taken; its
// serial is then the floor of a config that brings web back (an older
// signed config sent again is refused), and once web is created again
// with a newer signed config, the old deletion sent again is refused.
func TestPeerUnsignedDeletionRefused(t *testing.T) {
	c, d, s := ordersCore(t)
	good := s.config("[app.web]\nstart = /bin/true\n", 5)
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), good, nil)}, t0)
	d.drive(t0)
	if d.svcs["web"] == nil {
		t.Fatal("web not installed")
	}
	downWeb(c, d)
	evil, _ := config.SignDeletion("prod", "web", "alice", s.eve, 9)
	unknown, _ := config.SignDeletion("prod", "web", "mallory", s.eve, 9)
	other, _ := config.SignDeletion("test", "web", "alice", s.alice, 9)
	tests := []struct{ name, sig, reason string }{
		{"unsigned", "", "config_refused: unsigned deletion"},
		{"another key named alice", evil, "config_refused: bad signature deletion"},
		{"a key not listed", unknown, "config_refused: unknown key deletion"},
		{"another cluster's", other, "config_refused: bad signature deletion"},
		{"another service's", s.del("db", 9), "config_refused: bad signature deletion"},
		{"a target's signature", s.target(dataset.ExpectStopped, "", 9), "config_refused: bad signature deletion"},
		{"older than the config", s.del("web", 5), "config_refused: replayed deletion"},
	}
	for i, tt := range tests {
		v := ver(uint64(10+i), "n2")
		announce(c, map[string]dataset.ConfigEntry{"web": tombstone(v, tt.sig)}, t0)
		rd := d.drive(t0)
		rs := refusals(rd)
		if len(rd.Configs) != 0 || len(rs) != 1 || !rs[0].Deletion || !strings.Contains(rs[0].Err, tt.reason) || rs[0].From != "n2" {
			t.Errorf("%s: configs %v, refusals %+v", tt.name, rd.Configs, rs)
		}
		if d.svcs["web"] == nil || c.KnownConfig("web").Deleted {
			t.Errorf("%s: web deleted", tt.name)
		}
		announce(c, map[string]dataset.ConfigEntry{"web": tombstone(v, tt.sig)}, t0)
		if rs := refusals(d.drive(t0)); len(rs) != 0 {
			t.Errorf("%s: said again: %+v", tt.name, rs)
		}
	}

	// the admin's deletion
	del := s.del("web", 6)
	announce(c, map[string]dataset.ConfigEntry{"web": tombstone(ver(20, "n2"), del)}, t0)
	rd := d.drive(t0)
	if len(rd.Configs) != 1 || rd.Configs[0].Config != nil || d.svcs["web"] != nil || c.state.TombstoneSigs["web"] != del {
		t.Fatalf("signed deletion: configs %v refusals %+v, tombstone sig %q", rd.Configs, refusals(rd), c.state.TombstoneSigs["web"])
	}
	if e := c.ConfigEntries()["web"]; !e.Deleted || e.Sig != del {
		t.Errorf("the tombstone is relayed without its signature: %+v", e)
	}
	// the config it deleted, sent again: refused
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(21, "n2"), good, nil)}, t0)
	rd = d.drive(t0)
	if rs := refusals(rd); len(rd.Configs) != 0 || len(rs) != 1 || !strings.Contains(rs[0].Err, "config_refused: replayed: serial 5 is below 6") {
		t.Fatalf("old config after the deletion: configs %v refusals %+v", rd.Configs, rs)
	}
	// created again by an admin
	again := s.config("[app.web]\nstart = /bin/v2\n", 7)
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(22, "n2"), again, nil)}, t0)
	if rd := d.drive(t0); len(rd.Configs) != 1 || d.svcs["web"] == nil || c.state.TombstoneSigs["web"] != "" {
		t.Fatalf("created again: configs %v refusals %+v", rd.Configs, refusals(rd))
	}
	// the old deletion, sent again under a version that wins
	announce(c, map[string]dataset.ConfigEntry{"web": tombstone(ver(30, "n2"), del)}, t0)
	rd = d.drive(t0)
	if rs := refusals(rd); len(rd.Configs) != 0 || len(rs) != 1 || !strings.Contains(rs[0].Err, "replayed deletion: serial 6 is not above 7") {
		t.Fatalf("old deletion replayed: configs %v refusals %+v", rd.Configs, rs)
	}
}

// The feature level gates the rule: at level 1 (a member may run the
// previous release, which cannot sign a deletion) a peer's unsigned
// deletion is taken as before; so it is without admin keys.
func TestUnsignedDeletionTakenBelowLevel2(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level int
		keys  bool
	}{{"level 1", 1, true}, {"no admin keys", 2, false}} {
		c, d, s := ordersCore(t)
		announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), s.config("[app.web]\n", 1), nil)}, t0)
		d.drive(t0)
		downWeb(c, d)
		c.state.FeatureLevel = tc.level
		if !tc.keys {
			c.cfg.Admin = config.SignatureCheck{Cluster: "prod"}
		}
		announce(c, map[string]dataset.ConfigEntry{"web": tombstone(ver(6, "n2"), "")}, t0)
		if rd := d.drive(t0); len(rd.Configs) != 1 || d.svcs["web"] != nil {
			t.Errorf("%s: unsigned deletion not taken: %v %+v", tc.name, rd.Configs, refusals(rd))
		}
	}
}

// targets gives c the data of n2 announcing the target t of web.
func announceTarget(c *Core, t dataset.Target, now time.Time) {
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1,
		Services: map[string]dataset.Instance{}, Targets: map[string]dataset.Target{"web": t}}}, now)
}

// A stolen member (n2) orders web stopped (or frozen, switched, a flex
// node's instance stopped) through its targets: unsigned, signed for
// another target or scope, by another key, for another service or
// cluster: refused (target_refused, said once per version), the target
// here unchanged. An admin's signed stop is taken; sent again under a
// newer version (a replay) it is refused. A target that asks for nothing
// (reached: none; aborted) needs no signature. Through this node's API, an
// unsigned target is refused as bad input, a signed one accepted.
func TestPeerUnsignedTargetRefused(t *testing.T) {
	c, d, s := ordersCore(t)
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), s.config("[app.web]\n", 1), nil)}, t0)
	d.drive(t0)
	otherSvc, _ := config.SignTarget("prod", "db", dataset.ExpectStopped, "", "alice", s.alice, 50)
	otherCluster, _ := config.SignTarget("test", "web", dataset.ExpectStopped, "", "alice", s.alice, 50)
	evil, _ := config.SignTarget("prod", "web", dataset.ExpectStopped, "", "alice", s.eve, 50)
	tests := []struct {
		name   string
		t      dataset.Target
		reason string
	}{
		{"unsigned stop", dataset.Target{Expect: dataset.ExpectStopped}, "target_refused: unsigned"},
		{"unsigned freeze", dataset.Target{Expect: dataset.ExpectFrozen}, "target_refused: unsigned"},
		{"unsigned switch", dataset.Target{Expect: dataset.ExpectPlaced, Node: "n2"}, "target_refused: unsigned"},
		{"unsigned flex node stop", dataset.Target{Expect: dataset.ExpectStopped, Node: "n1"}, "target_refused: unsigned"},
		{"thaw signed, stop asked", dataset.Target{Expect: dataset.ExpectStopped, Sig: s.target(dataset.ExpectThawed, "", 50)}, "target_refused: bad signature"},
		{"switch to n1 signed, to n2 asked", dataset.Target{Expect: dataset.ExpectPlaced, Node: "n2", Sig: s.target(dataset.ExpectPlaced, "n1", 50)}, "target_refused: bad signature"},
		{"another key", dataset.Target{Expect: dataset.ExpectStopped, Sig: evil}, "target_refused: bad signature"},
		{"another service's", dataset.Target{Expect: dataset.ExpectStopped, Sig: otherSvc}, "target_refused: bad signature"},
		{"another cluster's", dataset.Target{Expect: dataset.ExpectStopped, Sig: otherCluster}, "target_refused: bad signature"},
		{"a deletion's signature", dataset.Target{Expect: dataset.ExpectStopped, Sig: s.del("web", 50)}, "target_refused: bad signature"},
	}
	for i, tt := range tests {
		tt.t.ID, tt.t.Version = "n2-x", ver(uint64(10+i), "n2")
		announceTarget(c, tt.t, t0)
		rd := d.drive(t0)
		rs := eventsOf[TargetRefused](rd)
		if len(rs) != 1 || !strings.HasPrefix(rs[0].Err, tt.reason) || rs[0].From != "n2" || len(eventsOf[TargetAdopted](rd)) != 0 {
			t.Errorf("%s: refusals %+v, events %v", tt.name, rs, rd.Events)
		}
		if got := c.state.Services["web"].Target; got.Expect != "" {
			t.Errorf("%s: target taken: %+v", tt.name, got)
		}
		announceTarget(c, tt.t, t0)
		if rs := eventsOf[TargetRefused](d.drive(t0)); len(rs) != 0 {
			t.Errorf("%s: said again: %+v", tt.name, rs)
		}
	}

	stop := dataset.Target{Expect: dataset.ExpectStopped, ID: "n2-s", Version: ver(30, "n2"), Sig: s.target(dataset.ExpectStopped, "", 100)}
	announceTarget(c, stop, t0)
	rd := d.drive(t0)
	if ss := c.state.Services["web"]; ss.Target != stop || ss.TargetSerial != 100 || len(eventsOf[TargetRefused](rd)) != 0 {
		t.Fatalf("signed stop: target %+v serial %d, events %v", ss.Target, ss.TargetSerial, rd.Events)
	}
	// reached: the none target needs no signature
	none := dataset.Target{Expect: dataset.ExpectNone, ID: "n2-s", Version: ver(31, "n2")}
	announceTarget(c, none, t0)
	d.drive(t0)
	if ss := c.state.Services["web"]; ss.Target != none || ss.TargetSerial != 100 {
		t.Fatalf("none: target %+v serial %d", ss.Target, ss.TargetSerial)
	}
	// the admin's stop sent again, under a version that wins
	replay := stop
	replay.Version = ver(40, "n2")
	announceTarget(c, replay, t0)
	rd = d.drive(t0)
	if rs := eventsOf[TargetRefused](rd); len(rs) != 1 || !strings.HasPrefix(rs[0].Err, "target_refused: replayed: serial 100 is not above 100") || c.state.Services["web"].Target != none {
		t.Fatalf("replayed stop: %+v, target %+v", rs, c.state.Services["web"].Target)
	}

	// through this node's API
	tk := c.Step(TargetRequest{Service: "web", Action: "freeze", Nodes: []string{"n1", "n2"}, Now: t0})
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || !rd.Answers[0].Bad || !strings.HasPrefix(rd.Answers[0].Err.Error(), "target_refused: unsigned") {
		t.Fatalf("unsigned freeze here: %+v", rd.Answers)
	}
	tk = c.Step(TargetRequest{Service: "web", Action: "freeze", Nodes: []string{"n1", "n2"}, Now: t0, Sig: s.target(dataset.ExpectFrozen, "", 101)})
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil || c.state.Services["web"].TargetSerial != 101 {
		t.Fatalf("signed freeze here: %+v", rd.Answers)
	}
	if got := c.Targets()["web"]; got.Sig == "" || got.Expect != dataset.ExpectFrozen {
		t.Errorf("the target is relayed without its signature: %+v", got)
	}
	// a deletion here, unsigned: refused as bad input
	tk = c.Step(Deletion{Service: "web", Now: t0})
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || !rd.Answers[0].Bad || !strings.HasPrefix(rd.Answers[0].Err.Error(), "config_refused: unsigned deletion") {
		t.Fatalf("unsigned deletion here: %+v", rd.Answers)
	}
}

// The feature level gates the targets' rule too: at level 1 a peer's
// unsigned stop is taken as before; a signature text over the bound is
// refused whatever the level.
func TestUnsignedTargetTakenBelowLevel2(t *testing.T) {
	c, d, s := ordersCore(t)
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), s.config("[app.web]\n", 1), nil)}, t0)
	d.drive(t0)
	c.state.FeatureLevel = 1
	stop := dataset.Target{Expect: dataset.ExpectStopped, ID: "n2-s", Version: ver(30, "n2")}
	// a signature text over the bound is refused whatever the level
	long := stop
	long.Sig = strings.Repeat("a", config.MaxOrderSig+1)
	announceTarget(c, long, t0)
	if rs := eventsOf[TargetRefused](d.drive(t0)); len(rs) != 1 || c.state.Services["web"].Target.Sig != "" {
		t.Fatalf("level 1: a signature of %d bytes taken: %+v", len(long.Sig), rs)
	}
	announceTarget(c, stop, t0)
	d.drive(t0)
	if got := c.state.Services["web"].Target; got != stop {
		t.Errorf("level 1: unsigned stop not taken: %+v", got)
	}
}
