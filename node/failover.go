package node

import (
	"haven/dataset"
	"haven/monitor"
	"haven/node/instsm"
)

// Failover: the local instance of a service started successfully after
// the service last ran on another node (From): the owner crashed or went
// down, its instance failed or was stopped, or an admin moved the service
// (switch, takeover, giveback). Reason is why the start was ordered. A
// start on the node where the service last ran is not a failover. Its
// memory is the daemon's: a daemon restarted since it last saw the
// service run elsewhere says nothing.
type Failover struct {
	Svc    string `json:"svc"`
	From   string `json:"from"`
	Reason string `json:"reason"`
}

func (Failover) Kind() string      { return "failover" }
func (e Failover) Service() string { return e.Svc }
func (Failover) Level() Level      { return Warn }
func (e Failover) String() string {
	return "failover: started here, it last ran on " + e.From + " (" + e.Reason + ")"
}

// watchRanElsewhere remembers, for each local instance that does not run,
// the node where its service was last seen running (up or warn) among the
// live peers; an instance that runs here forgets it.
func (c *Core) watchRanElsewhere(s monitor.Snapshot) {
	for _, inst := range c.passInstances() {
		svc := inst.Name
		if !inst.Local || inst.Spec.Flex {
			// (a flex service runs on several nodes: a start is no move)
			continue
		}
		if runs(dataset.Instance{Avail: inst.Avail, Monitor: inst.Mon}) {
			inst.RanElsewhere = ""
			continue
		}
		if n := c.ranElsewhere(s, svc); n != "" {
			inst.RanElsewhere = n
		}
	}
}

// noteStarted says Failover after a successful start of an instance whose
// service last ran on another node.
func (c *Core) noteStarted(svc string, inst *instsm.Instance) {
	if inst.RanElsewhere == "" {
		return
	}
	c.emit(Failover{Svc: svc, From: inst.RanElsewhere, Reason: inst.StartReason})
	inst.RanElsewhere = ""
}
