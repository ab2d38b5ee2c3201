package node

import (
	"errors"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node/instsm"
)

// fakeCodec parses any text but one holding "bad", and edits by appending
// a line per keyword ("op kw"); a keyword holding "clash" does not apply.
type fakeCodec struct{}

func (fakeCodec) ParseService(name string, raw []byte) (*config.ServiceConfig, error) {
	if strings.Contains(string(raw), "bad") {
		return nil, &config.Error{File: name + ".toml", Line: 1, Msg: "bad"}
	}
	return &config.ServiceConfig{Name: name, Nodes: []string{"n1", "n2"}, Raw: raw}, nil
}

func (fakeCodec) EditService(name string, raw []byte, op string, kws []string) ([]byte, error) {
	out := string(raw)
	for _, k := range kws {
		if strings.Contains(k, "clash") {
			return nil, errors.New(k + ": no longer applies")
		}
		out += op + " " + k + "\n"
	}
	return []byte(out), nil
}

// cfgDriver is a driver of config distribution: it holds the installed
// configs (its Local), writes what Ready.Configs says at once, and
// reports it, failing the writes while fail is set.
type cfgDriver struct {
	c    *Core
	svcs map[string]*config.ServiceConfig
	fail error
}

func (d *cfgDriver) LocalInfo() dataset.Node {
	return dataset.Node{Name: d.c.name(), Services: map[string]dataset.Instance{}}
}
func (d *cfgDriver) LocalServices() map[string]*config.ServiceConfig { return d.svcs }

// cfgCore is node n1 of a cluster of members, with a cfgDriver.
func cfgCore(members ...string) (*Core, *cfgDriver) {
	d := &cfgDriver{svcs: map[string]*config.ServiceConfig{}}
	d.c = New(Config{Name: "n1", ClusterNodes: members, Compat: 1, MaintenanceGrace: time.Minute, RejoinGrace: time.Minute,
		CheckInterval: time.Hour, MonitorInterval: time.Hour, Local: d, Configs: fakeCodec{}, ConfirmTimeout: 10 * time.Second,
		WriteThrough: true}, State{})
	return d.c, d
}

// drive takes the Readies until no config is left to write, carrying out
// the config writes; it returns them merged.
func (d *cfgDriver) drive(now time.Time) Ready {
	var all Ready
	for d.c.HasReady() {
		rd := d.c.Ready()
		all.Events = append(all.Events, rd.Events...)
		all.Answers = append(all.Answers, rd.Answers...)
		all.Run = append(all.Run, rd.Run...)
		all.Check = append(all.Check, rd.Check...)
		all.Configs = append(all.Configs, rd.Configs...)
		for _, op := range rd.Configs {
			if d.fail != nil {
				d.c.configDone(op.Service, d.fail, now)
				continue
			}
			if op.Config == nil {
				delete(d.svcs, op.Service)
				d.c.removeInstance(op.Service)
			} else {
				d.svcs[op.Service] = op.Config
				d.c.addInstance(op.Service, instsm.Spec{Local: true, Runnable: true}, now)
			}
			d.c.configDone(op.Service, nil, now)
		}
	}
	return all
}

func ver(n uint64, origin string) dataset.Version { return dataset.Version{Counter: n, Origin: origin} }

// entry is a config entry of raw at v, with its digest and lineage.
func entry(v dataset.Version, raw string, inc map[string]uint64) dataset.ConfigEntry {
	return dataset.ConfigEntry{Version: v, Digest: dataset.ConfigDigest([]byte(raw)), Raw: raw, Includes: inc}
}

// announce gives c the data of peer n2 holding the configs es.
func announce(c *Core, es map[string]dataset.ConfigEntry, now time.Time) {
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerUp}, now)
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1,
		Services: map[string]dataset.Instance{}, Configs: es}}, now)
}

func eventsOf[E Event](rd Ready) []E {
	var out []E
	for _, e := range rd.Events {
		if x, ok := e.(E); ok {
			out = append(out, x)
		}
	}
	return out
}

