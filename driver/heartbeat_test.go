package driver

import (
	"reflect"
	"testing"

	"haven/dataset"
	"haven/dataset/datasettest"
	"haven/heartbeat"
	"haven/node"
)

// Data events that say what changed (Event.Changes) are checked for the
// entries they list only, and the core gets changes based on the copy it
// holds: a bad name arriving in a delta is still refused (once), an entry
// removed is gone, an entry not listed is the last copy's (its map shared,
// not checked again); an event not based on the last one taken is checked
// as a whole and handed over as a whole.
func TestHeartbeatChangesCheckedOnly(t *testing.T) {
	fx := &fakeFx{}
	d, _ := newDriver(t, fx)
	var news []node.PeerEvent
	d.Trace = func(in node.Input) {
		if pn, ok := in.(node.PeerNews); ok && pn.Event.Kind == node.PeerData {
			news = append(news, pn.Event)
		}
	}
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Up, Node: "n2"})
	v := dataset.Version{Counter: 5, Origin: "n2"}
	e0 := peerData("n2")
	e0.Configs = map[string]dataset.ConfigEntry{"db": {Version: v, Deleted: true}}
	e0.Targets = map[string]dataset.Target{}
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: e0})
	if len(news) != 1 || news[0].Changes != nil {
		t.Fatalf("the first copy: %+v, want it whole", news)
	}

	// bad names arrive in a delta
	e1, ch1 := datasettest.Next(e0, func(n *dataset.Node) {
		n.Configs["../../victim"] = dataset.ConfigEntry{Version: v, Deleted: true}
		n.Targets["web"] = dataset.Target{Expect: dataset.ExpectPlaced, Node: "../evil", ID: "x", Version: v}
		n.Targets["a b"] = dataset.Target{Expect: dataset.ExpectStopped, ID: "y", Version: v}
	}, nil, []string{"../../victim"}, []string{"web", "a b"})
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: e1, Changes: ch1})
	if len(fx.refused) != 3 || fx.refused[0].Svc != "../../victim" || fx.refused[1].Svc != "a b" || fx.refused[2].Node != "../evil" {
		t.Fatalf("refused %+v, want the config, the target's name and the target's node", fx.refused)
	}
	p, _ := d.Core.Peer("n2")
	if len(news) != 2 || news[1].Changes == nil || news[1].Changes.Base != news[0].Data || p.Data != news[1].Data {
		t.Fatalf("the delta's changes: %+v, want them based on the copy the core held", news[1].Changes)
	}
	if _, ok := p.Data.Configs["../../victim"]; ok || len(p.Data.Targets) != 0 || len(p.Data.Configs) != 1 {
		t.Fatalf("the core holds configs %v targets %v, want the bad names out", p.Data.Configs, p.Data.Targets)
	}

	// a target made valid, a config removed; the targets not listed stay
	// refused (not checked again: not reported again)
	e2, ch2 := datasettest.Next(e1, func(n *dataset.Node) {
		n.Targets["web"] = dataset.Target{Expect: dataset.ExpectStopped, ID: "z", Version: v}
		delete(n.Configs, "db")
	}, nil, []string{"db"}, []string{"web"})
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: e2, Changes: ch2})
	p, _ = d.Core.Peer("n2")
	if len(p.Data.Configs) != 0 || len(p.Data.Targets) != 1 || p.Data.Targets["web"].ID != "z" || len(fx.refused) != 3 {
		t.Fatalf("the core holds configs %v targets %v (refused %d)", p.Data.Configs, p.Data.Targets, len(fx.refused))
	}
	if d.Core.Target("web").ID != "z" {
		t.Fatalf("the valid target was not adopted: %+v", d.Core.Target("web"))
	}

	// a change of an instance only: the checked maps are the last copy's
	e3, ch3 := datasettest.Next(e2, func(n *dataset.Node) {
		n.Services = map[string]dataset.Instance{"web": {Avail: dataset.StatusUp}}
	}, nil, nil, nil)
	ch3.Services["web"] = true
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: e3, Changes: ch3})
	p3, _ := d.Core.Peer("n2")
	if reflect.ValueOf(p3.Data.Targets).Pointer() != reflect.ValueOf(p.Data.Targets).Pointer() ||
		reflect.ValueOf(p3.Data.Configs).Pointer() != reflect.ValueOf(p.Data.Configs).Pointer() {
		t.Fatal("the targets and configs were checked again on a change of an instance")
	}
	if !news[3].Changes.Services["web"] {
		t.Fatalf("the instance's change not handed over: %+v", news[3].Changes)
	}

	// an event based on another copy (one was missed): whole
	e4, ch4 := datasettest.Next(e2, func(n *dataset.Node) {}, nil, nil, nil)
	d.Heartbeat(heartbeat.Event{Kind: heartbeat.Data, Node: "n2", Data: e4, Changes: ch4})
	if news[4].Changes != nil {
		t.Fatalf("an event not based on the last one taken was handed over with changes %+v", news[4].Changes)
	}
	if len(fx.refused) != 3 {
		t.Fatalf("refused again: %+v", fx.refused[3:])
	}
}
