package node

import "fmt"

// nodeAction orders a node action (Ready.NodeActions).
func (c *Core) nodeAction(kind, reason string) {
	c.ready.NodeActions = append(c.ready.NodeActions, NodeAction{Kind: kind, Reason: reason})
}

// NodeActionRun: the driver runs a node action (crash, reboot).
type NodeActionRun struct {
	Action string `json:"action"`
	Reason string `json:"reason"`
}

func (NodeActionRun) Kind() string    { return "node_action" }
func (NodeActionRun) Service() string { return "" }
func (NodeActionRun) Level() Level    { return Error }
func (e NodeActionRun) String() string {
	return "node action " + e.Action + ": " + e.Reason
}

// NodeActionEnd: the command of a node action ended without taking the
// node down (Err "" when it exited 0: a harmless test command, or a
// kernel that ignored the sysrq).
type NodeActionEnd struct {
	Action string `json:"action"`
	Err    string `json:"error,omitempty"`
}

func (NodeActionEnd) Kind() string    { return "node_action_end" }
func (NodeActionEnd) Service() string { return "" }
func (e NodeActionEnd) Level() Level {
	if e.Err != "" {
		return Error
	}
	return Warn
}
func (e NodeActionEnd) String() string {
	if e.Err != "" {
		return fmt.Sprintf("node action %s failed: %s", e.Action, e.Err)
	}
	return "node action " + e.Action + " command ended and the node is still up"
}