// A peer's config that wins is written, then recorded (version, digest,
// Lamport); an older one, one whose digest lies and one that does not
// parse are not installed (said once per version); a tombstone removes
// the config and stays: an older copy never resurrects the service.
func TestPeerConfigAdoptedRefusedAndTombstoned(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a", map[string]uint64{"n2": 5})}, t0)
	rd := d.drive(t0)
	if len(rd.Configs) != 1 || rd.Configs[0].What != "received from n2" || string(d.svcs["web"].Raw) != "a" {
		t.Fatalf("got configs %+v, want web received from n2", rd.Configs)
	}
	ss := c.State().Services["web"]
	if ss.ConfigVersion != ver(5, "n2") || ss.ConfigDigest != dataset.ConfigDigest([]byte("a")) || c.State().Lamport != 5 {
		t.Fatalf("got state %+v lamport %d, want version 5 from n2 with its digest", ss, c.State().Lamport)
	}
	if ch := eventsOf[ConfigChanged](rd); len(ch) != 1 || ch[0].String() != "config received from n2" {
		t.Fatalf("got %v, want config received from n2", ch)
	}

	lying := entry(ver(6, "n2"), "b", nil)
	lying.Digest = dataset.ConfigDigest([]byte("other"))
	for i := 0; i < 2; i++ {
		announce(c, map[string]dataset.ConfigEntry{"web": lying}, t0)
		rd = d.drive(t0)
		if r := eventsOf[ConfigRefused](rd); len(rd.Configs) != 0 || len(r) != i^1 || (i == 0 && !r[0].Digest) {
			t.Fatalf("heard %d: got configs %v refusals %v, want none installed, refused once (digest)", i, rd.Configs, r)
		}
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(7, "n2"), "bad", nil)}, t0)
	rd = d.drive(t0)
	if r := eventsOf[ConfigRefused](rd); len(r) != 1 || r[0].String() != "config from peer refused, last good config kept" || string(d.svcs["web"].Raw) != "a" {
		t.Fatalf("got refusals %v config %q, want the last good config kept", r, d.svcs["web"].Raw)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(4, "n2"), "old", nil)}, t0)
	if rd = d.drive(t0); len(rd.Configs) != 0 {
		t.Fatalf("an older version was installed: %+v", rd.Configs)
	}

	c.checkNow("web") // the instance is down here: no stop to run first
	rd = d.drive(t0)
	c.checkDone(rd.Check[len(rd.Check)-1], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	d.drive(t0)
	announce(c, map[string]dataset.ConfigEntry{"web": {Version: ver(8, "n2"), Deleted: true}}, t0)
	rd = d.drive(t0)
	if len(rd.Configs) != 1 || rd.Configs[0].Config != nil || d.svcs["web"] != nil {
		t.Fatalf("got configs %+v, want web removed", rd.Configs)
	}
	if c.State().Tombstones["web"] != ver(8, "n2") || c.known("web") || len(eventsOf[ConfigDeletedByPeer](rd)) != 1 {
		t.Fatalf("got tombstones %v known %v events %v, want the tombstone at 8 and web forgotten", c.State().Tombstones, c.known("web"), rd.Events)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(7, "n3"), "again", nil)}, t0)
	if rd = d.drive(t0); len(rd.Configs) != 0 || !c.KnownConfig("web").Deleted {
		t.Fatalf("an older copy resurrected the service: %+v", rd.Configs)
	}
	if e := c.ConfigEntries()["web"]; !e.Deleted || e.Version != ver(8, "n2") {
		t.Fatalf("relayed %+v, want the tombstone", e)
	}
}

