package node_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/node"
	"haven/node/datadriven"
)

// TestDatadrivenCluster runs the files of testdata/cluster/: several node
// cores, each driven through Step by a harness of TestDatadriven, and a
// network between them that carries the heartbeats (up, down, each
// node's dataset), in the manner of etcd raft's interaction environment.
// One clock for all. go test ./node -run TestDatadrivenCluster -update
// rewrites the expected outputs.
func TestDatadrivenCluster(t *testing.T) {
	datadriven.RunDir(t, "testdata/cluster/*.txt", *update, func(t *testing.T) func(*datadriven.Cmd) (string, error) {
		return (&env{t: t, now: ddT0}).step
	})
}

// env is the nodes of a cluster and the network between them. Its
// resources are a truth of their own (what runs where): an action ends
// as it was ordered, a check reads the truth.
type env struct {
	t     *testing.T
	now   time.Time
	names []string
	nodes map[string]*harness
	// links are the pairs that hear each other ("a b" with a < b)
	links map[string]bool
	// up is what runs: node -> service -> up
	up   map[string]map[string]bool
	gens map[string]uint64
}

// step maps a command to the nodes' inputs, then prints what each node's
// Readies asked, each line prefixed with the node's name. The commands:
//
//	cluster N1,N2,N3 [quorum=A ...]  a core per node (each a member;
//	                       the other words as TestDatadriven's new)
//	service SVC            (input: its config) installed on every node
//	on N CMD ...           a command of TestDatadriven on node N (not
//	                       advance, tick, new, check, action-done)
//	connect                every pair of nodes hears each other
//	cut N                  N hears no one and no one hears N
//	heal N                 N and the others hear each other again
//	tick [D]               the clock moves on by D, every node ticks
//	                       (woken first when its wake-up is due)
//	deliver                each node that asked to publish sends its
//	                       dataset to the nodes it reaches
//	stabilize              deliver, decide (a pass on every node whose
//	                       view changed), end the actions and the checks
//	                       in flight, until nothing is left to do
func (e *env) step(d *datadriven.Cmd) (string, error) {
	switch d.Name {
	case "cluster":
		return e.cluster(d)
	case "service":
		return e.each(func(h *harness) (string, error) { return h.step(d) })
	case "on":
		if len(d.Args) < 2 {
			return "", d.Errorf("want a node and a command")
		}
		h := e.nodes[d.Args[0]]
		if h == nil {
			return "", d.Errorf("no node %s", d.Args[0])
		}
		switch d.Args[1] {
		case "advance", "tick", "new", "check", "action-done":
			return "", d.Errorf("%s is the environment's", d.Args[1])
		}
		out, err := h.step(&datadriven.Cmd{Pos: d.Pos, Name: d.Args[1], Args: d.Args[2:], Input: d.Input})
		return prefix(h.name, out), err
	case "connect":
		var b strings.Builder
		for i, a := range e.names {
			for _, c := range e.names[i+1:] {
				b.WriteString(e.link(a, c, true))
			}
		}
		return done(b.String()), nil
	case "cut", "heal":
		if len(d.Args) != 1 || e.nodes[d.Args[0]] == nil {
			return "", d.Errorf("want a node")
		}
		var b strings.Builder
		for _, o := range e.names {
			if o != d.Args[0] {
				b.WriteString(e.link(d.Args[0], o, d.Name == "heal"))
			}
		}
		return done(b.String()), nil
	case "tick":
		if len(d.Args) > 0 {
			dur, err := time.ParseDuration(d.Args[0])
			if err != nil {
				return "", d.Errorf("%v", err)
			}
			e.now = e.now.Add(dur)
		}
		return e.each(func(h *harness) (string, error) {
			h.now = e.now
			if !h.wakeAt.IsZero() && !h.wakeAt.After(e.now) {
				h.wakeAt = time.Time{}
				h.c.Step(node.Woken{})
			}
			h.c.Step(node.Ticked{Now: e.now})
			return h.ready(), nil
		})
	case "deliver":
		return done(e.deliver()), nil
	case "stabilize":
		var b strings.Builder
		for range 100 {
			out := e.deliver() + e.decide() + e.settle()
			if out == "" {
				return done(b.String()), nil
			}
			b.WriteString(out)
		}
		return "", d.Errorf("not stable after 100 rounds:\n%s", b.String())
	}
	return "", d.Errorf("unknown command")
}

