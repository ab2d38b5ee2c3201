package daemon

import (
	"haven/dataset"
)

// targets lists the admin targets this node knows, for the heartbeats.
func (d *Daemon) targets() map[string]dataset.Target { return d.core.Targets() }
