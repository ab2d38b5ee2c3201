package vocab

import (
	"time"

	"haven/config"
)

// Action is an order to the driver: run the start or the stop of a
// service's local instance (all its resources), or the restart of one of
// its resources (RID: stop then start of that resource only), then report
// its end with actionDone (after the status check that follows it).
type Action struct {
	Kind    string `json:"kind"` // "start" | "stop" | "restart"
	Service string `json:"svc"`
	// RID is the resource of a "restart".
	RID    string `json:"rid,omitempty"`
	Reason string `json:"reason"`
	// FencingToken is HAVEN_FENCING_TOKEN for its commands: a start's new
	// token, or the token of the running instance for a stop (node/fencing.go).
	FencingToken uint64 `json:"fencing_token,omitempty"`
}

// Check is an order to the driver: check the status of the resources of a
// service's local instance (every one when Full, else the monitored
// ones), then report them with checkDone, with Gen.
type Check struct {
	Service string `json:"svc"`
	Full    bool   `json:"full"`
	// Gen is the instance's generation: a result of an older one (the
	// config changed meanwhile) is not used.
	Gen uint64 `json:"gen"`
	// FencingToken is the token of the instance's last start here, for
	// HAVEN_FENCING_TOKEN (0: never started here).
	FencingToken uint64 `json:"fencing_token,omitempty"`
	// Periodic tells a check of the instance's interval (tickChecks) from
	// one something waits on (the end of an action, a new config, an
	// answer): the driver runs those first.
	Periodic bool `json:"periodic,omitempty"`
}

// Probe orders the driver to probe an arbitrator now, off its loop, and
// report with arbitratorResult (within the arbitrator's timeout).
type Probe struct {
	Name string    `json:"name"`
	Sent time.Time `json:"sent"`
	// Partition and Running are the report to a one-vote arbitrator
	// (answered with oneVoteResult): this node's partition, and how many
	// failover services it runs.
	Partition []string `json:"partition,omitempty"`
	Running   int      `json:"running,omitempty"`
}

// Fence orders the driver to run the fence command of Node, off its loop,
// and report with fenceEnded.
type Fence struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// ConfigOp is a config file for the driver to write, in order: the config
// to install (written atomically, its instance rebuilt), or, Config nil,
// the file of a deleted service to remove (and its instance forgotten).
// The driver reports each with configDone.
type ConfigOp struct {
	Service string
	Config  *config.ServiceConfig
	// What says why, for the driver's log: "created", "replaced",
	// "changed", "received from n2", ...
	What string
}

// Node action kinds (NodeAction.Kind).
const (
	NodeCrash  = "crash"
	NodeReboot = "reboot"
)

// NodeAction is an order to the driver to act on the whole node: run
// node.toml's crash_command or reboot_command (a service's monitor_action
// crash or reboot, the split_action of a node that lost the quorum). The
// daemon logs it at error level with Reason, emits NodeActionRun, and runs
// the command with /bin/sh -c and a timeout, without blocking its loop,
// once the Persist of its Ready is written; the simulation records the
// event on its timeline.
type NodeAction struct {
	Kind   string `json:"kind"` // NodeCrash | NodeReboot
	Reason string `json:"reason"`
}
