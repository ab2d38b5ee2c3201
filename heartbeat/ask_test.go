package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// An ask reaches the member it is for as an Asked event, and its answer
// comes back as an Answered event with the same id; asks to a member that
// is down fail at once.
func TestAskAndAnswer(t *testing.T) {
	c := newMemCluster(t, 3)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	c.net.Flush()
	c.collect()
	id, err := c.hb["n01"].Ask("n02", "svclog", json.RawMessage(`{"svc":"web"}`))
	if err != nil {
		t.Fatal(err)
	}
	c.net.Flush()
	c.collect()
	var asked *Event
	for i, ev := range c.evs["n02"] {
		if ev.Kind == Asked {
			asked = &c.evs["n02"][i]
		}
	}
	if asked == nil || asked.Node != "n01" || asked.ID != id || asked.Op != "svclog" || string(asked.Body) != `{"svc":"web"}` {
		t.Fatalf("n02 got %+v, want the ask %d of n01", asked, id)
	}
	for _, ev := range c.evs["n03"] {
		if ev.Kind == Asked {
			t.Fatalf("n03 got an ask meant for n02: %+v", ev)
		}
	}
	c.hb["n02"].Answer("n01", id, json.RawMessage(`["line 1"]`), "")
	c.net.Flush()
	c.collect()
	var ans *Event
	for i, ev := range c.evs["n01"] {
		if ev.Kind == Answered {
			ans = &c.evs["n01"][i]
		}
	}
	if ans == nil || ans.Node != "n02" || ans.ID != id || string(ans.Body) != `["line 1"]` || ans.Reason != "" {
		t.Fatalf("n01 got %+v, want the answer to %d", ans, id)
	}

	c.net.Crash("n03")
	c.net.Advance(20e9)
	c.collect()
	if _, err := c.hb["n01"].Ask("n03", "svclog", nil); !errors.Is(err, ErrNotUp) {
		t.Fatalf("ask to a down member: err %v, want ErrNotUp", err)
	}
	if _, err := c.hb["n01"].Ask("n09", "svclog", nil); err == nil {
		t.Fatal("ask to a non-member: no error")
	}
}

// A member that asks faster than the owner reads is answered "busy" past
// maxAsksQueued waiting asks: it cannot grow the owner's backlog.
func TestAsksQueuedAreBounded(t *testing.T) {
	c := newMemCluster(t, 2)
	for _, m := range c.members {
		c.publish(m.Name, svcNode(m.Name, 1, "web"))
	}
	c.net.Flush()
	c.collect()
	// Fill n02's events channel so that asks wait in its backlog.
	n := eventBuffer + maxAsksQueued + 5
	for i := 0; i < n; i++ {
		if _, err := c.hb["n01"].Ask("n02", "svclog", json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		c.net.Flush()
	}
	c.collect()
	c.net.Advance(2e9) // a beat of n01 drains n02's backlog
	c.collect()
	asked, busy := 0, 0
	for _, ev := range c.evs["n02"] {
		if ev.Kind == Asked {
			asked++
		}
	}
	for _, ev := range c.evs["n01"] {
		if ev.Kind == Answered && strings.HasPrefix(ev.Reason, "busy") {
			busy++
		}
	}
	if asked+busy != n || busy == 0 || asked > eventBuffer+maxAsksQueued {
		t.Fatalf("%d asks: %d delivered, %d answered busy; want at most %d delivered and the rest busy", n, asked, busy, eventBuffer+maxAsksQueued)
	}
}

// Malformed asks are rejected by decode.
func TestDecodeRejectsBadAsks(t *testing.T) {
	for _, b := range []string{
		`{"v":1,"k":"ask","from":"n01","op":"svclog"}`,
		`{"v":1,"k":"ask","from":"n01","id":3}`,
		`{"v":1,"k":"answer","from":"n01"}`,
		`{"v":1,"k":"ask","from":"n01","id":3,"op":"x","body":"` + strings.Repeat("a", maxAskBody) + `"}`,
	} {
		if _, err := decode([]byte(b)); err == nil {
			t.Errorf("decode(%.60s...) accepted a bad ask", b)
		}
	}
}
