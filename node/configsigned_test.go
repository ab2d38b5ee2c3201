package node

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
)

// sigCodec is fakeCodec with the signature check of cluster "prod"
// against keys, as the daemon's codec does it.
type sigCodec struct {
	fakeCodec
	check config.SignatureCheck
}

func (s sigCodec) ParseService(name string, raw []byte) (*config.ServiceConfig, error) {
	// the fake codec refuses a text holding "bad": the signature line, in
	// base64, holds it about once in 400 signatures, so only the text it
	// signs is looked at
	body := raw
	if i := bytes.LastIndex(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"+config.SignaturePrefix)); i >= 0 {
		body = raw[:i+1]
	}
	cfg, err := s.fakeCodec.ParseService(name, body)
	if err != nil {
		return nil, err
	}
	cfg.Raw = raw
	cfg.File = name + ".toml"
	if err := s.check.Check(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// signedCore is n1 of n1 n2 with admin key alice: it returns the core,
// its driver, and a function signing a text for service web with alice.
func signedCore(t *testing.T) (*Core, *cfgDriver, func(text string, serial uint64) string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c, d := cfgCore("n1", "n2")
	c.cfg.SignedConfigs = true
	c.cfg.Configs = sigCodec{check: config.SignatureCheck{Cluster: "prod", Keys: map[string]ed25519.PublicKey{"alice": pub}}}
	sign := func(text string, serial uint64) string {
		out, err := config.SignService([]byte(text), "prod", "web", "alice", priv, serial)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	return c, d, sign
}

// refusals are the config_refused events of rd.
func refusals(rd Ready) []ConfigRefused { return eventsOf[ConfigRefused](rd) }

// A peer (a stolen node) distributes a config that wins by its version but
// is not signed by an admin key: unsigned, signed by a key cluster.toml
// does not list, signed for another cluster, or changed after signing.
// Each is refused with its reason, said once, and the last good (signed)
// config stays installed.
func TestPeerUnsignedConfigRefused(t *testing.T) {
	c, d, sign := signedCore(t)
	good := sign("[app.web]\nstart = /bin/true\n", 1)
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), good, nil)}, t0)
	d.drive(t0)
	if d.svcs["web"] == nil || string(d.svcs["web"].Raw) != good || c.state.Services["web"].ConfigSerial != 1 {
		t.Fatalf("signed config not installed: %v, state %+v", d.svcs["web"], c.state.Services["web"])
	}
	_, eve, _ := ed25519.GenerateKey(rand.Reader)
	byEve, _ := config.SignService([]byte("[app.web]\nstart = /bin/evil\n"), "prod", "web", "alice", eve, 2)
	otherCluster, _ := config.SignService([]byte("[app.web]\nstart = /bin/evil\n"), "test", "web", "alice", eve, 2)
	unknown := strings.Replace(sign("[app.web]\nstart = /bin/evil\n", 2), "alice", "mallory", 1)
	changed := strings.Replace(sign("[app.web]\nstart = /bin/true\n", 2), "/bin/true", "/bin/evil", 1)
	tests := []struct{ name, raw, reason string }{
		{"unsigned", "[app.web]\nstart = /bin/evil\n", "config_refused: unsigned"},
		{"another key named alice", string(byEve), "config_refused: bad signature"},
		{"another cluster", string(otherCluster), "config_refused: bad signature"},
		{"unknown key", unknown, "config_refused: unknown key"},
		{"changed after signing", changed, "config_refused: bad signature"},
	}
	for i, tt := range tests {
		v := ver(uint64(10+i), "n2")
		announce(c, map[string]dataset.ConfigEntry{"web": entry(v, tt.raw, nil)}, t0)
		rd := d.drive(t0)
		rs := refusals(rd)
		if len(rd.Configs) != 0 || len(rs) != 1 || !rs[0].Kept || !strings.Contains(rs[0].Err, tt.reason) || rs[0].From != "n2" {
			t.Errorf("%s: configs %v, refusals %+v", tt.name, rd.Configs, rs)
		}
		if string(d.svcs["web"].Raw) != good || c.KnownConfig("web").Version != ver(5, "n2") {
			t.Errorf("%s: the last good config is not kept: %q at %v", tt.name, d.svcs["web"].Raw, c.KnownConfig("web").Version)
		}
		// said once per version
		announce(c, map[string]dataset.ConfigEntry{"web": entry(v, tt.raw, nil)}, t0)
		if rs := refusals(d.drive(t0)); len(rs) != 0 {
			t.Errorf("%s: refused again: %+v", tt.name, rs)
		}
	}
}

