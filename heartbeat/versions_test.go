package heartbeat

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"haven/dataset"
)

// lastData returns the Format of the last Data event of peer queued.
func lastData(c *core, peer string) (dataset.Format, bool) {
	var f dataset.Format
	got := false
	for {
		select {
		case ev := <-c.events:
			if ev.Kind == Data && ev.Node == peer {
				f, got = ev.Data.Format, true
			}
		default:
			return f, got
		}
	}
}

// TestFormatsOfBothVersions: a frame of the previous release (version 1,
// no fmt, no lvl: the bytes it writes) is read and its sender counts as
// reading version 1; a frame of version 2 is read with what it says; a
// change of a peer's level alone (a beat) hands its copy over again; a
// frame of a version this node does not read is rejected with the
// versions it reads.
func TestFormatsOfBothVersions(t *testing.T) {
	c := boundsCore(t)
	c.receive([]byte(`{"v":1,"k":"full","from":"n2","inc":9,"n":1,"gen":1,"node":{"name":"n2","monitor":"idle","frozen":false,"compat":1,"load15":0,"mem_avail_pct":0,"labels":null,"services":{},"gen":1}}`))
	if f, ok := lastData(c, "n2"); !ok || f != (dataset.Format{Max: 1, Level: 1}) {
		t.Fatalf("previous release's full copy: data %v format %+v, want 1/1", ok, f)
	}
	c.receive([]byte(`{"v":1,"k":"beat","from":"n2","inc":9,"n":2,"gen":1,"fmt":2,"lvl":1}`))
	if f, ok := lastData(c, "n2"); !ok || f != (dataset.Format{Max: 2, Level: 1}) {
		t.Fatalf("upgraded peer's beat: data %v format %+v, want 2/1", ok, f)
	}
	c.receive([]byte(`{"v":2,"k":"beat","from":"n2","inc":9,"n":3,"gen":1,"fmt":2,"lvl":2}`))
	if f, ok := lastData(c, "n2"); !ok || f != (dataset.Format{Max: 2, Level: 2}) {
		t.Fatalf("level moved: data %v format %+v, want 2/2", ok, f)
	}
	c.receive([]byte(`{"v":3,"k":"beat","from":"n2","inc":9,"n":4,"gen":1,"fmt":3,"lvl":3}`))
	if r := rejection(c); !strings.Contains(r, "unsupported protocol version 3 (this node reads 1 to 2") {
		t.Fatalf("version 3: rejection %q", r)
	}
}

// TestEncodeAtTheLevel: a node writes the format of its feature level
// (version 1 while a member runs the previous release, which refuses any
// other) and says what it reads in every message.
func TestEncodeAtTheLevel(t *testing.T) {
	c := boundsCore(t)
	for _, tc := range []struct {
		f    dataset.Format
		want string
	}{
		{dataset.Format{}, `"v":1,"k":"beat","from"`},
		{dataset.Format{Max: 2, Level: 1}, `"v":1,"k":"beat","fmt":2,"lvl":1,`},
		{dataset.Format{Max: 2, Level: 2}, `"v":2,"k":"beat","fmt":2,"lvl":2,`},
	} {
		c.mu.Lock()
		c.setLocalLocked(&dataset.Node{Name: "n1", Gen: 1, Format: tc.f}, nil)
		b := c.encode(c.beatMessage(false, nil))
		c.mu.Unlock()
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("format %+v: %s, want %s", tc.f, b, tc.want)
		}
		if _, err := decode(b); err != nil {
			t.Errorf("format %+v: own frame rejected: %v", tc.f, err)
		}
	}
}

// TestEnvelopeVersions: envelopes of version 1 (written) and 2 (read, for
// the next release) open; 0 and 3 do not.
func TestEnvelopeVersions(t *testing.T) {
	for v, want := range map[byte]bool{0: false, 1: true, 2: true, 3: false} {
		if envVersionOK(v) != want {
			t.Errorf("envelope version %d read: %v, want %v", v, !want, want)
		}
	}
}

