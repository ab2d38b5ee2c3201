package resource

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/cgroup"
	"haven/resource/ocf"
)

// container runs one container through the engine (engine.go): named
// ContainerName, labelled with the cluster, service, resource and node,
// on the host's network or the engine's bridge (ports published by NAT),
// in a child of the instance's cgroup
// (--cgroup-parent) so that a stop's clean-up and the node guard end its
// processes as they end an app's.
type container struct {
	rc   config.ResourceConfig
	env  Env
	eng  *engine
	name string

	mu         sync.Mutex
	lastStatus dataset.Status // to log a change of the check's answer once

	tracked // its cgroup (where the engine call that starts it runs)
}

func newContainer(rc config.ResourceConfig, env Env) (*container, error) {
	if rc.Engine != "podman" && rc.Engine != "docker" {
		return nil, fmt.Errorf("%s: engine %q is not built: podman or docker", rc.RID, rc.Engine)
	}
	spec := EngineSpec{Bin: rc.Engine, Env: env.EngineEnv, Cluster: env.Cluster, Node: env.Node}
	return &container{rc: rc, env: env, eng: engineFor(spec), name: ContainerName(env.Service, rc.Name),
		tracked: tracked{cg: newLeaf(env.Cgroup, rc.RID)}}, nil
}

func (c *container) RID() string { return c.rc.RID }

// Label is the image (or rootfs) and the command.
func (c *container) Label() string {
	s := c.rc.Image
	if s == "" {
		s = "rootfs " + c.rc.Rootfs
	}
	if len(c.rc.Command) > 0 {
		s += " " + strings.Join(c.rc.Command, " ")
	}
	return s
}

// ContainerError is a failed action of a container resource; Severity
// "hard" says the resource cannot run on this node (no engine, no image,
// no rootfs): the node core then places the service elsewhere.
type ContainerError struct {
	RIDName  string
	Severity ocf.Severity // "" for an ordinary failure
	Msg      string
}

func (e *ContainerError) Error() string { return e.RIDName + ": " + e.Msg }

// Fault is the resource and the severity of the failure.
func (e *ContainerError) Fault() (string, string) { return e.RIDName, string(e.Severity) }

func (c *container) fail(err error) *ContainerError {
	var ee *EngineError
	if errors.As(err, &ee) && ee.Missing {
		return &ContainerError{RIDName: c.rc.RID, Severity: ocf.Hard, Msg: "cannot run here: " + ee.Msg}
	}
	return &ContainerError{RIDName: c.rc.RID, Msg: err.Error()}
}

// timeout is the time limit of one engine call of an action.
func (c *container) timeout() time.Duration { return timeoutOf(c.rc) }

// runnable says why the resource cannot run here (nil when it can, or
// when the start pulls what is missing): the engine's program, the rootfs
// directory, the image with pull = never.
func (c *container) runnable(ctx context.Context) *ContainerError {
	if f := c.rc.EnvFile; f != "" {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
			return &ContainerError{RIDName: c.rc.RID, Severity: ocf.Hard, Msg: fmt.Sprintf("cannot run here: env_file %s is not a file on this node", f)}
		}
	}
	if c.rc.Rootfs != "" {
		if st, err := os.Stat(c.rc.Rootfs); err != nil || !st.IsDir() {
			return &ContainerError{RIDName: c.rc.RID, Severity: ocf.Hard, Msg: fmt.Sprintf("cannot run here: rootfs %s is not a directory on this node", c.rc.Rootfs)}
		}
		return nil
	}
	ok, err := c.eng.imageExists(ctx, c.timeout(), c.rc.Image)
	if err != nil {
		return c.fail(err)
	}
	if !ok && c.rc.Pull == "never" {
		return &ContainerError{RIDName: c.rc.RID, Severity: ocf.Hard,
			Msg: fmt.Sprintf("cannot run here: image %s is not in this node's engine storage (pull = never: load it ahead of time)", c.rc.Image)}
	}
	return nil
}

