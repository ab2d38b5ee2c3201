package daemon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node"
)

func formatState(level int) durable {
	return durable{Lamport: 7, Services: map[string]durableService{"web": {Frozen: true, ConfigVersion: dataset.Version{Counter: 3, Origin: "n1"}}},
		FeatureLevel: level}
}

// TestStateFormatByLevel: at feature level 1 the file is the previous
// release's format to the byte (version 1, no level: a node taken back
// to it reads it); at level 2 it is version 2 with the level first, and
// both read back with their level.
func TestStateFormatByLevel(t *testing.T) {
	b1, err := encodeDurable(formatState(1))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b1, []byte("{\n  \"version\": 1,\n  \"sha256\": ")) || bytes.Contains(b1, []byte(levelKey)) {
		t.Fatalf("level 1 file is not the previous release's format:\n%s", b1)
	}
	b0, _ := encodeDurable(formatState(0))
	if !bytes.Equal(b0, b1) {
		t.Fatal("level 0 (never moved) and 1 write different files")
	}
	b2, err := encodeDurable(formatState(2))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b2, []byte("{\n  \"requires_feature_level\": 2,\n  \"version\": 2,\n")) {
		t.Fatalf("level 2 file:\n%s", b2)
	}
	for level, b := range map[int][]byte{1: b1, 2: b2} {
		d, err := decodeState(b)
		if err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		if d.FeatureLevel != level || d.Lamport != 7 || !d.Services["web"].Frozen {
			t.Fatalf("level %d read back as %+v", level, d)
		}
	}
}

// TestStateOfANewerReleaseRefused: a file of a newer release (a newer
// envelope, or a level beyond what this release reads) is refused with
// the file named and the newer release as the remedy, never --new-state;
// a malformed version 2 envelope is refused as damaged.
func TestStateOfANewerReleaseRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for name, tc := range map[string]struct {
		body, want string
		newer      bool
	}{
		"envelope 3":           {`{"version": 3, "sha256": "x", "state": {}, "whatever_3_adds": 1}`, "state format version 3, written by a newer release", true},
		"level 3":              {`{"requires_feature_level": 3, "version": 2, "sha256": "x", "state": {}}`, "written at cluster feature level 3", true},
		"version 2, no level":  {`{"version": 2, "sha256": "x", "state": {}}`, "requires_feature_level: missing from a version 2 envelope", false},
		"version 1 and level":  {`{"requires_feature_level": 2, "version": 1, "sha256": "x", "state": {}}`, "not part of a version 1 envelope", false},
		"level 1 in version 2": {`{"requires_feature_level": 1, "version": 2, "sha256": "x", "state": {}}`, "want a number of 2 or more", false},
	} {
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadDurable(path)
		var ce *config.Error
		if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a config error naming %s with %q", name, err, path, tc.want)
			continue
		}
		if newer := strings.Contains(err.Error(), "install the newer release again"); newer != tc.newer || (tc.newer && strings.Contains(err.Error(), "--new-state")) {
			t.Errorf("%s: remedy: %v", name, err)
		}
	}
	if err := checkStateLevel(path, 2, 1); err == nil || !strings.Contains(err.Error(), "reads formats up to 1") {
		t.Errorf("HAVEN_FORMAT=1 on a level-2 state: %v", err)
	}
}