// TestNewerPeersFieldsKeepTheDigest: a peer of a newer release sends a
// target with a field this release does not know (last in its struct,
// the rule of dataset.Unknown); the copy held keeps it, so that its digest
// is the peer's and no beat asks for a full copy again and again, and the
// target adopted from it carries the field on.
func TestNewerPeersFieldsKeepTheDigest(t *testing.T) {
	node := `{"name":"n2","monitor":"idle","frozen":false,"compat":1,"load15":0,"mem_avail_pct":0,"labels":null,` +
		`"services":{"web":{"avail":"up","overall":"up","frozen":false,"monitor":{"state":"idle","global_expect":"none","local_expect":"none","state_since":"0001-01-01T00:00:00Z"},` +
		`"placement_leader":false,"flags":"","resources":null,"config_version":{"counter":0,"origin":""}}},` +
		`"targets":{"web":{"expect":"started","id":"x","version":{"counter":1,"origin":"n2"},"t_new":"v"}},"gen":1}`
	target := `{"expect":"started","id":"x","version":{"counter":1,"origin":"n2"},"t_new":"v"}`
	for _, v := range []int{1, 2} {
		var dig uint64
		if v == 1 {
			// the whole-copy digest: SHA-256 of the JSON form
			sum := sha256.Sum256([]byte(node))
			dig = max(1, binary.BigEndian.Uint64(sum[:8]))
		} else {
			// the combinable digest: the target entry hashed as the peer
			// wrote it (its unknown field included)
			var n dataset.Node
			if err := json.Unmarshal([]byte(node), &n); err != nil {
				t.Fatal(err)
			}
			s := headHash(&n, 2) + svcHash("web", n.Services["web"], 2) + entryHash('t', "web", json.RawMessage(target))
			dig = max(1, s)
		}
		c := boundsCore(t)
		c.receive([]byte(fmt.Sprintf(`{"v":%d,"fmt":3,"lvl":%d,"k":"full","from":"n2","inc":9,"n":1,"gen":1,"node":%s}`, v, v, node)))
		c.receive([]byte(fmt.Sprintf(`{"v":%d,"fmt":3,"lvl":%d,"k":"beat","from":"n2","inc":9,"n":2,"gen":1,"dig":%d}`, v, v, dig)))
		if m := c.stats().DigestMismatches; m != 0 {
			t.Fatalf("v%d: %d digest mismatches: the copy of a newer peer's data lost its unknown fields", v, m)
		}
	}
	c := boundsCore(t)
	c.receive([]byte(`{"v":2,"fmt":3,"lvl":2,"k":"full","from":"n2","inc":9,"n":1,"gen":1,"node":` + node + `}`))
	if got := c.peers["n2"].data.Targets["web"].Unknown; got != `"t_new":"v"` {
		t.Fatalf("relayable target lost its unknown field: %q", got)
	}
}

// Insider (a holder of the secret): a message of a run that announced the
// formats it reads, then one of the same run saying nothing of them (or
// less), took the cluster's compat down (every node disabled ha) until the
// run's next message. A run's release reads one set of formats for its
// whole life and its feature level only moves up: such a message is
// malformed, refused and not acted on; an earlier message of the run (a
// beat sent before its first Publish, delivered late) still passes, and a
// new run may announce anything.
func TestVersionsOfARunDoNotGoBack(t *testing.T) {
	c := boundsCore(t)
	c.receive([]byte(`{"v":2,"k":"full","from":"n2","inc":9,"n":5,"gen":1,"fmt":2,"lvl":2,"rel":"0.2.0","node":{"name":"n2","monitor":"idle","frozen":false,"compat":1,"load15":0,"mem_avail_pct":0,"labels":null,"services":{},"gen":1}}`))
	want := dataset.Format{Max: 2, Level: 2, Release: "0.2.0"}
	if f, ok := lastData(c, "n2"); !ok || f != want {
		t.Fatalf("full copy: data %v format %+v, want %+v", ok, f, want)
	}
	for _, b := range []string{
		`{"v":1,"k":"beat","from":"n2","inc":9,"n":6,"gen":1}`,                               // no fmt
		`{"v":1,"k":"beat","from":"n2","inc":9,"n":7,"gen":1,"fmt":1,"lvl":1}`,               // fewer formats
		`{"v":2,"k":"beat","from":"n2","inc":9,"n":8,"gen":1,"fmt":2,"lvl":1,"rel":"0.2.0"}`, // level down
		`{"v":2,"k":"beat","from":"n2","inc":9,"n":9,"gen":1,"fmt":2,"lvl":2,"rel":"9.9.9"}`, // another release
	} {
		c.receive([]byte(b))
		var data, refused bool
		for len(c.events) > 0 {
			ev := <-c.events
			data = data || ev.Kind == Data
			refused = refused || ev.Kind == Rejected && strings.Contains(ev.Reason, "contradicts what its run said before")
		}
		if data || !refused {
			t.Fatalf("%s: acted on %v, refused %v: want refused, not acted on", b, data, refused)
		}
		c.rejLast = map[string]time.Time{} // the next one is reported too
	}
	c.receive([]byte(`{"v":1,"k":"beat","from":"n2","inc":9,"n":3,"gen":1}`)) // sent before the full: late
	if r := rejection(c); r != "" {
		t.Fatalf("an earlier message of the run: rejected %q", r)
	}
	c.receive([]byte(`{"v":2,"k":"beat","from":"n2","inc":9,"n":10,"gen":1,"fmt":2,"lvl":2,"rel":"0.2.0"}`))
	if r := rejection(c); r != "" {
		t.Fatalf("the run's own next beat: rejected %q", r)
	}
	// a new run (a restart on the previous release) says what it reads
	c.receive([]byte(`{"v":1,"k":"full","from":"n2","inc":10,"n":1,"gen":1,"node":{"name":"n2","monitor":"idle","frozen":false,"compat":1,"load15":0,"mem_avail_pct":0,"labels":null,"services":{},"gen":1}}`))
	if f, ok := lastData(c, "n2"); !ok || f != (dataset.Format{Max: 1, Level: 1}) {
		t.Fatalf("a new run of the previous release: data %v format %+v, want 1/1", ok, f)
	}
}
