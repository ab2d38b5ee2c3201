package resource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/cgroup"
	"haven/test/testbed"
)

// The container driver against real podman (a store of the test's own,
// testbed.Podman) and real docker (a dockerd of the test's own,
// testbed.Docker), an image built offline from busybox-static. Each
// TestContainerPodmanX has its TestContainerDockerX: the same test. The
// docker ones run side by side (t.Parallel: each its dockerd, its node,
// its cgroups), after the package's serial tests.

// engineEnv is cgroupEnv with an engine (podman, docker) of the test's
// own holding the image localhost/hbox:1: a podman store, or a dockerd
// of its own; it skips without root, the engine, runc or busybox-static,
// or where dockerd does not start.
func engineEnv(t *testing.T, engine string) (Env, *logRec, testbed.Store) {
	t.Helper()
	return engineEnvOf(t, engine, testbed.NewStore)
}

// engineEnvOf is engineEnv with the engine made by newStore.
func engineEnvOf(t *testing.T, engine string, newStore func(engine, dir string) (testbed.Store, error)) (Env, *logRec, testbed.Store) {
	t.Helper()
	env, rec := cgroupEnv(t)
	if why := testbed.EngineUnavailable(engine); why != "" {
		t.Skip(why)
	}
	p, err := newStore(engine, t.TempDir())
	var no *testbed.NoDockerd
	if errors.As(err, &no) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close) // before the cgroups' clean-up (cleanups run last first)
	if err := p.ImportBusybox("localhost/hbox:1"); err != nil {
		t.Fatal(err)
	}
	env.Cluster, env.EngineEnv = "ctest", p.Environ()
	env.Node = "n-" + strconv.Itoa(os.Getpid()) + "-" + strings.ReplaceAll(t.Name(), "/", "-")
	return env, rec, p
}

func containerRC(name string, mod func(*config.ResourceConfig)) config.ResourceConfig {
	rc := config.ResourceConfig{RID: "container#" + name, Type: "container", Name: name, Engine: "podman",
		Image: "localhost/hbox:1", Command: []string{"sleep", "1000"}, Pull: "never", Network: "host",
		StopTimeout: 2 * time.Second, Timeout: 30 * time.Second}
	if mod != nil {
		mod(&rc)
	}
	return rc
}

// engineRC is containerRC with engine.
func engineRC(engine, name string, mod func(*config.ResourceConfig)) config.ResourceConfig {
	rc := containerRC(name, mod)
	rc.Engine = engine
	return rc
}

func mustStatus(t *testing.T, d Driver, want dataset.Status) string {
	t.Helper()
	st, reason, _ := d.(Faulter).FaultStatus(context.Background())
	if st != want {
		t.Fatalf("status %s (%s), want %s", st, reason, want)
	}
	return reason
}

// Start, check, a second driver (a restarted daemon) adopting the
// running container, stop; the labels and the environment of the
// container; its process in the instance's cgroup.
func TestContainerPodmanStartAdoptStop(t *testing.T) { containerStartAdoptStop(t, "podman") }
func TestContainerDockerStartAdoptStop(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerStartAdoptStop(t, "docker")
}

