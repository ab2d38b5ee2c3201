package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"haven/resource/ocf"
)

// The docker engine (engine = "docker") through the docker command line,
// as podman's: the same calls where the two agree (run, pull, logs), its
// own where they differ. Docker's `ps --format '{{json .}}'` gives the
// labels as one "k=v,k=v" string and neither the process id nor the
// exit code: the listing is `docker ps --quiet` (the ids of the node's
// containers) then one `docker container inspect` of them, whose JSON
// has them all. A container's processes are children of containerd's
// shim, not of the docker call that started it: the shim stays outside
// the resource's cgroup (docs/resources.md, "The guard").

// dockerIDRE is a full container id as `docker ps --no-trunc` prints it.
var dockerIDRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// docker reports whether the engine is docker (else podman).
func (e *engine) docker() bool { return e.spec.Bin == "docker" }

// dockerInspect is what is read of `docker container inspect`.
type dockerInspect struct {
	ID    string `json:"Id"`
	Name  string `json:"Name"` // "/NAME"
	State *struct {
		Status   string `json:"Status"`
		Pid      int    `json:"Pid"`
		ExitCode int    `json:"ExitCode"`
		Health   *struct {
			Status string `json:"Status"`
		} `json:"Health"` // with a health command only
	} `json:"State"`
	Config *struct {
		Image  string            `json:"Image"`
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// dockerPs lists every container labelled with this node (running or
// not): their ids, then their records. A container removed between the
// two calls is left out (docker prints the others and exits 1 with "No
// such container" for it).
func (e *engine) dockerPs(ctx context.Context, timeout time.Duration) ([]Container, error) {
	const call = "docker ps"
	out, _, err := e.call(ctx, timeout, "ps", "--all", "--no-trunc", "--quiet", "--filter", "label="+LabelNode+"="+e.spec.Node)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		if !dockerIDRE.MatchString(id) {
			return nil, &EngineError{Call: call, Msg: fmt.Sprintf("unreadable output: %.80q is not a container id", id)}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out, _, err = e.call(ctx, timeout, append([]string{"container", "inspect", "--"}, ids...)...)
	if err != nil && !strings.Contains(err.Error(), "No such container") && !strings.Contains(err.Error(), "No such object") {
		return nil, err
	}
	var recs []dockerInspect
	if err := json.Unmarshal(bytes.TrimSpace(out), &recs); err != nil {
		return nil, &EngineError{Call: call, Msg: fmt.Sprintf("unreadable output of docker container inspect (%v): %.80q", err, out)}
	}
	list := make([]Container, 0, len(recs))
	for _, r := range recs {
		name := strings.TrimPrefix(r.Name, "/")
		if !dockerIDRE.MatchString(r.ID) || name == "" || r.State == nil || r.Config == nil {
			return nil, &EngineError{Call: call, Msg: fmt.Sprintf("unreadable output of docker container inspect: a container without id, name, state or config: %.80q", out)}
		}
		ct := Container{ID: r.ID, Names: []string{name}, State: r.State.Status, Image: r.Config.Image,
			Labels: r.Config.Labels, Exited: r.State.Status == "exited", Code: r.State.ExitCode, Pid: r.State.Pid}
		if r.State.Health != nil {
			ct.Health = r.State.Health.Status
		}
		list = append(list, ct)
	}
	return list, nil
}

// dockerHealthRetries is docker's --health-retries: the failures in a
// row that make a container unhealthy, podman's default.
const dockerHealthRetries = 3

// dockerHealthInterval is docker's --health-interval: the node's
// monitor_interval (5s when unset), so that a monitored container's
// check finds the health at most one interval old.
func dockerHealthInterval(monitor time.Duration) time.Duration {
	if monitor <= 0 {
		return 5 * time.Second
	}
	return monitor
}

// dockerHealth is the health of container ct as dockerd recorded it in
// the listing (its own timer runs the command): no call of its own.
func dockerHealth(ct Container) (string, error) {
	switch ct.Health {
	case "healthy", "starting", "unhealthy":
		return ct.Health, nil
	case "":
		return "", &EngineError{Call: "docker container inspect", Msg: "no health state: the container was started without the health command"}
	}
	return "", &EngineError{Call: "docker container inspect", Msg: fmt.Sprintf("unreadable health state %.40q", ct.Health)}
}

// dockerImageExists reports whether the image is in dockerd's storage:
// `docker image inspect` exits 1 for a missing image, and also when
// dockerd does not answer: only its "No such image" says missing.
func (e *engine) dockerImageExists(ctx context.Context, timeout time.Duration, image string) (bool, error) {
	_, code, err := e.call(ctx, timeout, "image", "inspect", "--format", "{{.Id}}", "--", image)
	switch {
	case err == nil:
		return true, nil
	case code == 1 && strings.Contains(strings.ToLower(err.Error()), "no such image"):
		return false, nil
	}
	return false, err
}

// dockerRemove stops container c (SIGTERM, then SIGKILL after
// stopTimeout: docker's rm --force would SIGKILL at once) and removes
// it; a container already gone is no error. Docker's records follow
// the process (its shim outlives a kill of the container's cgroup and
// reports the exit): no special case for a process gone.
func (e *engine) dockerRemove(ctx context.Context, timeout time.Duration, c Container, stopTimeout time.Duration) error {
	gone := func(err error) bool { return err != nil && strings.Contains(err.Error(), "No such container") }
	if c.State == "running" || c.State == "paused" || c.State == "restarting" {
		if _, _, err := e.call(ctx, timeout, "stop", "-t", fmt.Sprint(int(stopTimeout/time.Second)), "--", c.ID); err != nil && !gone(err) {
			return err
		}
	}
	if _, _, err := e.call(ctx, timeout, "rm", "--force", "--", c.ID); err != nil && !gone(err) {
		return err
	}
	return nil
}

// removeCmd is how remove's calls are logged.
func (e *engine) removeCmd(stopTimeout time.Duration) string {
	t := int(stopTimeout / time.Second)
	if e.docker() {
		return fmt.Sprintf("docker stop -t %d, docker rm --force", t)
	}
	return fmt.Sprintf("podman rm --force --time %d", t)
}

// goneNote says why the engine says running while the container's
// process is gone.
func (e *engine) goneNote() string {
	if e.docker() {
		return "docker has not recorded its exit yet"
	}
	return "the engine, whose monitor went with it, still says running"
}

// settleWait bounds the wait of settle for docker's record of an exit.
const settleWait = 3 * time.Second

// settle is ct once the engine's records agree with its process: docker
// records the exit of a process that ended at once after its start a
// moment later (its shim reports it), and says running until then;
// settle lists again until it does, within settleWait and ctx (the
// last listing seen when ctx ends). Podman
// records it before its run returns: ct as is.
func (c *container) settle(ctx context.Context, ct *Container) (*Container, error) {
	if !c.eng.docker() {
		return ct, nil
	}
	deadline := time.Now().Add(settleWait)
	for ct != nil && ct.State == "running" && !ct.Runs() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ct, nil
		case <-time.After(50 * time.Millisecond):
		}
		c.eng.changed()
		next, foreign, err := c.lookup(ctx)
		if err == nil {
			err = foreign
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return ct, nil // the start's time is up: what was seen last
		case err != nil:
			return nil, err
		}
		ct = next
	}
	return ct, nil
}

// runFailed is the error of a run that exited non-zero, with its last
// line of output; docker ends its errors with a line of its own ("Run
// 'docker run --help' for more information"): the error is the line
// before. A run refused by this node's dockerd as configured is a hard
// fault: with the systemd cgroup driver, dockerd takes a --cgroup-parent
// that is a systemd slice only, and the instance's cgroup is a path; the
// container cannot run in it here, and Haven does not run it elsewhere
// than in it (the guard could not end it).
func (c *container) runFailed(res runResult) *ContainerError {
	if c.eng.docker() {
		for len(res.lines) > 0 && (strings.TrimSpace(res.lines[len(res.lines)-1]) == "" || strings.HasPrefix(res.lines[len(res.lines)-1], "Run 'docker ")) {
			res.lines = res.lines[:len(res.lines)-1]
		}
		if strings.Contains(strings.Join(res.lines, "\n"), "cgroup-parent for systemd cgroup") {
			return &ContainerError{RIDName: c.rc.RID, Severity: ocf.Hard,
				Msg: "cannot run here: this node's dockerd uses the systemd cgroup driver, which refuses the instance's cgroup as the container's parent: set \"exec-opts\": [\"native.cgroupdriver=cgroupfs\"] in its daemon.json (docs/resources.md, \"The docker engine\")"}
		}
	}
	return c.fail(&EngineError{Call: c.eng.spec.Bin + " run", Msg: res.describe()})
}