// upWeb makes the local instance of web up.
func upWeb(t *testing.T, c *Core, d *cfgDriver) {
	t.Helper()
	c.checkNow("web")
	rd := d.drive(t0)
	c.checkDone(rd.Check[len(rd.Check)-1], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	d.drive(t0)
}

// A deletion stops the instance first, then removes the config and leaves
// a tombstone; a stop that fails deletes nothing.
func TestDeleteStopsThenTombstones(t *testing.T) {
	c, d := cfgCore("n1")
	tk := c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("a")}, What: "created", Now: t0})
	rd := d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("create alone: got %+v, want answered at once", rd.Answers)
	}
	upWeb(t, c, d)

	tk = c.deleteService("web", "", t0)
	rd = d.drive(t0)
	if len(rd.Run) != 1 || rd.Run[0].Kind != "stop" || rd.Run[0].Reason != "service deleted" || len(rd.Configs) != 0 {
		t.Fatalf("got run %v configs %v, want the stop first", rd.Run, rd.Configs)
	}
	c.actionDone("web", "stop", errors.New("app#1: stop failed"), t0)
	rd = d.drive(t0)
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusUp}}, t0)
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err == nil ||
		!strings.HasPrefix(rd.Answers[0].Err.Error(), "not deleted: the stop failed: ") || d.svcs["web"] == nil {
		t.Fatalf("got %+v, config %v, want not deleted and the config kept", rd.Answers, d.svcs["web"])
	}

	c.clearLocal("web", "test", t0)
	d.drive(t0)
	tk = c.deleteService("web", "", t0)
	d.drive(t0)
	c.actionDone("web", "stop", nil, t0)
	rd = d.drive(t0)
	c.checkDone(rd.Check[0], map[string]dataset.Resource{"app#1": {Status: dataset.StatusDown}}, t0)
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil || rd.Answers[0].Result != "deleted" {
		t.Fatalf("got %+v, want deleted", rd.Answers)
	}
	if d.svcs["web"] != nil || c.State().Tombstones["web"].Counter == 0 || c.known("web") {
		t.Fatalf("config %v tombstones %v, want removed and a tombstone", d.svcs["web"], c.State().Tombstones)
	}
}

// An edit is answered once every live peer holds it; a keyword edit that
// a concurrent version from a peer lacks is applied again on top of it
// (a new version), and answered once the peer holds that; a whole-file
// edit fails "changed concurrently"; an edit no peer confirms fails at
// the timeout.
func TestEditWaitsForThePeersAndRebases(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, nil, t0)
	d.drive(t0)
	tk := c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("a\n")}, What: "created", Now: t0})
	rd := d.drive(t0)
	if len(rd.Answers) != 0 {
		t.Fatalf("answered %+v before the peer holds the edit", rd.Answers)
	}
	v1 := c.KnownConfig("web").Version
	announce(c, map[string]dataset.ConfigEntry{"web": entry(v1, "a\n", map[string]uint64{"n1": v1.Counter})}, t0)
	if rd = d.drive(t0); len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("got %+v, want the create answered once n2 holds it", rd.Answers)
	}

	raw := "a\nset x=1\n"
	tk = c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte(raw)}, What: "changed", Op: "set", Kws: []string{"x=1"}, Now: t0})
	d.drive(t0)
	// n2 made its own edit concurrently, at a newer version
	theirs := entry(ver(50, "n2"), "a\ny=2\n", map[string]uint64{"n1": v1.Counter, "n2": 50})
	announce(c, map[string]dataset.ConfigEntry{"web": theirs}, t0)
	rd = d.drive(t0)
	if len(rd.Configs) != 2 || string(d.svcs["web"].Raw) != "a\ny=2\nset x=1\n" || len(eventsOf[ConfigRebased](rd)) != 1 || len(rd.Answers) != 0 {
		t.Fatalf("got configs %+v raw %q answers %v, want theirs then the edit applied again on top", rd.Configs, d.svcs["web"].Raw, rd.Answers)
	}
	mine := c.KnownConfig("web")
	if mine.Version.Counter <= 50 || mine.Includes["n2"] != 50 || mine.Includes["n1"] != mine.Version.Counter {
		t.Fatalf("rebased version %+v, want newer than 50 with both lineages", mine)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(mine.Version, string(d.svcs["web"].Raw), mine.Includes)}, t0)
	if rd = d.drive(t0); len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("got %+v, want the set answered once n2 holds the rebased version", rd.Answers)
	}

	tk = c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("whole\n")}, What: "replaced", Now: t0})
	d.drive(t0)
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(90, "n2"), "z\n", map[string]uint64{"n2": 90})}, t0)
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err == nil || rd.Answers[0].Err.Error() != "web: changed concurrently on n2, retry" {
		t.Fatalf("got %+v, want a whole-file edit to fail changed concurrently on n2", rd.Answers)
	}

	tk = c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("z\nset k=v\n")}, What: "changed", Op: "set", Kws: []string{"k=v"}, Now: t0})
	d.drive(t0)
	c.tick(t0.Add(9 * time.Second))
	if rd = d.drive(t0); len(rd.Answers) != 0 {
		t.Fatalf("got %+v before the timeout", rd.Answers)
	}
	c.heartbeat(PeerEvent{Node: "n2", Kind: PeerData, Data: &dataset.Node{Name: "n2", Monitor: dataset.NodeIdle, Compat: 1,
		Configs: map[string]dataset.ConfigEntry{"web": entry(ver(90, "n2"), "z\n", map[string]uint64{"n2": 90})}}}, t0.Add(10*time.Second))
	c.tick(t0.Add(10*time.Second + time.Millisecond))
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err == nil ||
		!strings.Contains(rd.Answers[0].Err.Error(), "web: the change is installed here, but n2 did not confirm it within 10s") ||
		len(eventsOf[ConfigUnconfirmed](rd)) != 1 {
		t.Fatalf("got %+v, want the edit unconfirmed by n2 at the timeout", rd.Answers)
	}
}

