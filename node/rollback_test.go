package node

import (
	"errors"
	"testing"

	"haven/dataset"
)

// Every node keeps the config a version replaced (with the state that
// records the new one); a config installed again unchanged keeps it; an
// install that failed in between leaves none rather than an older one.
// svcmgr rollback installs the previous text again as a new version and
// makes a rollout record marked as a rollback of its digest; a rollback
// whose config was not written (the daemon stopped in between, or the
// write failed) is ordered again by its maker.
func TestPreviousConfigKeptAndRolledBack(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a", map[string]uint64{"n2": 5})}, t0)
	d.drive(t0)
	if p := c.State().Services["web"].Previous; p != nil {
		t.Fatalf("a first config replaced nothing: previous %+v", p)
	}
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(6, "n2"), "b", map[string]uint64{"n2": 6})}, t0)
	d.drive(t0)
	ss := c.State().Services["web"]
	if p := ss.Previous; p == nil || p.Raw != "a" || p.Digest != dataset.ConfigDigest([]byte("a")) {
		t.Fatalf("after b replaced a: previous %+v", p)
	}
	// the rollback by hand: "a" again, as a new version, and its record
	tk := c.Step(RollbackRequest{Service: "web", Now: t0})
	rd := d.drive(t0)
	ss = c.State().Services["web"]
	if string(d.svcs["web"].Raw) != "a" || ss.ConfigDigest != dataset.ConfigDigest([]byte("a")) || !ss.ConfigVersion.Newer(ver(6, "n2")) {
		t.Fatalf("after the rollback: config %q version %+v", d.svcs["web"].Raw, ss.ConfigVersion)
	}
	r := ss.Rollout
	if r == nil || !r.Rollback || r.Digest != dataset.ConfigDigest([]byte("a")) || r.FailureAction != "pause" || r.Cause != "by hand (svcmgr rollback)" {
		t.Fatalf("the rollback's record: %+v", r)
	}
	if len(rd.Answers) != 1 || rd.Answers[0].Ticket != tk || rd.Answers[0].Err != nil {
		t.Fatalf("the answer: %+v", rd.Answers)
	}
	if ev := eventsOf[RollbackStarted](rd); len(ev) != 1 {
		t.Fatalf("rollback_started: %v", rd.Events)
	}
	if p := ss.Previous; p == nil || p.Raw != "b" {
		t.Fatalf("after the rollback the previous config is the one rolled back: %+v", p)
	}
	// the same config again (a conflict resolved to the same text) keeps it
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(50, "n2"), "a", map[string]uint64{"n2": 50})}, t0)
	d.drive(t0)
	if p := c.State().Services["web"].Previous; p == nil || p.Raw != "b" {
		t.Fatalf("the same text installed again: previous %+v", p)
	}
	// the maker's rollback whose write failed: ordered again at its
	// next pass, once no write is in flight
	d.fail = errors.New("disk full")
	c.Step(RollbackRequest{Service: "web", Now: t0})
	d.drive(t0)
	d.fail = nil
	ss = c.State().Services["web"]
	if ss.Rollout.Digest != dataset.ConfigDigest([]byte("b")) || ss.ConfigDigest == ss.Rollout.Digest {
		t.Fatalf("the failed write: record %+v, config %s", ss.Rollout, ss.ConfigDigest)
	}
	c.rollbackPass(c.Snapshot(t0), t0, nil)
	d.drive(t0)
	if got := string(d.svcs["web"].Raw); got != "b" || c.State().Services["web"].ConfigDigest != c.State().Services["web"].Rollout.Digest {
		t.Fatalf("the rollback not written was not ordered again: config %q", got)
	}
	// an install that fails between two versions: none kept, not an
	// older one
	d.fail = errors.New("disk full")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(90, "n2"), "c", map[string]uint64{"n2": 90})}, t0)
	d.drive(t0)
	d.fail = nil
	ss = c.State().Services["web"]
	ss2 := ss
	keepPrevious(&ss2, []byte("c"), dataset.ConfigDigest([]byte("d")))
	if ss2.Previous != nil {
		t.Fatalf("a text handed out that is not the one recorded was kept: %+v", ss2.Previous)
	}
	// a file changed outside Haven, found at start-up: the text it
	// replaced is gone, so none is kept (never a rollback two back)
	if c.State().Services["web"].Previous == nil {
		t.Fatal("no previous config before the hand edit")
	}
	c.checkLocalFile("web", []byte("handmade"))
	if p := c.State().Services["web"].Previous; p != nil {
		t.Fatalf("after a hand edit: previous %+v", p)
	}
}

// No previous config kept: the rollback is refused, and nothing changes.
func TestRollbackWithoutPreviousRefused(t *testing.T) {
	c, d := cfgCore("n1", "n2")
	announce(c, map[string]dataset.ConfigEntry{"web": entry(ver(5, "n2"), "a", map[string]uint64{"n2": 5})}, t0)
	d.drive(t0)
	c.Step(RollbackRequest{Service: "web", Now: t0})
	rd := d.drive(t0)
	if len(rd.Answers) != 1 || rd.Answers[0].Err == nil || len(rd.Configs) != 0 || c.State().Services["web"].Rollout != nil {
		t.Fatalf("a rollback with no previous config: answers %+v, configs %d", rd.Answers, len(rd.Configs))
	}
}
