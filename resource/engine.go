package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The container engine is driven through its command line with JSON
// output (podman ps --format json), as its own tools and scripts do: no
// socket service to keep running beside the daemon, and the engine's
// configuration (CONTAINERS_STORAGE_CONF, CONTAINERS_CONF, XDG_*) is the
// environment of each call. A call costs a process start of the engine
// (tens of ms of CPU): the status checks of every container resource of
// a node share one listing of the node's containers (engine.list), made
// at most once per listFresh unless a start or stop changed them since.
// docs/design-notes.md has the choice and its measured cost. Docker
// (engine = "docker") is driven the same way; what it says differently
// is in container_docker.go.

// The labels of every container Haven creates: the cluster, the
// service, the resource and the node. A container without them (or with
// another cluster's or node's) is never touched.
const (
	LabelCluster = "haven.cluster"
	LabelService = "haven.service"
	LabelRID     = "haven.rid"
	LabelNode    = "haven.node"
)

const (
	// listFresh is how long a listing of the node's containers answers
	// the status checks: the checks of a round (every container of the
	// node, due together) cost one engine call.
	listFresh = time.Second
	// maxEngineOutput bounds what is read of an engine call's output.
	maxEngineOutput = 16 << 20
	// engineWaitDelay bounds the wait for the output of an engine call
	// killed at its timeout (a child that kept it open).
	engineWaitDelay = time.Second
)

// ContainerName is the name of the container of resource NAME of service
// svc: "haven.SVC.NAME" (a resource name has no dot: the last one splits
// it from the service's, so two resources never share a name).
func ContainerName(svc, rname string) string { return "haven." + svc + "." + rname }

// EngineSpec says which engine and which of its containers: the program
// (found in PATH), the variables added to the daemon's environment for
// it (node.toml container_env), and the cluster and node whose labels
// mark the containers this node may touch.
type EngineSpec struct {
	Bin           string
	Env           []string // KEY=VALUE
	Cluster, Node string
}

// Container is one container of the node as the engine lists it.
type Container struct {
	ID     string            `json:"Id"`
	Names  []string          `json:"Names"`
	State  string            `json:"State"`
	Image  string            `json:"Image"`
	Labels map[string]string `json:"Labels"`
	Exited bool              `json:"Exited"`
	Code   int               `json:"ExitCode"`
	Pid    int               `json:"Pid"`
	// Health is docker's health state ("" without a health command);
	// podman's is asked for (engine.health).
	Health string `json:"-"`
}