// ours is the container of the resource in list: nil when there is none;
// an error when a container has its name without its labels (not
// Haven's: never touched).
func (c *container) ours(list []Container) (*Container, error) {
	ct := find(list, c.name)
	if ct == nil {
		return nil, nil
	}
	if !ct.Haven(c.env.Cluster, c.env.Node) || ct.Labels[LabelService] != c.env.Service || ct.Labels[LabelRID] != c.rc.RID {
		return nil, fmt.Errorf("container %s exists with labels of another owner (%s=%q %s=%q %s=%q): not touched; remove or rename it",
			c.name, LabelCluster, ct.Labels[LabelCluster], LabelService, ct.Labels[LabelService], LabelRID, ct.Labels[LabelRID])
	}
	return ct, nil
}

// lookup lists the node's containers afresh and finds the resource's
// (nil when none): foreign is set when a container has its name without
// its labels, err when the engine could not list them.
func (c *container) lookup(ctx context.Context) (ct *Container, foreign, err error) {
	list, err := c.eng.list(ctx, c.timeout(), true)
	if err != nil {
		return nil, nil, err
	}
	ct, foreign = c.ours(list)
	return ct, foreign, nil
}

// Start removes a stopped container of the resource left from an earlier
// start, pulls the image when pull = missing and it is not here, then
// runs the container detached, and confirms it runs.
func (c *container) Start(ctx context.Context) error {
	// the engine calls of the action, together, within its timeout
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	defer c.eng.changed()
	ct, foreign, err := c.lookup(ctx)
	if err == nil {
		err = foreign
	}
	if err != nil {
		return c.fail(err)
	}
	if ct != nil && ct.Runs() {
		c.env.Log(c.rc.RID, "start: container "+c.name+" already running")
		return nil
	}
	if ct != nil {
		c.env.Log(c.rc.RID, fmt.Sprintf("start: remove the container %s of an earlier start (%s, its process gone)", c.name, ct.State))
		if err := c.eng.remove(ctx, c.timeout(), *ct, 0); err != nil {
			return c.fail(err)
		}
	}
	if e := c.runnable(ctx); e != nil {
		return e
	}
	switch {
	case c.rc.Image != "" && c.rc.Pull == "always":
		c.env.Log(c.rc.RID, "start: pull "+c.rc.Image+" (pull = always)")
		if err := c.eng.pull(ctx, c.timeout(), c.rc.Image); err != nil {
			return c.fail(err)
		}
	case c.rc.Image != "" && c.rc.Pull == "missing":
		if ok, err := c.eng.imageExists(ctx, c.timeout(), c.rc.Image); err != nil {
			return c.fail(err)
		} else if !ok {
			c.env.Log(c.rc.RID, "start: pull "+c.rc.Image+" (pull = missing)")
			if err := c.eng.pull(ctx, c.timeout(), c.rc.Image); err != nil {
				return c.fail(err)
			}
		}
	}
	argv := c.runArgs(ctx)
	c.env.Log(c.rc.RID, "start: "+c.eng.spec.Bin+" run "+c.name+" "+c.Label())
	// the engine call runs in the resource's cgroup: podman's monitor
	// process (conmon) stays there (docker's shim is dockerd's, outside:
	// container_docker.go), the container goes in a child of the
	// instance's (--cgroup-parent)
	res, err := run(ctx, command{action: "start", argv: argv, timeout: c.timeout(), env: c.eng.env, dir: c.env.VarDir, keep: 20, cgroup: c.cg})
	if err != nil {
		return c.fail(&EngineError{Call: c.eng.spec.Bin + " run", Msg: err.Error()})
	}
	if res.code != 0 {
		return c.runFailed(res)
	}
	c.eng.changed()
	ct, foreign, err = c.lookup(ctx)
	if err == nil {
		err = foreign
	}
	if err == nil && ct != nil {
		ct, err = c.settle(ctx, ct)
	}
	switch {
	case err != nil:
		return c.fail(err)
	case ct == nil:
		return c.fail(fmt.Errorf("container %s not found after its start", c.name))
	case !ct.Runs():
		msg := fmt.Sprintf("container %s %s (exit code %d) at once after its start", c.name, ct.State, ct.Code)
		if out, _, err := c.eng.call(ctx, c.timeout(), "logs", "--tail", "3", ct.ID); err == nil && lastLine(out) != "" {
			msg += ": " + lastLine(out)
		}
		return c.fail(errors.New(msg))
	}
	return nil
}

