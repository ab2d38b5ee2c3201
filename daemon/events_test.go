package daemon

import (
	"fmt"
	"testing"

	"haven/api"
	"haven/dataset"
	"haven/node"
)

// A subscriber that does not read loses events, and is told how many
// before the next one it gets.
func TestBusTellsASlowSubscriberWhatItLost(t *testing.T) {
	b := newBus()
	ch := b.subscribe()
	for i := 0; i < busBuffer+10; i++ {
		b.publish(api.Event{Kind: "x", Message: fmt.Sprint(i)})
	}
	for i := 0; i < busBuffer; i++ {
		if e := <-ch; e.Message != fmt.Sprint(i) {
			t.Fatalf("event %d: got %q", i, e.Message)
		}
	}
	b.publish(api.Event{Kind: "x", Message: "after"})
	if e := <-ch; e.Kind != "lost" || e.Message != "lost 10 events: this reader was too slow" || e.Fields["lost"] != "10" {
		t.Fatalf("got %+v, want a lost marker of 10 events", e)
	}
	if e := <-ch; e.Message != "after" {
		t.Fatalf("got %+v after the marker, want the next event", e)
	}
	select {
	case e := <-ch:
		t.Fatalf("got an extra event %+v", e)
	default:
	}
}

// A typed event of the core reaches the events stream with its fields.
func TestTypedEventFields(t *testing.T) {
	f := eventFields(node.InstanceMonitor{Svc: "web", From: dataset.Idle, To: dataset.Starting, Reason: "ready period ended"})
	if f["svc"] != "web" || f["from"] != "idle" || f["to"] != "starting" || f["reason"] != "ready period ended" {
		t.Fatalf("got %v", f)
	}
	tg := dataset.Target{Expect: dataset.ExpectStarted, ID: "n1-3", Version: dataset.Version{Counter: 3, Origin: "n1"}}
	f = eventFields(node.TargetReached{Svc: "web", Target: tg, Unknown: []string{"n3"}})
	if f["target"] != "started" || f["id"] != "n1-3" || f["unknown"] != `["n3"]` {
		t.Fatalf("got %v", f)
	}
}