// Runs reports whether the container's process runs: the engine says
// running, and its process is there, in the container's cgroup. The
// engine's word alone is not enough: it records the state its monitor
// (conmon) reports, and a monitor killed with the container (the node
// guard kills both) leaves it saying running. A process that ended but
// was not reaped yet (a zombie: its parent, conmon, went with it) does not
// run.
func (c Container) Runs() bool {
	if c.State != "running" || c.Pid <= 0 || c.ID == "" {
		return false
	}
	dir := "/proc/" + strconv.Itoa(c.Pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state is after the last ")"
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	b, err := os.ReadFile(dir + "/cgroup")
	return err == nil && bytes.Contains(b, []byte(c.ID))
}

// Name is the container's first name.
func (c Container) Name() string {
	if len(c.Names) == 0 {
		return ""
	}
	return c.Names[0]
}

// Haven reports whether the container carries the labels of this
// cluster and node: Haven created it here.
func (c Container) Haven(cluster, node string) bool {
	return c.Labels[LabelCluster] == cluster && c.Labels[LabelNode] == node &&
		c.Labels[LabelService] != "" && c.Labels[LabelRID] != ""
}

// engine runs the calls of one EngineSpec; the drivers of one node share
// it (engineFor), and with it the listing of the node's containers.
type engine struct {
	spec EngineSpec
	env  []string // BaseEnv and spec.Env

	mu     sync.Mutex
	gen    uint64    // bumped by every change (a start, a stop)
	snap   *listing  // the last listing
	flight *listCall // the listing under way
}

type listing struct {
	at   time.Time // when its call started
	gen  uint64
	list []Container
}

type listCall struct {
	at   time.Time
	gen  uint64
	done chan struct{}
	res  *listing
	err  error
}

var engines = struct {
	sync.Mutex
	m map[string]*engine
}{m: map[string]*engine{}}

// engineFor is the engine of spec, shared by every driver with the same.
func engineFor(spec EngineSpec) *engine {
	key := strings.Join(append([]string{spec.Bin, spec.Cluster, spec.Node}, spec.Env...), "\x00")
	engines.Lock()
	defer engines.Unlock()
	e := engines.m[key]
	if e == nil {
		e = &engine{spec: spec, env: append(BaseEnv(), spec.Env...)}
		engines.m[key] = e
	}
	return e
}

// EngineError is a failed engine call: the engine is missing, hangs,
// fails or says something that cannot be read.
type EngineError struct {
	Call string // "podman ps"
	Msg  string
	// Missing is set when the engine's program is not found.
	Missing bool
}

func (e *EngineError) Error() string { return e.Call + ": " + e.Msg }

// call runs the engine with args, bounded by timeout (the program and
// whatever it started in its process group killed at the end), and
// returns its standard output; a non-zero exit is an *EngineError with
// the exit code and the last line of its standard error.
func (e *engine) call(ctx context.Context, timeout time.Duration, args ...string) ([]byte, int, error) {
	name := e.spec.Bin + " " + args[0]
	if len(args) > 1 && (args[0] == "image" || args[0] == "container") {
		name += " " + args[1]
	}
	path, err := exec.LookPath(e.spec.Bin)
	if err != nil {
		return nil, -1, &EngineError{Call: name, Msg: e.spec.Bin + " is not installed (not found in PATH)", Missing: true}
	}
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	cmd.Env = e.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = engineWaitDelay
	var out, stderr capped
	out.max, stderr.max = maxEngineOutput, 64<<10
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	switch {
	case cctx.Err() == context.DeadlineExceeded:
		return nil, -1, &EngineError{Call: name, Msg: fmt.Sprintf("no answer within %s (killed): is the engine hung?", timeout)}
	case ctx.Err() != nil:
		return nil, -1, &EngineError{Call: name, Msg: "canceled"}
	case out.over:
		return nil, -1, &EngineError{Call: name, Msg: fmt.Sprintf("more than %d MiB of output", maxEngineOutput>>20)}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		msg := fmt.Sprintf("exit code %d", code)
		if code < 0 {
			msg = ee.String()
		}
		if l := lastLine(stderr.Bytes()); l != "" {
			msg += ": " + l
		}
		return out.Bytes(), code, &EngineError{Call: name, Msg: msg}
	}
	if err != nil {
		return nil, -1, &EngineError{Call: name, Msg: err.Error()}
	}
	return out.Bytes(), 0, nil
}

// capped is a buffer that keeps at most max bytes and says when more came.
type capped struct {
	bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		c.over = true
		p = p[:max(0, c.max-c.Len())]
	}
	c.Buffer.Write(p)
	return len(p), nil
}

// lastLine is the last line of b that is not blank, at most maxLine long.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > maxLine {
		l = l[:maxLine]
	}
	return l
}

// changed tells that a start or stop changed the node's containers: the
// next check lists them again.
func (e *engine) changed() {
	e.mu.Lock()
	e.gen++
	e.mu.Unlock()
}

// list returns the containers labelled with this node, from a listing
// that started at most listFresh ago and after the last change (fresh:
// one that starts now); the callers at the same time share one call.
func (e *engine) list(ctx context.Context, timeout time.Duration, fresh bool) ([]Container, error) {
	now := time.Now()
	e.mu.Lock()
	ok := func(at time.Time, gen uint64) bool {
		return gen == e.gen && (fresh && !at.Before(now) || !fresh && now.Sub(at) < listFresh)
	}
	if s := e.snap; s != nil && ok(s.at, s.gen) {
		e.mu.Unlock()
		return s.list, nil
	}
	c := e.flight
	if c == nil || !ok(c.at, c.gen) {
		c = &listCall{at: now, gen: e.gen, done: make(chan struct{})}
		e.flight = c
		go e.runList(c, timeout)
	}
	e.mu.Unlock()
	select {
	case <-c.done:
		if c.err != nil {
			return nil, c.err
		}
		return c.res.list, nil
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			return nil, &EngineError{Call: e.spec.Bin + " ps", Msg: fmt.Sprintf("no answer within %s: is the engine hung?", timeout)}
		}
		return nil, &EngineError{Call: e.spec.Bin + " ps", Msg: "canceled"}
	}
}

// runList makes the listing of call c (the engine call bounded by
// timeout whoever waits for it).
func (e *engine) runList(c *listCall, timeout time.Duration) {
	list, err := e.ps(context.Background(), timeout)
	e.mu.Lock()
	if err == nil {
		c.res = &listing{at: c.at, gen: c.gen, list: list}
		if e.snap == nil || !c.at.Before(e.snap.at) {
			e.snap = c.res
		}
	}
	c.err = err
	if e.flight == c {
		e.flight = nil
	}
	e.mu.Unlock()
	close(c.done)
}