// FuzzDecodeState: state files of both versions, damaged at will, are
// read or refused, never a panic; what is read writes back and reads
// again to the same state and level.
func FuzzDecodeState(f *testing.F) {
	for _, level := range []int{1, 2} {
		b, _ := encodeDurable(formatState(level))
		f.Add(b)
	}
	f.Add([]byte(`{"lamport": 1, "node_frozen": false, "services": {}}`))
	f.Add([]byte(`{"requires_feature_level": 9, "version": 2, "sha256": "", "state": null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := decodeState(in)
		if err != nil {
			return
		}
		b, err := encodeDurable(d)
		if err != nil {
			return // a value JSON cannot write (none today)
		}
		d2, err := decodeState(b)
		if err != nil || d2.FeatureLevel != max(d.FeatureLevel, 1) && d.FeatureLevel != 0 {
			t.Fatalf("written back %q, read again: level %d -> %d, %v", b, d.FeatureLevel, d2.FeatureLevel, err)
		}
	})
}

// TestStateKeepsNewerFields: a target or clear adopted from a newer peer
// keeps that release's fields in the state file from level 2 on (read
// back with them); at level 1 they are left out, since the first
// release refuses a key it does not know.
func TestStateKeepsNewerFields(t *testing.T) {
	st := formatState(1)
	web := st.Services["web"]
	web.Target = dataset.Target{Expect: "started", ID: "x", Version: dataset.Version{Counter: 2, Origin: "n3"}, Unknown: `"t_new":{"a":1}`}
	web.Clear.Unknown = `"k_new":true`
	st.Services["web"] = web
	b1, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b1, []byte("t_new")) || bytes.Contains(b1, []byte("k_new")) || formatState(1).Services["web"].Target.Unknown != "" {
		t.Fatalf("level 1 wrote a newer release's field:\n%s", b1)
	}
	if st.Services["web"].Target.Unknown == "" {
		t.Fatal("encoding at level 1 changed the state it encoded")
	}
	st.FeatureLevel = 2
	b2, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeState(b2)
	if err != nil {
		t.Fatalf("%v\n%s", err, b2)
	}
	if d.Services["web"].Target.Unknown != `"t_new":{"a":1}` || d.Services["web"].Clear.Unknown != `"k_new":true` {
		t.Fatalf("level 2 lost a newer release's fields: %+v", d.Services["web"])
	}
}

// TestStateSplitFreezeAtLevel1: the split freeze and a held
// monitor_action are fields the first release does not know: at level 1
// the split freeze is written as the node's freeze and the held action
// is left out, so that a node taken back to that release reads its file
// (frozen, as that release froze a node that lost the quorum); from
// level 2 on both are written and read back.
func TestStateSplitFreezeAtLevel1(t *testing.T) {
	st := formatState(1)
	st.SplitFrozen, st.SplitFrozenReason = true, "quorum lost"
	web := st.Services["web"]
	web.GaveUp, web.ActionHeld = "no other candidate", "switch"
	st.Services["web"] = web
	b1, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b1, []byte("split_frozen")) || bytes.Contains(b1, []byte("action_held")) {
		t.Fatalf("level 1 wrote a field the first release refuses:\n%s", b1)
	}
	d, err := decodeState(b1)
	if err != nil || !d.NodeFrozen || d.NodeFrozenReason != "quorum lost" || d.SplitFrozen {
		t.Fatalf("level 1 read back as %+v (%v): want the node frozen", d, err)
	}
	if !st.SplitFrozen || st.Services["web"].ActionHeld == "" {
		t.Fatal("encoding at level 1 changed the state it encoded")
	}
	st.FeatureLevel = 2
	b2, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	d, err = decodeState(b2)
	if err != nil || !d.SplitFrozen || d.NodeFrozen || d.Services["web"].ActionHeld != "switch" {
		t.Fatalf("level 2 read back as %+v (%v)", d, err)
	}
}

// TestStateRolloutAtLevel1: the config an instance runs, the rollout
// record and the node's turn are fields the first release does not know:
// left out at level 1, written and read back from level 2 on.
func TestStateRolloutAtLevel1(t *testing.T) {
	st := formatState(1)
	web := st.Services["web"]
	web.RunDigest = "abc"
	web.Rollout = &dataset.Rollout{ID: "n1-3", Digest: "abc", Nodes: []string{"n1"}, Parallelism: 1, FailureAction: "pause"}
	web.RolloutMark = &dataset.RolloutMark{ID: "n1-3", State: dataset.TurnOK}
	// a restart_window's times of the restarts it counts: the count stays
	web.Restarts = map[string]node.RestartCount{"app#main": {Spent: 1, At: []time.Time{time.Unix(1700000000, 0)}, LastFailure: "not running", FailedAt: time.Unix(1700000000, 0)}}
	st.Services["web"] = web
	b1, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_digest", "rollout", "rollout_mark", "at"} {
		if bytes.Contains(b1, []byte(`"`+k+`"`)) {
			t.Fatalf("level 1 wrote %s, which the first release refuses:\n%s", k, b1)
		}
	}
	if _, err := decodeState(b1); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b1, []byte(`"spent": 1`)) && !bytes.Contains(b1, []byte(`"spent":1`)) {
		t.Fatalf("level 1 lost the restarts spent:\n%s", b1)
	}
	if st.Services["web"].Rollout == nil || len(st.Services["web"].Restarts["app#main"].At) != 1 {
		t.Fatal("encoding at level 1 changed the state it encoded")
	}
	st.FeatureLevel = 2
	b2, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeState(b2)
	if w := d.Services["web"]; err != nil || w.RunDigest != "abc" || w.Rollout == nil || w.Rollout.ID != "n1-3" || w.RolloutMark == nil || w.RolloutMark.State != dataset.TurnOK {
		t.Fatalf("level 2 read back as %+v (%v)", d.Services["web"], err)
	}
}

// TestStateOrderSigsAtLevel1: the admin signatures of a target and a
// tombstone and the targets' serial floor are fields the first release
// does not know: left out at level 1 (the orders are not required then),
// written and read back from level 2 on.
func TestStateOrderSigsAtLevel1(t *testing.T) {
	st := formatState(1)
	web := st.Services["web"]
	web.Target = dataset.Target{Expect: dataset.ExpectStopped, ID: "n1-4", Version: dataset.Version{Counter: 4, Origin: "n1"}, Sig: "alice 5 sig"}
	web.TargetSerial = 5
	st.Services["web"] = web
	st.Tombstones = map[string]dataset.Version{"db": {Counter: 3, Origin: "n2"}}
	st.TombstoneSigs = map[string]string{"db": "alice 6 sig"}
	b1, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sig", "target_serial", "tombstone_sigs"} {
		if bytes.Contains(b1, []byte(`"`+k+`"`)) {
			t.Fatalf("level 1 wrote %s, which the first release refuses:\n%s", k, b1)
		}
	}
	if st.Services["web"].Target.Sig == "" || st.TombstoneSigs["db"] == "" {
		t.Fatal("encoding at level 1 changed the state it encoded")
	}
	st.FeatureLevel = 2
	b2, err := encodeDurable(st)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeState(b2)
	if w := d.Services["web"]; err != nil || w.Target.Sig != "alice 5 sig" || w.TargetSerial != 5 || d.TombstoneSigs["db"] != "alice 6 sig" {
		t.Fatalf("level 2 read back as %+v, %v (%v)", d.Services["web"], d.TombstoneSigs, err)
	}
}
