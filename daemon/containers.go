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

// The sweep asks an engine only on a node that ran container resources
// of that engine once: a marker file per engine (var/containers.used for
// podman, var/containers.docker.used for docker), written when a local
// service with a container resource of the engine is installed (before
// any start), and kept. A node without it has no container of Haven's in
// that engine, and the daemons of a host without containers run no
// engine at all (nor ask a docker command line whose dockerd is absent).
func (d *Daemon) containersMarker(engine string) string {
	if engine == "podman" {
		return filepath.Join(d.p.Var, "containers.used")
	}
	return filepath.Join(d.p.Var, "containers."+engine+".used")
}

// containerEngines are the engines the sweep asks.
var containerEngines = []string{"podman", "docker"}

// markContainers writes the markers once, for a local config with
// container resources.
func (d *Daemon) markContainers(cfg *config.ServiceConfig) {
	for _, r := range cfg.Resources {
		if r.Type != config.SectionContainer || d.containersMarked[r.Engine] || !slices.Contains(containerEngines, r.Engine) {
			continue
		}
		if err := os.WriteFile(d.containersMarker(r.Engine), nil, 0o600); err != nil {
			d.log.Warn("containers: the marker of a node that runs containers not written: the sweep of orphans will not run", zap.String("engine", r.Engine), zap.Error(err))
			continue
		}
		if d.containersMarked == nil {
			d.containersMarked = map[string]bool{}
		}
		d.containersMarked[r.Engine] = true
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

// engineSpec is the engine (podman, docker) of this node's containers.
func (d *Daemon) engineSpec(engine string) resource.EngineSpec {
	return resource.EngineSpec{Bin: engine, Env: d.engineEnv(), Cluster: d.cluster.Name, Node: d.node.Name}
}

// sweepContainers runs sweepOrphans at start-up, then every
// check_interval, until ctx ends, for each engine installed here that
// ran a container resource of this node.
func (d *Daemon) sweepContainers(ctx context.Context) {
	for {
		for _, engine := range containerEngines {
			if _, err := os.Stat(d.containersMarker(engine)); err != nil {
				// no container of this engine here, ever
			} else if _, err := exec.LookPath(engine); err == nil {
				d.sweepOrphans(ctx, d.engineSpec(engine))
			}
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
	v, err := d.call(func() (any, error) { return d.localContainerRIDs(spec.Bin), nil })
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
		d.log.Warn("containers: orphan container: stopped and removed", zap.String("engine", spec.Bin), zap.String("container", c.Name()), zap.String("id", c.ID),
			zap.String("svc", svc), zap.String("rid", rid), zap.String("state", c.State), zap.String("why", why))
		if err := resource.RemoveContainer(ctx, spec, c, orphanStopTimeout, time.Minute); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Error("containers: orphan container not removed", zap.String("container", c.Name()), zap.Error(err))
		}
	}
}

// localContainerRIDs maps each service local to this node to the rids of
// its container resources of engine; a service whose config does not parse here
// maps to nil (every container of it is kept: its config is not known).
func (d *Daemon) localContainerRIDs(engine string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, inst := range d.services {
		if !inst.local || inst.cfg == nil {
			continue
		}
		rids := map[string]bool{}
		for _, r := range inst.cfg.Resources {
			if r.Type == config.SectionContainer && r.Engine == engine {
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