// ps lists every container labelled with this node (running or not).
func (e *engine) ps(ctx context.Context, timeout time.Duration) ([]Container, error) {
	if e.docker() {
		return e.dockerPs(ctx, timeout)
	}
	out, _, err := e.call(ctx, timeout, "ps", "--all", "--no-trunc", "--format", "json", "--filter", "label="+LabelNode+"="+e.spec.Node)
	if err != nil {
		return nil, err
	}
	var list []Container
	if err := json.Unmarshal(bytes.TrimSpace(out), &list); err != nil {
		return nil, &EngineError{Call: e.spec.Bin + " ps", Msg: fmt.Sprintf("unreadable output (%v): %.80q", err, out)}
	}
	for i := range list {
		if list[i].ID == "" || len(list[i].Names) == 0 {
			return nil, &EngineError{Call: e.spec.Bin + " ps", Msg: fmt.Sprintf("unreadable output: a container without id or name: %.80q", out)}
		}
	}
	return list, nil
}

// find is the container named name in list (nil when none).
func find(list []Container, name string) *Container {
	for i := range list {
		for _, n := range list[i].Names {
			if n == name {
				return &list[i]
			}
		}
	}
	return nil
}

// imageExists reports whether the image is in the engine's storage.
func (e *engine) imageExists(ctx context.Context, timeout time.Duration, image string) (bool, error) {
	if e.docker() {
		return e.dockerImageExists(ctx, timeout, image)
	}
	_, code, err := e.call(ctx, timeout, "image", "exists", "--", image)
	switch {
	case err == nil:
		return true, nil
	case code == 1:
		return false, nil
	}
	return false, err
}

// ListContainers lists the containers labelled with spec's node (Haven's
// own and any other that carries the label), for the daemon's sweep of
// the orphans.
func ListContainers(ctx context.Context, spec EngineSpec, timeout time.Duration) ([]Container, error) {
	return engineFor(spec).list(ctx, timeout, true)
}

// RemoveContainer stops (SIGTERM, SIGKILL stop after stopTimeout) and
// removes a container of this node found orphaned by the daemon; it
// refuses a container without this cluster's and node's labels.
func RemoveContainer(ctx context.Context, spec EngineSpec, c Container, stopTimeout, timeout time.Duration) error {
	if !c.Haven(spec.Cluster, spec.Node) {
		return fmt.Errorf("container %s (%s) is not Haven's on this node: not touched", c.Name(), c.ID)
	}
	return engineFor(spec).remove(ctx, timeout, c, stopTimeout)
}

// remove stops (SIGTERM, then SIGKILL after stopTimeout) and removes
// container c. A container whose process is gone while the engine still
// says running (its monitor, conmon, was killed with it: the node guard)
// is first stopped at once: the engine's stop then takes it as stopped,
// where its rm would wait for the exit its monitor never writes, then
// fail.
func (e *engine) remove(ctx context.Context, timeout time.Duration, c Container, stopTimeout time.Duration) error {
	defer e.changed()
	if e.docker() {
		return e.dockerRemove(ctx, timeout, c, stopTimeout)
	}
	if c.State == "running" && !c.Runs() {
		if _, _, err := e.call(ctx, timeout, "stop", "--ignore", "--time", "0", c.ID); err != nil {
			return err
		}
	}
	_, _, err := e.call(ctx, timeout, "rm", "--force", "--ignore", "--time", fmt.Sprint(int(stopTimeout/time.Second)), c.ID)
	return err
}

// pull fetches image into the engine's storage (its registry, or a
// transport such as oci-archive:).
func (e *engine) pull(ctx context.Context, timeout time.Duration, image string) error {
	_, _, err := e.call(ctx, timeout, "pull", "--quiet", "--", image)
	return err
}

// health is the health state of container ct: "healthy", "starting"
// (failures fewer than its retries in a row) or "unhealthy". Podman runs
// its health command once now; docker's own timer runs it, and the
// listing holds its state.
func (e *engine) health(ctx context.Context, timeout time.Duration, ct Container) (string, error) {
	if e.docker() {
		return dockerHealth(ct)
	}
	id := ct.ID
	_, code, err := e.call(ctx, timeout, "healthcheck", "run", id)
	switch {
	case err == nil:
		return "healthy", nil
	case code != 1:
		return "", err
	}
	out, _, err := e.call(ctx, timeout, "inspect", "--format", "{{.State.Health.Status}}", id)
	if err != nil {
		return "", err
	}
	switch h := strings.TrimSpace(string(out)); h {
	case "healthy", "starting", "unhealthy":
		return h, nil
	default:
		return "", &EngineError{Call: e.spec.Bin + " inspect", Msg: fmt.Sprintf("unreadable health state %.40q", h)}
	}
}

// PullImage fetches image into the storage of spec's engine (svcmgr
// pull), bounded by timeout.
func PullImage(ctx context.Context, spec EngineSpec, image string, timeout time.Duration) error {
	return engineFor(spec).pull(ctx, timeout, image)
}
