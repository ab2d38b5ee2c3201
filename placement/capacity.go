package placement

import (
	"strings"

	"haven/config"
	"haven/dataset"
)

// The capacity filter (docs/behaviour.md 1.1): a node is a candidate for
// an instance of a service with requests (request_cpu, request_mem) only
// when the requests of the instances that hold capacity there (every
// service's, Holds) plus this one fit in the capacity the node publishes.
// The service's own instance there, when it holds capacity already, is
// counted once: a running instance never makes its own node short. A
// service without requests is never filtered; a node that publishes no
// capacity (a node of an earlier release) is no candidate for a service
// with requests.

// ReasonCapacityUnknown excludes a node without a published capacity for
// a service with requests. Short capacity is reported as
// ReasonCapacityPrefix + what is short ("cpu 3.5 of 4 requested, needs 1").
const (
	ReasonCapacityUnknown = "capacity not known (a node of an earlier release): no service with requests there"
	ReasonCapacityPrefix  = "capacity: "
)

// Resources is an amount of cpu and memory.
type Resources struct {
	CPU config.MilliCPU
	Mem config.Bytes
}

// Add returns r plus o.
func (r Resources) Add(o Resources) Resources { return Resources{r.CPU + o.CPU, r.Mem + o.Mem} }

// Sub returns r minus o.
func (r Resources) Sub(o Resources) Resources { return Resources{r.CPU - o.CPU, r.Mem - o.Mem} }

// RequestOf is what one instance of the service requests.
func RequestOf(cfg *config.ServiceConfig) Resources {
	return Resources{CPU: cfg.RequestCPU, Mem: cfg.RequestMem}
}

// NodeUsage is one node's capacity and what the instances holding
// capacity there request in all.
type NodeUsage struct {
	// Known: the node published its capacity.
	Known     bool
	Capacity  Resources
	Requested Resources
}

// Usage is the capacity use of every node (Input.Usage): build it with
// NewUsage, then Hold and Release as the local decisions of a pass change
// what holds capacity on the local node.
type Usage struct {
	nodes map[string]*NodeUsage
}

// Holds reports whether an instance holds capacity on its node: it runs
// or may run (avail up, warn or unknown), or is claimed (ready) or in an
// action (starting, stopping, ...).
func Holds(st InstanceState) bool {
	switch st.Avail {
	case dataset.StatusUp, dataset.StatusWarn, dataset.StatusUnknown:
		return true
	}
	return st.State == dataset.Ready || st.State.Transitioning()
}

// NewUsage adds up, on every alive node of views, the requests of the
// services of svcs (their configs) whose instance there holds capacity;
// state gives the state of an instance (with the caller's view of its
// avail; nil: StateOf). It returns nil when no service requests anything:
// no filter then.
func NewUsage(views map[string]NodeView, svcs map[string]*config.ServiceConfig, state func(node, svc string) InstanceState) *Usage {
	var reqs []string
	for name, cfg := range svcs {
		if cfg.HasRequests() {
			reqs = append(reqs, name)
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	u := CapacityOf(views)
	for name, v := range views {
		nu := u.nodes[name]
		if !v.Alive() {
			continue
		}
		for _, svc := range reqs {
			var st InstanceState
			if state != nil {
				st = state(name, svc)
			} else {
				st = StateOf(v.Data.Services[svc])
			}
			if Holds(st) {
				nu.Requested = nu.Requested.Add(RequestOf(svcs[svc]))
			}
		}
	}
	return u
}

// CapacityOf is the usage of views with nothing requested yet: each
// node's capacity, for a caller that adds up the requests itself (Hold).
func CapacityOf(views map[string]NodeView) *Usage {
	u := &Usage{nodes: make(map[string]*NodeUsage, len(views))}
	for name, v := range views {
		nu := &NodeUsage{}
		if c := v.Data.Capacity; c != nil {
			nu.Known = true
			nu.Capacity = Resources{CPU: config.MilliCPU(c.CPUMilli), Mem: config.Bytes(c.MemBytes)}
		}
		u.nodes[name] = nu
	}
	return u
}

// Node returns the usage of node (the zero NodeUsage when it has no view).
func (u *Usage) Node(node string) NodeUsage {
	if u == nil || u.nodes[node] == nil {
		return NodeUsage{}
	}
	return *u.nodes[node]
}

// Hold counts r more on node (an instance there starts to hold capacity),
// Release r less.
func (u *Usage) Hold(node string, r Resources) {
	if nu := u.nodes[node]; nu != nil {
		nu.Requested = nu.Requested.Add(r)
	}
}

// Release counts r less on node.
func (u *Usage) Release(node string, r Resources) {
	if nu := u.nodes[node]; nu != nil {
		nu.Requested = nu.Requested.Sub(r)
	}
}

// Short says what node lacks for one more instance requesting req, ""
// when it fits: own tells whether the service's instance there holds
// capacity already (counted once). Only the resources req asks for are
// checked.
func (u *Usage) Short(node string, req Resources, own bool) string {
	nu := u.Node(node)
	if !nu.Known {
		return ReasonCapacityUnknown
	}
	others := nu.Requested
	if own {
		others = others.Sub(req)
	}
	var parts []string
	if req.CPU > 0 && others.CPU+req.CPU > nu.Capacity.CPU {
		parts = append(parts, "cpu "+others.CPU.String()+" of "+nu.Capacity.CPU.String()+" requested, needs "+req.CPU.String())
	}
	if req.Mem > 0 && others.Mem+req.Mem > nu.Capacity.Mem {
		parts = append(parts, "mem "+others.Mem.Short()+" of "+nu.Capacity.Mem.Short()+" requested, needs "+req.Mem.Short())
	}
	if parts == nil {
		return ""
	}
	return ReasonCapacityPrefix + strings.Join(parts, ", ")
}

// capacityFilter is the capacity filter of a node for the service of in,
// its instance there in state st.
func capacityFilter(in *Input, node string, st *InstanceState, f *filter) {
	if why := in.Usage.Short(node, RequestOf(in.Config), Holds(*st)); why != "" {
		f.fail(why, "")
	}
}