func containerStartAdoptStop(t *testing.T, engine string) {
	env, rec, p := engineEnv(t, engine)
	rc := engineRC(engine, "web", func(rc *config.ResourceConfig) {
		rc.ContainerEnv = map[string]string{"GREETING": "hello"}
	})
	d, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, d, dataset.StatusDown)
	ctx := WithFencingToken(context.Background(), 42)
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	mustStatus(t, d, dataset.StatusUp)
	name := ContainerName(env.Service, "web")
	out, err := p.Run("inspect", "--format", "{{json .Config.Labels}} {{json .Config.Env}} {{.State.Pid}}", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"haven.cluster":"ctest"`, `"haven.service":"websvc"`, `"haven.rid":"container#web"`, `"haven.node":"` + env.Node + `"`,
		`"HAVEN_FENCING_TOKEN=42"`, `"GREETING=hello"`, `"HAVEN_RID=container#web"`} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %s:\n%s", want, out)
		}
	}
	// the container's process is in the instance's cgroup: the guard's
	// kill of the group ends it
	f := strings.Fields(out)
	pid, _ := strconv.Atoi(f[len(f)-1])
	procs, err := cgroup.Procs(env.Cgroup)
	if err != nil {
		t.Fatal(err)
	}
	if !containsInt(procs, pid) {
		t.Fatalf("the container's process %d is not in the instance's cgroup %s (%v)", pid, env.Cgroup, procs)
	}

	// a daemon restarted: a new driver finds it running
	d2, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, d2, dataset.StatusUp)
	if err := d2.Start(context.Background()); err != nil || !rec.has("already running") {
		t.Fatalf("a start of the running container: %v\n%s", err, rec)
	}

	if err := d2.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v\n%s", err, rec)
	}
	mustStatus(t, d, dataset.StatusDown)
	if names, _ := p.Run("ps", "--all", "--format", "{{.Names}}"); strings.TrimSpace(names) != "" {
		t.Fatalf("containers left after the stop: %s", names)
	}
	if err := d.Stop(context.Background()); err != nil || !rec.has("nothing to do") {
		t.Fatalf("a second stop: %v\n%s", err, rec)
	}
}

// startedContainer is the resource container#web of containerRC, started.
func startedContainer(t *testing.T, engine string, env Env, rec *logRec) Driver {
	t.Helper()
	d, err := New(engineRC(engine, "web", nil), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	return d
}

func containsInt(l []int, v int) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// A container that exits is down; a start removes it and runs a new one;
// a container that exits at once fails its start with its last output.
func TestContainerPodmanExitedAndFailedStart(t *testing.T) {
	containerExitedAndFailedStart(t, "podman")
}
func TestContainerDockerExitedAndFailedStart(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerExitedAndFailedStart(t, "docker")
}

func containerExitedAndFailedStart(t *testing.T, engine string) {
	env, rec, p := engineEnv(t, engine)
	d := startedContainer(t, engine, env, rec)
	name := ContainerName(env.Service, "web")
	if _, err := p.Run("kill", name); err != nil {
		t.Fatal(err)
	}
	d.(*container).eng.changed() // the test's own kill, behind the driver's back
	if err := testbed.WaitFor(10*time.Second, 50*time.Millisecond, "the killed container down", func() bool {
		st, _, _ := d.(Faulter).FaultStatus(context.Background())
		return st == dataset.StatusDown
	}); err != nil {
		t.Fatal(err)
	}
	if reason := mustStatus(t, d, dataset.StatusDown); !strings.Contains(reason, "(exit code 137)") {
		t.Fatalf("reason %q", reason)
	}
	if err := d.Start(context.Background()); err != nil || !rec.has("container "+name+" of an earlier start") {
		t.Fatalf("start after an exit: %v\n%s", err, rec)
	}
	mustStatus(t, d, dataset.StatusUp)

	bad, err := New(engineRC(engine, "bad", func(rc *config.ResourceConfig) {
		rc.Command = []string{"sh", "-c", "echo the config file is missing; exit 3"}
	}), env)
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Start(context.Background())
	if err == nil {
		// its process still ran at the start's confirmation (docker's run
		// returns as soon as it starts): the next check says it exited
		t.Logf("the container that exits at once still ran at its start's confirmation")
		if err := testbed.WaitFor(10*time.Second, 50*time.Millisecond, "the container that exits at once down", func() bool {
			bad.(*container).eng.changed()
			st, reason, _ := bad.(Faulter).FaultStatus(context.Background())
			return st == dataset.StatusDown && strings.Contains(reason, "exit code 3")
		}); err != nil {
			t.Fatal(err)
		}
	} else if !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "the config file is missing") {
		t.Fatalf("start of a container that exits at once: %v\n%s", err, rec)
	}
}

// An image not in the node's store with pull = never: the status says
// cannot run here with a hard fault (placement avoids the node), the
// start fails with the same fault. A rootfs directory runs without an
// image; a missing one is a hard fault too.
func TestContainerPodmanMissingImageAndRootfs(t *testing.T) {
	containerMissingImageAndRootfs(t, "podman")
}
func TestContainerDockerMissingImageAndRootfs(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerMissingImageAndRootfs(t, "docker")
}

func containerMissingImageAndRootfs(t *testing.T, engine string) {
	env, rec, _ := engineEnv(t, engine)
	d, err := New(engineRC(engine, "web", func(rc *config.ResourceConfig) { rc.Image = "localhost/nothere:1" }), env)
	if err != nil {
		t.Fatal(err)
	}
	st, reason, fault := d.(Faulter).FaultStatus(context.Background())
	if st != dataset.StatusDown || fault != "hard" || !strings.Contains(reason, "cannot run here: image localhost/nothere:1 is not in this node's engine storage") {
		t.Fatalf("status %s %q fault %q", st, reason, fault)
	}
	err = d.Start(context.Background())
	var f interface{ Fault() (string, string) }
	if !errors.As(err, &f) {
		t.Fatalf("start: %v", err)
	}
	if rid, sev := f.Fault(); rid != "container#web" || sev != "hard" {
		t.Fatalf("start's fault %s %s: %v", rid, sev, err)
	}

	if engine == "docker" {
		return // docker runs images only: a rootfs is refused by the config
	}
	root := filepath.Join(t.TempDir(), "rootfs")
	rd, err := New(engineRC(engine, "root", func(rc *config.ResourceConfig) { rc.Image, rc.Rootfs = "", root }), env)
	if err != nil {
		t.Fatal(err)
	}
	if _, reason, fault := rd.(Faulter).FaultStatus(context.Background()); fault != "hard" || !strings.Contains(reason, "rootfs") {
		t.Fatalf("missing rootfs: %q %q", reason, fault)
	}
	if err := testbed.BusyboxRootfs(root); err != nil {
		t.Fatal(err)
	}
	if err := rd.Start(context.Background()); err != nil {
		t.Fatalf("start from a rootfs: %v\n%s", err, rec)
	}
	mustStatus(t, rd, dataset.StatusUp)
	if err := rd.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A container with the name Haven would give, not created by Haven (no
// labels), is never touched: the status says so, the start refuses, the
// stop leaves it running; the sweep's list skips it and RemoveContainer
// refuses it. A container of Haven's labels whose resource is gone is
// removed by RemoveContainer.
func TestContainerPodmanForeignAndOrphan(t *testing.T) { containerForeignAndOrphan(t, "podman") }
func TestContainerDockerForeignAndOrphan(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerForeignAndOrphan(t, "docker")
}

func containerForeignAndOrphan(t *testing.T, engine string) {
	env, rec, p := engineEnv(t, engine)
	name := ContainerName(env.Service, "web")
	if _, err := p.Run("run", "--detach", "--name", name, "--network", "host", "--label", LabelNode+"="+env.Node, "localhost/hbox:1", "sleep", "1000"); err != nil {
		t.Fatal(err)
	}
	d, err := New(engineRC(engine, "web", nil), env)
	if err != nil {
		t.Fatal(err)
	}
	if reason := mustStatus(t, d, dataset.StatusDown); !strings.Contains(reason, "labels of another owner") {
		t.Fatalf("reason %q", reason)
	}
	if err := d.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "not touched") {
		t.Fatalf("start beside a foreign container: %v", err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	spec := EngineSpec{Bin: engine, Env: env.EngineEnv, Cluster: env.Cluster, Node: env.Node}
	list, err := ListContainers(context.Background(), spec, 30*time.Second)
	if err != nil || len(list) != 1 || list[0].Haven(env.Cluster, env.Node) {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := RemoveContainer(context.Background(), spec, list[0], time.Second, 30*time.Second); err == nil {
		t.Fatal("RemoveContainer took a foreign container")
	}
	if running, _ := p.Running(); len(running) != 1 {
		t.Fatalf("the foreign container was touched: running %v\n%s", running, rec)
	}

	// an orphan: Haven's labels, its resource gone from the config
	o, err := New(engineRC(engine, "old", nil), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	list, err = ListContainers(context.Background(), spec, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := find(list, ContainerName(env.Service, "old"))
	if c == nil || !c.Haven(env.Cluster, env.Node) || c.Labels[LabelRID] != "container#old" {
		t.Fatalf("orphan in the list: %+v", list)
	}
	if err := RemoveContainer(context.Background(), spec, *c, time.Second, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if running, _ := p.Running(); len(running) != 1 || running[0] != name {
		t.Fatalf("running after the orphan's removal: %v", running)
	}
}

// The node guard kills the instance's cgroup: the container's process and
// its monitor (conmon) end, and the engine, told nothing, still says
// running. The check says down all the same; a stop removes it, a start
// runs a new one.
func TestContainerPodmanGuardKill(t *testing.T) { containerGuardKill(t, "podman") }
func TestContainerDockerGuardKill(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerGuardKill(t, "docker")
}

func containerGuardKill(t *testing.T, engine string) {
	env, rec, p := engineEnv(t, engine)
	d := startedContainer(t, engine, env, rec)
	name := ContainerName(env.Service, "web")
	// as the guard does: kill, wait, remove the group
	if empty, err := cgroup.KillWait(env.Cgroup, 5*time.Second); err != nil || !empty {
		t.Fatalf("kill the instance's cgroup: empty %v, %v", empty, err)
	}
	if err := cgroup.Remove(env.Cgroup); err != nil {
		t.Fatal(err)
	}
	if out, _ := p.Run("ps", "--format", "{{.Names}} {{.Status}}"); !strings.Contains(out, name+" Up") {
		t.Logf("the engine no longer says running (%q): the case this test is about did not arise", out)
	}
	d.(*container).eng.changed()
	if reason := mustStatus(t, d, dataset.StatusDown); !strings.Contains(reason, "is gone") && !strings.Contains(reason, "exit code") {
		t.Fatalf("reason %q", reason)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start after the kill: %v\n%s", err, rec)
	}
	mustStatus(t, d, dataset.StatusUp)
	if err := d.Stop(context.Background()); err != nil {
		t.Fatalf("stop: %v\n%s", err, rec)
	}
}

// env_file, cap_drop/cap_add and the health command with a real engine:
// the file's variables reach the container under the env keyword's; the
// container's process has the capabilities asked for and no other; the
// health command: starting (up), then unhealthy (down) after its 3rd
// failure in a row, then healthy (up) once it passes. Podman: each check
// runs it; docker: dockerd runs it every monitor_interval (1s here) and
// the checks read its state.
func TestContainerPodmanEnvFileCapsHealth(t *testing.T) {
	containerEnvFileCapsHealth(t, "podman")
}

func TestContainerDockerEnvFileCapsHealth(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	containerEnvFileCapsHealth(t, "docker")
}

func containerEnvFileCapsHealth(t *testing.T, engine string) {
	env, rec, p := engineEnv(t, engine)
	env.MonitorInterval = time.Second
	envFile := filepath.Join(t.TempDir(), "web.env")
	if err := os.WriteFile(envFile, []byte("# the file's\nFROM_FILE=file\nBOTH=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rc := engineRC(engine, "web", func(rc *config.ResourceConfig) {
		rc.EnvFile = envFile
		rc.ContainerEnv = map[string]string{"BOTH": "env"}
		rc.CapDrop = []string{"ALL"}
		rc.CapAdd = []string{"NET_BIND_SERVICE"}
		rc.Healthcheck = "test -e /tmp/ok"
	})
	d, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	t.Cleanup(func() { d.Stop(context.Background()) })
	name := ContainerName(env.Service, "web")
	out, err := p.Run("inspect", "--format", "{{.State.Pid}}", name)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out)
	// what the process sees (docker's record keeps both BOTH, in order;
	// the process has the last)
	environ, err := os.ReadFile("/proc/" + f[len(f)-1] + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	vars := strings.Split(string(environ), "\x00")
	if !slices.Contains(vars, "FROM_FILE=file") || !slices.Contains(vars, "BOTH=env") || slices.Contains(vars, "BOTH=file") {
		t.Fatalf("the container's process's environment: %q", vars)
	}
	status, err := os.ReadFile("/proc/" + f[len(f)-1] + "/status")
	if err != nil {
		t.Fatal(err)
	}
	// NET_BIND_SERVICE is capability 10: 0x400, and nothing else
	if !strings.Contains(string(status), "CapEff:\t0000000000000400\n") {
		t.Fatalf("the container's capabilities are not NET_BIND_SERVICE alone:\n%s", status)
	}

	// the health command fails: starting (up), then unhealthy
	unhealthy := "container " + name + " unhealthy (its healthcheck failed 3 times in a row)"
	if engine == "podman" {
		// each check runs it: up twice, down at the third
		for i := 1; i <= 2; i++ {
			mustStatus(t, d, dataset.StatusUp)
		}
		if reason := mustStatus(t, d, dataset.StatusDown); reason != unhealthy {
			t.Fatalf("unhealthy: %q", reason)
		}
	} else {
		// dockerd's timer: starting until its 3rd failure, 3s from the start
		mustStatus(t, d, dataset.StatusUp)
		var st dataset.Status
		var reason string
		eventually(t, 30*time.Second, "never unhealthy", func() bool {
			st, reason, _ = d.(Faulter).FaultStatus(context.Background())
			return st != dataset.StatusUp
		})
		if st != dataset.StatusDown || reason != unhealthy {
			t.Fatalf("status %s %q, want down %q", st, reason, unhealthy)
		}
	}
	if !rec.has("check: down: container " + name + " unhealthy") {
		t.Fatalf("the log does not say unhealthy:\n%s", rec)
	}
	if _, err := p.Run("exec", name, "sh", "-c", ">/tmp/ok"); err != nil {
		t.Fatal(err)
	}
	if engine == "podman" {
		mustStatus(t, d, dataset.StatusUp)
	} else {
		eventually(t, 30*time.Second, "never healthy again", func() bool {
			st, _, _ := d.(Faulter).FaultStatus(context.Background())
			return st == dataset.StatusUp
		})
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// pull = always with real podman and no registry: the start's pull fails,
// naming the pull, and runs nothing, though the image is here.
func TestContainerPodmanPullAlwaysNoRegistry(t *testing.T) {
	env, rec, p := engineEnv(t, "podman")
	// a loopback registry that is not there: refused at once
	if _, err := p.Run("tag", "localhost/hbox:1", "127.0.0.1:1/hbox:1"); err != nil {
		t.Fatal(err)
	}
	d, err := New(containerRC("web", func(rc *config.ResourceConfig) { rc.Image = "127.0.0.1:1/hbox:1"; rc.Pull = "always" }), env)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, d, dataset.StatusDown)
	err = d.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "podman pull: exit code 125") {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	if names, _ := p.Run("ps", "--all", "--format", "{{.Names}}"); strings.TrimSpace(names) != "" {
		t.Fatalf("containers after the failed pull: %s", names)
	}
}
