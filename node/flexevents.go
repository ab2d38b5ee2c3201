package node

import (
	"slices"
	"strconv"
	"strings"

	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
)

// The events of a flex service (docs/operations.md, "Hooks"), from this
// node's decision passes:
//
//   - FlexScaled: its target moved (flex_target edited, svcmgr scale);
//     not in the global mode, whose target follows every change of a
//     node's candidacy (a node heard in rejoin, then idle...): its count
//     shows in FlexInstances and the status;
//   - FlexInstances: the nodes where an instance is up, or the target,
//     changed, as this node sees them (the first pass after its rejoin
//     says what it found): the metrics take the count from it;
//   - FlexPlaced, FlexReplaced: the flex rules ordered the start of the
//     local instance: to fill the target, or to take the place of an
//     instance lost (no longer up while the target stayed) since the
//     count was last at the target.

// FlexScaled: the target of a flex service moved, as this node's pass
// sees it.
type FlexScaled struct {
	Svc  string `json:"svc"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

func (FlexScaled) Kind() string      { return "flex_scaled" }
func (e FlexScaled) Service() string { return e.Svc }
func (FlexScaled) Level() Level      { return Info }
func (e FlexScaled) String() string {
	return "flex target " + strconv.Itoa(e.From) + " -> " + strconv.Itoa(e.To)
}

// FlexInstances: the nodes running an instance of a flex service (up),
// or its target, changed: Up of Target now, Started and Lost the nodes
// that came and went.
type FlexInstances struct {
	Svc     string   `json:"svc"`
	Up      int      `json:"up"`
	Target  int      `json:"target"`
	Nodes   []string `json:"nodes"`
	Started []string `json:"started,omitempty"`
	Lost    []string `json:"lost,omitempty"`
}

func (FlexInstances) Kind() string      { return "flex_instances" }
func (e FlexInstances) Service() string { return e.Svc }
func (e FlexInstances) Level() Level {
	if e.Up < e.Target {
		return Warn
	}
	return Info
}
func (e FlexInstances) String() string {
	s := "flex: " + strconv.Itoa(e.Up) + " of " + strconv.Itoa(e.Target) + " instances up"
	if len(e.Nodes) > 0 {
		s += " (" + strings.Join(e.Nodes, ", ") + ")"
	}
	if len(e.Started) > 0 {
		s += "; up on " + strings.Join(e.Started, ", ")
	}
	if len(e.Lost) > 0 {
		s += "; no longer up on " + strings.Join(e.Lost, ", ")
	}
	return s
}

// FlexPlaced: the flex rules ordered a start of the local instance to
// fill the target.
type FlexPlaced struct {
	Svc    string `json:"svc"`
	Reason string `json:"reason"`
}

func (FlexPlaced) Kind() string      { return "flex_placed" }
func (e FlexPlaced) Service() string { return e.Svc }
func (FlexPlaced) Level() Level      { return Info }
func (e FlexPlaced) String() string  { return "flex instance placed here: " + e.Reason }

// FlexReplaced: the flex rules ordered a start of the local instance in
// the place of one no longer up on Replaces.
type FlexReplaced struct {
	Svc      string `json:"svc"`
	Replaces string `json:"replaces"`
	Reason   string `json:"reason"`
}

func (FlexReplaced) Kind() string      { return "flex_replaced" }
func (e FlexReplaced) Service() string { return e.Svc }
func (FlexReplaced) Level() Level      { return Warn }
func (e FlexReplaced) String() string {
	return "flex instance placed here in the place of " + e.Replaces + "'s: " + e.Reason
}

// noteFlex takes the count of a flex service from a decision pass: the
// events of a moved target and of a changed set of instances up, and the
// instances lost that a start here would replace.
func (c *Core) noteFlex(dec monitor.Decision, inst *instsm.Instance) {
	fx := &inst.Flex
	svc := dec.Service
	if c.monitor == dataset.NodeInit || c.monitor == dataset.NodeRejoin {
		// a node that has not heard every member yet counts what it
		// hears so far: kept for the status, said once it has
		fx.Target, fx.Up, fx.Lost = dec.FlexTarget, slices.Clone(dec.FlexUp), nil
		return
	}
	if fx.Seen && fx.Target != dec.FlexTarget && !dec.FlexGlobal {
		c.emit(FlexScaled{Svc: svc, From: fx.Target, To: dec.FlexTarget})
	}
	if !fx.Seen || fx.Target != dec.FlexTarget || !slices.Equal(fx.Up, dec.FlexUp) {
		e := FlexInstances{Svc: svc, Up: len(dec.FlexUp), Target: dec.FlexTarget, Nodes: slices.Clone(dec.FlexUp)}
		if fx.Seen {
			for _, n := range dec.FlexUp {
				if !slices.Contains(fx.Up, n) {
					e.Started = append(e.Started, n)
				}
			}
			for _, n := range fx.Up {
				if !slices.Contains(dec.FlexUp, n) {
					e.Lost = append(e.Lost, n)
				}
			}
		}
		c.emit(e)
		if fx.Seen && dec.FlexTarget >= fx.Target && !dec.FlexGlobal {
			for _, n := range e.Lost {
				if !slices.Contains(fx.Lost, n) {
					fx.Lost = append(fx.Lost, n)
				}
			}
		}
		fx.Up = slices.Clone(dec.FlexUp)
	}
	if len(dec.FlexUp) >= dec.FlexTarget || dec.FlexGlobal {
		fx.Lost = nil
	}
	fx.Seen, fx.Target = true, dec.FlexTarget
}

// flexPlaced says why the flex rules start the local instance: in the
// place of a lost one (the first lost since the count was at the target),
// or to fill the target.
func (c *Core) flexPlaced(svc string, inst *instsm.Instance, reason string) {
	if fx := &inst.Flex; len(fx.Lost) > 0 {
		c.emit(FlexReplaced{Svc: svc, Replaces: fx.Lost[0], Reason: reason})
		fx.Lost = fx.Lost[1:]
		return
	}
	c.emit(FlexPlaced{Svc: svc, Reason: reason})
}
