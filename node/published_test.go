package node

import (
	"reflect"
	"testing"

	"haven/dataset"
	"haven/node/instsm"
)

// The resources the dataset shows of an instance are the same map from
// one dataset to the next while they do not change (no copy per publish),
// and a new map, never the old one written, when they do: a check's
// result, a restart count of a monitored resource.
func TestPublishedResourcesReusedUntilChanged(t *testing.T) {
	c := New(Config{Name: "n1", WriteThrough: true}, State{})
	spec := instsm.Spec{Local: true, Runnable: true, Monitored: true,
		Resources: []instsm.ResourceSpec{{RID: "app#1", Monitor: true, Restart: 2}, {RID: "fs#1"}}}
	c.addInstance("web", spec, t0)
	check := func(app dataset.Status) {
		c.checkNow("web")
		rd := c.Ready()
		c.checkDone(rd.Check[len(rd.Check)-1], map[string]dataset.Resource{"app#1": {Status: app}, "fs#1": {Status: dataset.StatusUp}}, t0)
		c.Ready()
	}
	res := func() map[string]dataset.Resource { return c.Dataset(dataset.Node{}).Services["web"].Resources }
	same := func(a, b map[string]dataset.Resource) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	check(dataset.StatusUp)
	first := res()
	if first["app#1"].RestartRemaining != 2 || first["fs#1"].Status != dataset.StatusUp {
		t.Fatalf("published %+v, want app#1 with 2 restarts left, fs#1 up", first)
	}
	check(dataset.StatusUp) // checked again, the same
	if again := res(); !same(first, again) {
		t.Fatal("unchanged resources were copied again")
	}

	check(dataset.StatusDown)
	down := res()
	if down["app#1"].Status != dataset.StatusDown || same(first, down) || first["app#1"].Status != dataset.StatusUp {
		t.Fatalf("after app#1 went down: published %+v (the earlier map %+v)", down, first)
	}

	ss := c.state.Services["web"]
	ss.Restarts = map[string]RestartCount{"app#1": {Spent: 1, LastFailure: "down"}}
	c.state.Services["web"] = ss
	counted := res()
	if r := counted["app#1"]; r.RestartRemaining != 1 || r.LastFailure != "down" || same(counted, down) || down["app#1"].RestartRemaining != 2 {
		t.Fatalf("after a restart: published %+v (the earlier map %+v)", counted, down)
	}
	if again := res(); !same(counted, again) {
		t.Fatal("unchanged counted resources were copied again")
	}
}
