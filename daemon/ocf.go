package daemon

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"haven/config"
	"haven/resource"
)

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

// ocfStopLimits returns cfg with the stop limit of each of its ocf
// resources set (config.ResourceConfig.StopLimit): the agent's advised
// stop timeout when the config sets none, so that the quorum's stop
// budget (the node core's timing) is the stop the driver allows. A copy
// when it changes anything: cfg may be shared. Each agent's meta-data is
// read once (cached), within 2s.
func (d *Daemon) ocfStopLimits(cfg *config.ServiceConfig) *config.ServiceConfig {
	var out *config.ServiceConfig
	for i, r := range cfg.Resources {
		if r.Type != config.SectionOCF || r.Disable {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		lim := resource.OCFStopLimit(ctx, r, d.node.OCFRoot)
		cancel()
		if lim == r.StopBound() {
			continue
		}
		if out == nil {
			c := *cfg
			c.Resources = slices.Clone(cfg.Resources)
			out = &c
		}
		out.Resources[i].StopLimit = lim
	}
	if out == nil {
		return cfg
	}
	return out
}
