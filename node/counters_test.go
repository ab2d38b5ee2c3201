package node

import (
	"math"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
)

// Attack (issue 19, item 7): an insider announces a config at version
// counter 2^64-1 (and one whose lineage claims edits after its version).
// Before, the entry won for good and poisoned the Lamport clock: the next
// edit's version wrapped to 0, was acknowledged at once (counter 0 counted
// as included) and lost. Now they are refused, the clock is untouched, and
// an edit after them is installed and acknowledged only once the peer
// holds it.
func TestInsaneCountersRefused(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a\n", map[string]uint64{"n2": 5})}, t0)
	d.drive(t0)
	for _, evil := range []dataset.ConfigEntry{
		entry(ver(math.MaxUint64, "n2"), "evil\n", map[string]uint64{"n2": math.MaxUint64}),
		entry(ver(dataset.MaxCounter+1, "n2"), "evil\n", nil),
		entry(ver(6, "n2"), "evil\n", map[string]uint64{"n1": math.MaxUint64, "n2": 6}),
	} {
		announce(c, map[string]dataset.ConfigEntry{"web": evil}, t0)
		rd := d.drive(t0)
		if r := eventsOf[ConfigRefused](rd); len(rd.Configs) != 0 || len(r) != 1 || r[0].From != "n2" || r[0].Err == "" {
			t.Fatalf("entry %+v: got configs %+v refusals %+v, want it refused", evil.Version, rd.Configs, r)
		}
		if l := c.State().Lamport; l != 5 {
			t.Fatalf("entry %+v moved the Lamport clock to %d", evil.Version, l)
		}
	}
	c.MergeTargets(map[string]dataset.Target{"web": {Expect: dataset.ExpectStopped, ID: "x", Version: ver(math.MaxUint64, "n2")}}, nil)
	c.MergeClears(map[string]dataset.ClearRequest{"web": {Version: ver(math.MaxUint64, "n2")}}, t0)
	if ss := c.State().Services["web"]; ss.Target.Version.Counter != 0 || ss.Clear.Version.Counter != 0 || c.State().Lamport != 5 {
		t.Fatalf("a target or clear at 2^64-1 was taken: %+v lamport %d", ss, c.State().Lamport)
	}

	raw := "a\nset x=1\n"
	tk := c.EditConfig(ConfigRequest{Service: "web", Config: &config.ServiceConfig{Name: "web", Raw: []byte(raw)}, What: "changed", Op: "set", Kws: []string{"x=1"}, Now: t0})
	rd := d.drive(t0)
	mine := c.KnownConfig("web")
	if len(rd.Answers) != 0 || mine.Version.Counter != 6 || string(d.svcs["web"].Raw) != raw {
		t.Fatalf("edit: answers %+v version %+v raw %q, want unanswered at version 6", rd.Answers, mine.Version, d.svcs["web"].Raw)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(mine.Version, raw, mine.Includes)}, t0)
	if rd = d.drive(t0); len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("got %+v, want the edit answered once n2 holds it", rd.Answers)
	}
	if !strings.Contains(string(d.svcs["web"].Raw), "x=1") {
		t.Fatal("the edit was lost")
	}
}

// An edit has a counter: counter 0 is never included in any content.
func TestIncludesEditNeverCounterZero(t *testing.T) {
	if (dataset.ConfigEntry{Includes: map[string]uint64{}}).IncludesEdit("n1", 0) {
		t.Fatal("counter 0 counted as included")
	}
}
