package daemon

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"haven/config"
	"haven/resource"
)

// The containers of this node that no local service config holds any
// more (orphans: the service was deleted, moved off this node, or its
// container resource renamed, while this daemon was down or its stop
// failed) are found by a sweep, at start-up and every check_interval:
// each one carrying this cluster's and this node's labels, whose service
// is not a local service of this node or whose rid is no resource of it,
// is logged and stopped. A container without those labels is never
// touched. A container of a local service that runs while the service
// is placed on another node is no orphan: its check says up, and the
// multiple_active rules deal with it.

// The sweep asks the engine only on a node that ran container resources
// once: a marker file, written when a local service with a container
// resource is installed (before any start), and kept. A node without it
// has no container of Haven's, and the daemons of a host without
// containers run no engine at all.
func (d *Daemon) containersMarker() string { return filepath.Join(d.p.Var, "containers.used") }

// markContainers writes the marker once, for a local config with a
// container resource.
func (d *Daemon) markContainers(cfg *config.ServiceConfig) {
	if d.containersMarked {
		return
	}
	for _, r := range cfg.Resources {
		if r.Type != config.SectionContainer {
			continue
		}
		if err := os.WriteFile(d.containersMarker(), nil, 0o600); err != nil {
			d.log.Warn("containers: the marker of a node that runs containers not written: the sweep of orphans will not run", zap.Error(err))
			return
		}
		d.containersMarked = true
		return
	}
}

// orphanStopTimeout is how long an orphan's stop waits after SIGTERM.
const orphanStopTimeout = 10 * time.Second

// engineEnv is node.toml container_env as KEY=VALUE, sorted.
func (d *Daemon) engineEnv() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(d.node.ContainerEnv)) {
		out = append(out, k+"="+d.node.ContainerEnv[k])
	}
	return out
}

// engineSpec is the podman engine of this node's containers.
func (d *Daemon) engineSpec() resource.EngineSpec {
	return resource.EngineSpec{Bin: "podman", Env: d.engineEnv(), Cluster: d.cluster.Name, Node: d.node.Name}
}

// sweepContainers runs sweepOrphans at start-up, then every
// check_interval, until ctx ends. Nothing is done where podman is not
// installed, or on a node that never ran a container resource.
func (d *Daemon) sweepContainers(ctx context.Context) {
	spec := d.engineSpec()
	for {
		if _, err := os.Stat(d.containersMarker()); err != nil {
			// no container here, ever
		} else if _, err := exec.LookPath(spec.Bin); err == nil {
			d.sweepOrphans(ctx, spec)
		}
		select {
		case <-d.clk.After(d.node.CheckInterval):
		case <-ctx.Done():
			return
		}
	}
}

// sweepOrphans lists the node's containers, then (on the loop) the
// container resources of its local services, and stops the orphans. The
// list comes first: a container it holds was started by a config the
// loop already installed.
func (d *Daemon) sweepOrphans(ctx context.Context, spec resource.EngineSpec) {
	list, err := resource.ListContainers(ctx, spec, time.Minute)
	if err != nil {
		d.log.Warn("containers: the sweep of orphans could not list the engine's containers", zap.Error(err))
		return
	}
	if len(list) == 0 {
		return
	}
	v, err := d.call(func() (any, error) { return d.localContainerRIDs(), nil })
	if err != nil {
		return
	}
	known := v.(map[string]map[string]bool)
	for _, c := range list {
		if !c.Haven(spec.Cluster, spec.Node) {
			continue
		}
		svc, rid := c.Labels[resource.LabelService], c.Labels[resource.LabelRID]
		rids, local := known[svc]
		if local && (rids == nil || rids[rid]) {
			continue
		}
		why := "service " + svc + " is not placed on this node"
		if local {
			why = "service " + svc + " has no resource " + rid
		}
		d.log.Warn("containers: orphan container: stopped and removed", zap.String("container", c.Name()), zap.String("id", c.ID),
			zap.String("svc", svc), zap.String("rid", rid), zap.String("state", c.State), zap.String("why", why))
		if err := resource.RemoveContainer(ctx, spec, c, orphanStopTimeout, time.Minute); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Error("containers: orphan container not removed", zap.String("container", c.Name()), zap.Error(err))
		}
	}
}

// localContainerRIDs maps each service local to this node to the rids of
// its container resources; a service whose config does not parse here
// maps to nil (every container of it is kept: its config is not known).
func (d *Daemon) localContainerRIDs() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, inst := range d.services {
		if !inst.local || inst.cfg == nil {
			continue
		}
		rids := map[string]bool{}
		for _, r := range inst.cfg.Resources {
			if r.Type == config.SectionContainer {
				rids[r.RID] = true
			}
		}
		out[name] = rids
	}
	for name := range d.cfgs.invalid {
		out[name] = nil
	}
	return out
}