// The answer of an edit promises what is durable: the file is written
// before the state records its version, and the answer waits for that
// state on disk; a file that cannot be written fails the edit.
func TestEditAnswerWaitsForFileAndState(t *testing.T) {
	d := &cfgDriver{svcs: map[string]*config.ServiceConfig{}}
	d.c = New(Config{Name: "n1", Local: d, Configs: fakeCodec{}}, State{})
	c := d.c
	tk := c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("a")}, What: "created", Now: t0})
	rd := c.Ready()
	if len(rd.Configs) != 1 || len(rd.Answers) != 0 || c.State().Services["web"].ConfigDigest != "" {
		t.Fatalf("got %+v, state %+v, want the file to write first, the state untouched", rd, c.State().Services["web"])
	}
	if rd.Persist != nil {
		c.persistDone(rd.PersistSeq, nil, t0)
	}
	if !c.ConfigBusy("web") || c.KnownConfig("web").Digest != dataset.ConfigDigest([]byte("a")) {
		t.Fatal("a config handed out and not written: want it busy, and known as the newest")
	}
	d.svcs["web"] = rd.Configs[0].Config
	c.configDone("web", nil, t0)
	if c.ConfigBusy("web") {
		t.Fatal("busy after its write was reported")
	}
	rd = c.Ready()
	if rd.Persist == nil || rd.Persist.Services["web"].ConfigDigest != dataset.ConfigDigest([]byte("a")) || len(rd.Answers) != 0 {
		t.Fatalf("got persist %v answers %v, want the version to write, no answer yet", rd.Persist, rd.Answers)
	}
	c.persistDone(rd.PersistSeq, nil, t0)
	if a := answers(c)[tk]; a.Ticket != tk || a.Err != nil {
		t.Fatalf("got %+v, want the edit answered once its state is on disk", a)
	}

	d.fail = errors.New("read-only file system")
	tk = c.editConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte("b")}, What: "changed", Now: t0})
	rd = c.Ready()
	c.persistDone(rd.PersistSeq, nil, t0)
	c.configDone("web", d.fail, t0)
	if a := answers(c)[tk]; a.Err == nil || a.Err.Error() != "install: read-only file system" {
		t.Fatalf("got %+v, want install: read-only file system", a)
	}
	if c.KnownConfig("web").Digest != dataset.ConfigDigest([]byte("a")) {
		t.Fatal("a config not written is recorded")
	}
}

// A config changed outside Haven (its file no longer matches the digest
// of its version) wins as a new version.
func TestLocalFileChangedOutsideWins(t *testing.T) {
	c, _ := cfgCore("n1")
	c.State().Services["web"] = ServiceState{ConfigVersion: ver(3, "n1"), ConfigDigest: dataset.ConfigDigest([]byte("a"))}
	c.State().Lamport = 3
	c.checkLocalFile("web", []byte("a"))
	if rd := c.Ready(); rd.Persist != nil {
		t.Fatal("an unchanged file changed the state")
	}
	c.checkLocalFile("web", []byte("hand edit"))
	rd := c.Ready()
	ss := c.State().Services["web"]
	if rd.Persist == nil || ss.ConfigVersion.Counter <= 3 || ss.ConfigDigest != dataset.ConfigDigest([]byte("hand edit")) || len(eventsOf[ConfigChangedOutside](rd)) != 1 {
		t.Fatalf("got %+v events %v, want a new version of the file's content", ss, rd.Events)
	}
}