// cluster makes the nodes.
func (e *env) cluster(d *datadriven.Cmd) (string, error) {
	if len(d.Args) == 0 {
		return "", d.Errorf("want the nodes' names")
	}
	e.names = strings.Split(d.Args[0], ",")
	e.nodes, e.links, e.up, e.gens = map[string]*harness{}, map[string]bool{}, map[string]map[string]bool{}, map[string]uint64{}
	for _, n := range e.names {
		h := &harness{t: e.t, now: e.now, cfgs: map[string]*config.ServiceConfig{}, checks: map[string]node.Check{},
			running: map[string]string{}, gens: map[string]uint64{}, probes: map[string]time.Time{}}
		args := append([]string{n, "members=" + d.Args[0], "write-through"}, d.Args[1:]...)
		if _, err := h.newCore(&datadriven.Cmd{Pos: d.Pos, Name: "new", Args: args}); err != nil {
			return "", err
		}
		e.nodes[n], e.up[n] = h, map[string]bool{}
	}
	return "ok", nil
}

// each runs f on every node, in name order, and prints their outputs.
func (e *env) each(f func(h *harness) (string, error)) (string, error) {
	var b strings.Builder
	for _, n := range e.names {
		out, err := f(e.nodes[n])
		if err != nil {
			return "", err
		}
		b.WriteString(prefix(n, out))
	}
	return done(b.String()), nil
}

// link sets the link between a and b up or down: each hears of the other.
func (e *env) link(a, b string, up bool) string {
	key := a + " " + b
	if b < a {
		key = b + " " + a
	}
	if e.links[key] == up {
		return ""
	}
	e.links[key] = up
	kind := node.PeerDown
	if up {
		kind = node.PeerUp
	}
	var out strings.Builder
	for _, p := range [][2]string{{a, b}, {b, a}} {
		h := e.nodes[p[0]]
		h.c.Step(node.PeerNews{Event: node.PeerEvent{Node: p[1], Kind: kind}, Now: e.now})
		if up {
			h.published = true // a peer heard anew gets the whole dataset
		}
		out.WriteString(prefix(p[0], h.ready()))
	}
	return out.String()
}

// reaches reports whether a and b hear each other.
func (e *env) reaches(a, b string) bool {
	if b < a {
		a, b = b, a
	}
	return e.links[a+" "+b]
}

// deliver sends the dataset of every node that asked to publish to the
// nodes it reaches.
func (e *env) deliver() string {
	var b strings.Builder
	for _, n := range e.names {
		h := e.nodes[n]
		if !h.published {
			continue
		}
		h.published = false
		e.gens[n]++
		for _, o := range e.names {
			if o == n || !e.reaches(n, o) {
				continue
			}
			data := h.c.Dataset(dataset.Node{Name: n, Gen: e.gens[n]}).Clone()
			r := e.nodes[o]
			r.c.Step(node.PeerNews{Event: node.PeerEvent{Node: n, Kind: node.PeerData, Data: &data}, Now: e.now})
			b.WriteString(prefix(o, r.ready()))
		}
	}
	return b.String()
}

// decide runs a decision pass on every node whose own dataset or view
// changed since its last pass (a view-only pass when only the view did),
// as the driver does after an input.
func (e *env) decide() string {
	var b strings.Builder
	for _, n := range e.names {
		h := e.nodes[n]
		if !h.changed && !h.c.ViewChanged() || !h.c.Settled() {
			continue
		}
		viewOnly := !h.changed
		h.changed = false
		h.c.Step(node.Pass{Now: e.now, ViewOnly: viewOnly})
		b.WriteString(prefix(n, h.ready()))
	}
	return b.String()
}

// settle ends the actions in flight as ordered (a start leaves the
// service up, a stop down), then the checks, which read the truth.
func (e *env) settle() string {
	var b strings.Builder
	for _, n := range e.names {
		h := e.nodes[n]
		for _, svc := range slices.Sorted(maps.Keys(h.running)) {
			kind := h.running[svc]
			delete(h.running, svc)
			switch kind {
			case "start", "restart":
				e.up[n][svc] = true
			case "stop":
				e.up[n][svc] = false
			}
			h.c.Step(node.Acted{Service: svc, Kind: kind, Now: e.now})
			b.WriteString(prefix(n, h.ready()))
		}
		for _, svc := range slices.Sorted(maps.Keys(h.checks)) {
			ck := h.checks[svc]
			delete(h.checks, svc)
			st := dataset.StatusDown
			if e.up[n][svc] {
				st = dataset.StatusUp
			}
			res := map[string]dataset.Resource{}
			for _, r := range h.cfgs[svc].Resources {
				res[r.RID] = dataset.Resource{Status: st}
			}
			h.c.Step(node.Checked{Check: ck, Resources: res, Now: e.now})
			b.WriteString(prefix(n, h.ready()))
		}
	}
	return b.String()
}

// prefix puts name before each line of out; an empty Ready prints
// nothing.
func prefix(name, out string) string {
	if out == "(empty ready)" || out == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		fmt.Fprintf(&b, "%s: %s\n", name, l)
	}
	return b.String()
}

// done is out, or "ok" when nothing happened.
func done(out string) string {
	if out == "" {
		return "ok"
	}
	return out
}
