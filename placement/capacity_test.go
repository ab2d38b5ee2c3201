package placement

import (
	"reflect"
	"strings"
	"testing"

	"haven/config"
	"haven/dataset"
)

// capNode is a node offering cpu cores (milli) and mem bytes, with the
// instances of svcs up there.
func capNode(name string, cpu, mem int64, up ...string) dataset.Node {
	n := dataset.Node{Name: name, Capacity: &dataset.Capacity{CPUMilli: cpu, MemBytes: mem}, Services: map[string]dataset.Instance{}}
	for _, s := range up {
		n.Services[s] = dataset.Instance{Avail: dataset.StatusUp}
	}
	return n
}

// The capacity filter: a node is no candidate where the requests held
// there plus the service's own exceed the capacity, the service's own
// instance counted once; a service without requests is never held back; a
// node that publishes no capacity takes no service with requests.
func TestCapacityFilter(t *testing.T) {
	big := &config.ServiceConfig{Name: "big", Nodes: []string{"n1", "n2", "n3", "n4"}, RequestCPU: 3500, RequestMem: 6 << 30}
	web := &config.ServiceConfig{Name: "web", Nodes: []string{"n1", "n2", "n3", "n4"}, RequestCPU: 1000, RequestMem: 1 << 30}
	plain := &config.ServiceConfig{Name: "plain", Nodes: []string{"n1", "n2", "n3", "n4"}}
	svcs := map[string]*config.ServiceConfig{"big": big, "web": web, "plain": plain}
	n4 := capNode("n4", 8000, 8<<30)
	n4.Capacity = nil
	vs := views(
		capNode("n1", 4000, 8<<30, "big"),        // cpu 3.5 of 4 held: web does not fit
		capNode("n2", 5000, 8<<30, "big", "web"), // web runs there: counted once, fits
		capNode("n3", 8000, 8<<30),
		n4, // an earlier release
	)
	rank := func(cfg *config.ServiceConfig, explain bool) Ranking {
		return Rank(Input{Service: cfg.Name, Config: cfg, ClusterNodes: []string{"n1", "n2", "n3", "n4"}, Views: vs,
			Usage: NewUsage(vs, svcs, nil), Explain: explain})
	}
	r := rank(web, true)
	if want := []string{"n2", "n3"}; !reflect.DeepEqual(r.Candidates, want) {
		t.Fatalf("web: candidates %v, want %v (excluded %v)", r.Candidates, want, r.Excluded)
	}
	if got, want := r.Reason("n1"), "capacity: cpu 3.5 of 4 requested, needs 1"; got != want {
		t.Errorf("n1: %q, want %q", got, want)
	}
	if got := r.Reason("n4"); got != ReasonCapacityUnknown {
		t.Errorf("n4: %q", got)
	}
	if !reflect.DeepEqual(r.Placeable, []string{"n1", "n2", "n3", "n4"}) {
		t.Errorf("placeable %v: capacity is an instance filter", r.Placeable)
	}
	for _, v := range r.Verdicts {
		if v.Node == "n1" && !reflect.DeepEqual(v.Reasons, []string{"capacity: cpu 3.5 of 4 requested, needs 1"}) {
			t.Errorf("n1 verdict %v", v.Reasons)
		}
	}
	// big runs on n1 and n2 (both full with it): they stay candidates
	// for it; n3 holds it, n4 does not say
	if r := rank(big, false); !reflect.DeepEqual(r.Candidates, []string{"n1", "n2", "n3"}) {
		t.Errorf("big: %v %v", r.Candidates, r.Excluded)
	}
	// memory: on n2 big and web hold 7GiB of 8GiB: another 2GiB does not fit
	mem := &config.ServiceConfig{Name: "mem", Nodes: []string{"n2"}, RequestMem: 2 << 30}
	svcs["mem"] = mem
	if got, want := rank(mem, false).Reason("n2"), "capacity: mem 7GiB of 8GiB requested, needs 2GiB"; got != want {
		t.Errorf("mem on n2: %q, want %q", got, want)
	}
	// both short
	both := &config.ServiceConfig{Name: "both", Nodes: []string{"n2"}, RequestCPU: 1000, RequestMem: 1536 << 20}
	svcs["both"] = both
	if got := rank(both, false).Reason("n2"); !strings.Contains(got, "cpu 4.5 of 5 requested, needs 1") || !strings.Contains(got, "mem 7GiB of 8GiB requested, needs 1.5GiB") {
		t.Errorf("both on n2: %q", got)
	}
	delete(svcs, "mem")
	delete(svcs, "both")
	// no requests: every node, n4 included
	if r := rank(plain, false); len(r.Candidates) != 4 {
		t.Errorf("plain: %v %v", r.Candidates, r.Excluded)
	}
	// a claim (ready) and an action hold capacity, a stopped or failed
	// instance does not
	for _, tt := range []struct {
		st   dataset.Instance
		hold bool
	}{
		{dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Ready}}, true},
		{dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Starting}}, true},
		{dataset.Instance{Avail: dataset.StatusUp, Monitor: dataset.InstanceMonitor{State: dataset.Stopping}}, true},
		{dataset.Instance{Avail: dataset.StatusWarn}, true},
		{dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.StartFailed}}, false},
		{dataset.Instance{Avail: dataset.StatusDown, Monitor: dataset.InstanceMonitor{State: dataset.Idle}}, false},
	} {
		if got := Holds(StateOf(tt.st)); got != tt.hold {
			t.Errorf("%s/%s holds %v, want %v", tt.st.Avail, tt.st.Monitor.State, got, tt.hold)
		}
	}
	// a down node's instances hold nothing
	v := vs["n1"]
	v.Status = dataset.NodeDown
	vs["n1"] = v
	if u := NewUsage(vs, svcs, nil).Node("n1"); u.Requested != (Resources{}) {
		t.Errorf("down n1 holds %+v", u.Requested)
	}
	// without requests anywhere, no usage at all (no filter, no cost)
	if NewUsage(vs, map[string]*config.ServiceConfig{"plain": plain}, nil) != nil {
		t.Error("usage without requests")
	}
}