// Replays: a member sends an older signed config of web again, under a
// version that wins. The serials 1, 2, 3 installed in turn leave the
// floor at 2: serial 2 (the config before the newest: a rollback) is
// taken, serial 1 is refused (replayed), from a peer and from this node's
// API alike; the serials then do not move back.
func TestSignedConfigReplayRefused(t *testing.T) {
	c, d, sign := signedCore(t)
	texts := map[uint64]string{}
	for s := uint64(1); s <= 3; s++ {
		texts[s] = sign("[app.web]\nstart = /bin/v"+string(rune('0'+s))+"\n", s)
		announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(s, "n2"), texts[s], nil)}, t0)
		d.drive(t0)
	}
	if ss := c.state.Services["web"]; ss.ConfigSerial != 3 || ss.ConfigSerialFloor != 2 || string(d.svcs["web"].Raw) != texts[3] {
		t.Fatalf("serials %d floor %d, raw %q", ss.ConfigSerial, ss.ConfigSerialFloor, d.svcs["web"].Raw)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(10, "n2"), texts[1], nil)}, t0)
	rd := d.drive(t0)
	if rs := refusals(rd); len(rd.Configs) != 0 || len(rs) != 1 || !strings.Contains(rs[0].Err, "config_refused: replayed: serial 1 is below 2") {
		t.Fatalf("serial 1 replayed: configs %v, refusals %+v", rd.Configs, rs)
	}
	// from this node's API: refused as bad input (exit 2)
	cfg, err := c.cfg.Configs.ParseService("web", []byte(texts[1]))
	if err != nil {
		t.Fatal(err)
	}
	tk := c.Step(ConfigRequest{Service: "web", Config: cfg, What: "replaced", Now: t0})
	rd = d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || !rd.Answers[0].Bad || !strings.Contains(rd.Answers[0].Err.Error(), "replayed") {
		t.Fatalf("API replay: %+v", rd.Answers)
	}
	// the previous config (a rollback) is taken
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(11, "n2"), texts[2], nil)}, t0)
	rd = d.drive(t0)
	if len(rd.Configs) != 1 || string(d.svcs["web"].Raw) != texts[2] {
		t.Fatalf("rollback to serial 2 refused: %v, %+v", rd.Configs, refusals(rd))
	}
	if ss := c.state.Services["web"]; ss.ConfigSerial != 3 || ss.ConfigSerialFloor != 2 {
		t.Errorf("after the rollback: serial %d floor %d", ss.ConfigSerial, ss.ConfigSerialFloor)
	}
}

// A config file changed on this node's disk outside Haven is refused at
// start-up for its signature (ServiceKept with Restore): the content
// recorded for its version is taken back from a peer that holds it,
// though that version does not win over the one recorded here.
func TestRefusedFileTakenBackFromPeer(t *testing.T) {
	c, d, sign := signedCore(t)
	good := sign("[app.web]\nstart = /bin/true\n", 1)
	c.state.Services["web"] = ServiceState{ConfigVersion: ver(4, "n1"), ConfigDigest: dataset.ConfigDigest([]byte(good)), Serials: Serials{ConfigSerial: 1}}
	c.Step(ServiceKept{Service: "web", Restore: true})
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(4, "n1"), good, nil)}, t0)
	rd := d.drive(t0)
	if len(rd.Configs) != 1 || d.svcs["web"] == nil || string(d.svcs["web"].Raw) != good || !strings.HasPrefix(rd.Configs[0].What, "taken back from n2") {
		t.Fatalf("not taken back: %v", rd.Configs)
	}
	if len(eventsOf[ConfigConflict](rd)) != 0 {
		t.Errorf("a conflict said: %v", rd.Events)
	}
	// once taken back, the same entry is not installed again
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(4, "n1"), good, nil)}, t0)
	if rd := d.drive(t0); len(rd.Configs) != 0 {
		t.Errorf("installed again: %v", rd.Configs)
	}
}

// Admin keys removed from cluster.toml: the serials are forgotten at the
// start (no replay rule without signatures; the state is then one the
// previous release reads); with keys they are kept.
func TestSerialsForgottenWithoutAdminKeys(t *testing.T) {
	for _, signed := range []bool{true, false} {
		c, _ := cfgCore("n1", "n2")
		c.cfg.SignedConfigs = signed
		c.state.Services["web"] = ServiceState{Serials: Serials{ConfigSerial: 3, ConfigSerialFloor: 2}}
		c.Step(Started{Now: t0})
		if ss := c.state.Services["web"]; (ss.ConfigSerial == 3 && ss.ConfigSerialFloor == 2) != signed {
			t.Errorf("signed configs %v: serials %d %d after the start", signed, ss.ConfigSerial, ss.ConfigSerialFloor)
		}
	}
}

// The merge budget counts a signed config as at least signedCost: 600
// small signed configs from a peer are taken over two turns (their
// signature checks never all held one), where 600 unsigned ones of the
// same size take one.
func TestSignedConfigsMergeBudget(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	for _, signed := range []bool{false, true} {
		c, d := cfgCore("n1", "n2")
		if signed {
			c.cfg.SignedConfigs = true
			c.cfg.Configs = sigCodec{check: config.SignatureCheck{Cluster: "prod", Keys: map[string]ed25519.PublicKey{"alice": pub}}}
		}
		es := map[string]dataset.ConfigEntry{}
		for i := range 600 {
			name := "svc" + strconv.Itoa(i)
			raw := []byte("[app.a]\nstart = /bin/true\n")
			if signed {
				raw, _ = config.SignService(raw, "prod", name, "alice", priv, 1)
			}
			es[name] = entry(ver(uint64(i+1), "n2"), string(raw), nil)
		}
		announce(c, es, t0)
		first := len(d.drive(t0).Configs)
		want := 600
		if signed {
			want = mergeBudget / signedCost
		}
		if first != want || c.ConfigMergesLeft() != signed {
			t.Errorf("signed %v: %d configs in the first turn, want %d (left over: %v)", signed, first, want, c.ConfigMergesLeft())
		}
		if signed {
			c.mergeMore(t0)
			if n := len(d.drive(t0).Configs); first+n != 600 {
				t.Errorf("second turn: %d more, want %d", n, 600-first)
			}
		}
	}
}