// runArgs is the engine's command line that runs the container.
func (c *container) runArgs(ctx context.Context) []string {
	rc := c.rc
	a := []string{c.eng.spec.Bin, "run", "--detach", "--name", c.name,
		"--label", LabelCluster + "=" + c.env.Cluster,
		"--label", LabelService + "=" + c.env.Service,
		"--label", LabelRID + "=" + rc.RID,
		"--label", LabelNode + "=" + c.env.Node,
		"--network", rc.Network,
		"--stop-timeout", fmt.Sprint(int(rc.StopTimeout / time.Second)),
	}
	for _, p := range rc.Ports {
		// the engine makes (and removes with the container) the NAT rules
		// of the node's network namespace
		a = append(a, "--publish", p)
	}
	if p := cgroupParent(c.env.Cgroup); p != "" {
		a = append(a, "--cgroup-parent", p)
	} else if c.env.Cgroup != "" {
		c.env.Log(rc.RID, "start: the instance's cgroup is not under the cgroup v2 mount: the container runs outside it (the guard cannot end it)")
	}
	env := map[string]string{
		"HAVEN_SVCNAME":  c.env.Service,
		"HAVEN_NODENAME": c.env.Node,
		"HAVEN_RID":      rc.RID,
	}
	if rc.EnvFile != "" {
		// before the --env: those win over the file's
		a = append(a, "--env-file", rc.EnvFile)
	}
	maps.Copy(env, rc.ContainerEnv)
	if t := FencingToken(ctx); t != 0 {
		env["HAVEN_FENCING_TOKEN"] = fmt.Sprint(t)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		a = append(a, "--env", k+"="+env[k])
	}
	for _, v := range rc.Volumes {
		a = append(a, "--volume", v)
	}
	if rc.User != "" {
		a = append(a, "--user", rc.User)
	}
	if rc.ReadOnly {
		a = append(a, "--read-only")
	}
	if rc.Memory != "" {
		a = append(a, "--memory", rc.Memory)
	}
	if rc.CPUs != "" {
		a = append(a, "--cpus", rc.CPUs)
	}
	if rc.Entrypoint != "" {
		a = append(a, "--entrypoint", rc.Entrypoint)
	}
	for _, cp := range rc.CapDrop {
		a = append(a, "--cap-drop", cp)
	}
	for _, cp := range rc.CapAdd {
		a = append(a, "--cap-add", cp)
	}
	switch {
	case rc.Healthcheck != "" && c.eng.docker():
		// dockerd runs it on its own timer; the listing reads its state
		a = append(a, "--health-cmd", rc.Healthcheck, "--health-interval", dockerHealthInterval(c.env.MonitorInterval).String(),
			"--health-retries", fmt.Sprint(dockerHealthRetries))
	case rc.Healthcheck != "":
		// the status check runs it (engine.health): podman's own timer
		// needs systemd
		a = append(a, "--health-cmd", rc.Healthcheck, "--health-interval", "disable")
	}
	if rc.Rootfs != "" {
		a = append(a, "--rootfs", rc.Rootfs)
	} else {
		a = append(a, "--pull", "never", rc.Image)
	}
	return append(a, rc.Command...)
}

