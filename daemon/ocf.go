package daemon

import "path/filepath"

// rscTmp is the HA_RSCTMP of the OCF agents: Pacemaker's
// /run/resource-agents ("" says so) on a real host, ROOT/run/resource-agents
// for a daemon run with --root (the nodes of a test bed share one host: an
// agent's state file there must be each node's own).
func (d *Daemon) rscTmp() string {
	if d.p.Root == "" {
		return ""
	}
	return filepath.Join(d.p.Run, "resource-agents")
}
