package daemon

import (
	"errors"
	"path/filepath"

	"go.uber.org/zap"

	"haven/internal/cgroup"
)

// setupCgroups finds the node's cgroup tree (internal/cgroup): each local
// instance's commands run in a group of their own below it, so that a
// stop, or the guard, ends every process an instance left behind.
// Without a usable cgroup v2 hierarchy the daemon says so and runs the
// commands in process groups only (docs/resources.md).
func (d *Daemon) setupCgroups() {
	t, err := cgroup.Setup(d.node.Name, d.p.Root, filepath.Join(d.p.Run, "cgroup2"))
	if err != nil {
		lvl := d.log.Error
		if errors.Is(err, cgroup.ErrUnavailable) {
			lvl = d.log.Warn
		}
		lvl("no cgroup for the services: their processes are tracked by process group only (a process that calls setsid escapes a stop and the guard)", zap.Error(err))
		return
	}
	d.cg = t
	d.log.Info("services tracked by cgroup", zap.String("dir", t.Dir))
}

// serviceCgroup is the cgroup of service svc's instance ("" for none).
func (d *Daemon) serviceCgroup(svc string) string {
	if d.cg == nil {
		return ""
	}
	return d.cg.Service(svc)
}

// pruneCgroups removes the groups of the node's tree that hold no
// process, at the daemon's exit: a group in use stays (the services keep
// running after a daemon stop), the next run makes again what it needs.
func (d *Daemon) pruneCgroups() {
	if d.cg != nil {
		_ = cgroup.Remove(d.cg.Dir) // EBUSY for the groups in use
	}
}