// cgroupParent is the instance's cgroup as the engine names a cgroup
// parent: its path under the cgroup v2 mount ("" when there is none).
func cgroupParent(dir string) string {
	if dir == "" {
		return ""
	}
	m, err := cgroup.Mount()
	if err != nil || m == "" {
		return ""
	}
	rel, err := filepath.Rel(m, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	return "/" + rel
}

// Stop stops the container (SIGTERM, SIGKILL after stop_timeout) and
// removes it; with none, or only one that is not Haven's, there is
// nothing to do.
func (c *container) Stop(ctx context.Context) error {
	// within the timeout as a whole: the quorum's stop budget counts it
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	defer c.eng.changed()
	ct, foreign, err := c.lookup(ctx)
	if err != nil {
		return c.fail(err)
	}
	if foreign != nil {
		c.env.Log(c.rc.RID, "stop: nothing of Haven's to stop: "+foreign.Error())
		return nil
	}
	if ct == nil {
		c.env.Log(c.rc.RID, "stop: no container "+c.name+": nothing to do")
		return nil
	}
	c.env.Log(c.rc.RID, fmt.Sprintf("stop: %s %s (%s)", c.eng.removeCmd(c.rc.StopTimeout), c.name, ct.State))
	if err := c.eng.remove(ctx, c.timeout(), *ct, c.rc.StopTimeout); err != nil {
		return c.fail(err)
	}
	return nil
}

// Status is FaultStatus without the fault.
func (c *container) Status(ctx context.Context) (dataset.Status, string) {
	st, reason, _ := c.FaultStatus(ctx)
	return st, reason
}

// FaultStatus reads the node's containers (a listing shared by the
// checks of a round): running is up, paused warn, any other state down;
// without a container, down, and a hard fault when the node cannot run
// it (no engine, no image with pull = never, no rootfs). An engine that
// fails, hangs or answers garbage is warn with its error: whether the
// container runs is not known, and a warn keeps the service here rather
// than start a second copy elsewhere.
func (c *container) FaultStatus(ctx context.Context) (dataset.Status, string, string) {
	st, reason, fault := c.status(ctx)
	c.mu.Lock()
	changed := st != c.lastStatus
	c.lastStatus = st
	c.mu.Unlock()
	if changed && reason != "" {
		c.env.Log(c.rc.RID, "check: "+string(st)+": "+reason)
	}
	return st, reason, fault
}

func (c *container) status(ctx context.Context) (dataset.Status, string, string) {
	list, err := c.eng.list(ctx, c.timeout(), false)
	if err != nil {
		e := c.fail(err)
		if e.Severity != "" {
			return dataset.StatusDown, e.Msg, string(e.Severity)
		}
		return dataset.StatusWarn, e.Msg, ""
	}
	ct, err := c.ours(list)
	if err != nil {
		return dataset.StatusDown, err.Error(), ""
	}
	if ct == nil {
		if e := c.runnable(ctx); e != nil {
			if e.Severity != "" {
				return dataset.StatusDown, e.Msg, string(e.Severity)
			}
			return dataset.StatusWarn, e.Msg, ""
		}
		return dataset.StatusDown, "no container " + c.name, ""
	}
	switch {
	case ct.Runs() && c.rc.Healthcheck != "":
		h, err := c.eng.health(ctx, c.timeout(), *ct)
		switch {
		case err != nil:
			return dataset.StatusWarn, "container " + c.name + " runs, its health unknown: " + err.Error(), ""
		case h == "unhealthy":
			return dataset.StatusDown, "container " + c.name + " unhealthy (its healthcheck failed 3 times in a row)", ""
		}
		return dataset.StatusUp, "", ""
	case ct.Runs():
		return dataset.StatusUp, "", ""
	case ct.State == "running":
		return dataset.StatusDown, fmt.Sprintf("container %s: its process %d is gone (%s)", c.name, ct.Pid, c.eng.goneNote()), ""
	case ct.State == "paused":
		return dataset.StatusWarn, "container " + c.name + " paused", ""
	}
	return dataset.StatusDown, fmt.Sprintf("container %s %s (exit code %d)", c.name, ct.State, ct.Code), ""
}

var _ Faulter = (*container)(nil)
