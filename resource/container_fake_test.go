package resource

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
)

// The container driver against a scripted engine: a program named
// podman (or docker), first in PATH, that answers garbage, hangs, fails,
// or is missing. Each is a resource error with a clear message, never a
// hang. Each test runs against both engines (fakeEngines).

// engineNames are the container engines built.
var engineNames = []string{"podman", "docker"}

// fakeEngines runs f once per engine, as a subtest named after it.
func fakeEngines(t *testing.T, f func(t *testing.T, bin string)) {
	for _, bin := range engineNames {
		t.Run(bin, func(t *testing.T) { f(t, bin) })
	}
}

// fakeEngine puts a script of body named bin (podman, docker) first in
// PATH and returns an Env of a node of the test's own (the engines are
// shared by spec).
func fakeEngine(t *testing.T, bin, body string) (Env, *logRec) {
	t.Helper()
	dir := t.TempDir()
	if body != "" {
		if err := os.WriteFile(filepath.Join(dir, bin), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := dir + ":/usr/bin:/bin"
	if body == "" {
		path = dir // no engine at all
	}
	t.Setenv("PATH", path)
	env, rec := testEnv(t)
	// a node of its own each time (-count=N too): an engine keeps the
	// environment it was made with
	fakeNodes++
	env.Cluster, env.Node = "fake", fmt.Sprintf("fake-%s-%d", t.Name(), fakeNodes)
	return env, rec
}

// fakeNodes numbers the nodes of fakeEngine.
var fakeNodes int

func fakeContainer(t *testing.T, bin string, env Env, mod func(*config.ResourceConfig)) *container {
	t.Helper()
	rc := containerRC("web", mod)
	rc.Engine, rc.Timeout = bin, time.Second
	d, err := New(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	return d.(*container)
}

func TestContainerEngineGarbage(t *testing.T) {
	fakeEngines(t, func(t *testing.T, bin string) {
		env, _ := fakeEngine(t, bin, `echo '{"not": a list'`)
		c := fakeContainer(t, bin, env, nil)
		st, reason, fault := c.FaultStatus(context.Background())
		if st != dataset.StatusWarn || fault != "" || !strings.Contains(reason, bin+" ps: unreadable output") {
			t.Fatalf("status %s %q %q", st, reason, fault)
		}
		if err := c.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "unreadable output") {
			t.Fatalf("start: %v", err)
		}
		if err := c.Stop(context.Background()); err == nil || !strings.Contains(err.Error(), "unreadable output") {
			t.Fatalf("stop: %v", err)
		}
	})
}

func TestContainerEngineHangs(t *testing.T) {
	fakeEngines(t, func(t *testing.T, bin string) {
		// a hung engine that also leaves a child holding its output
		env, _ := fakeEngine(t, bin, `sleep 1000 & exec sleep 1000`)
		c := fakeContainer(t, bin, env, nil)
		begin := time.Now()
		st, reason, _ := c.FaultStatus(context.Background())
		if st != dataset.StatusWarn || !strings.Contains(reason, bin+" ps: no answer within 1s (killed)") {
			t.Fatalf("status %s %q", st, reason)
		}
		if err := c.Stop(context.Background()); err == nil || !strings.Contains(err.Error(), "no answer within 1s") {
			t.Fatalf("stop: %v", err)
		}
		if d := time.Since(begin); d > 10*time.Second {
			t.Fatalf("a hung engine held the calls %s", d)
		}
	})
}

func TestContainerEngineFails(t *testing.T) {
	fakeEngines(t, func(t *testing.T, bin string) {
		env, _ := fakeEngine(t, bin, `echo "Error: database is locked" >&2; exit 125`)
		c := fakeContainer(t, bin, env, nil)
		st, reason, _ := c.FaultStatus(context.Background())
		if st != dataset.StatusWarn || reason != bin+" ps: exit code 125: Error: database is locked" {
			t.Fatalf("status %s %q", st, reason)
		}
	})
}

func TestContainerEngineMissing(t *testing.T) {
	fakeEngines(t, func(t *testing.T, bin string) {
		env, _ := fakeEngine(t, bin, "")
		c := fakeContainer(t, bin, env, nil)
		st, reason, fault := c.FaultStatus(context.Background())
		if st != dataset.StatusDown || fault != "hard" || !strings.Contains(reason, "cannot run here: "+bin+" is not installed") {
			t.Fatalf("status %s %q %q", st, reason, fault)
		}
		err := c.Start(context.Background())
		if f, ok := err.(*ContainerError); !ok || f.Severity != "hard" {
			t.Fatalf("start: %#v", err)
		}
	})
}

// fakeID is the id of the scripted engines' container.
const fakeID = "c602ff29bd5798189f938cfb6a668149da4fffc1c4fb2bbc92909e86a316040e"

// fakeScripts are engines of one container, haven.websvc.web, whose
// process is not there: it is listed once $STATE exists (the run creates
// it), with $STATUS (running when unset); the image is not in the
// storage; every call is written to $CALLS. The same story in each
// engine's words.
var fakeScripts = map[string]string{
	"podman": `echo "$*" >> "$CALLS"
case "$1 $2" in
"ps --all") if [ -e "$STATE" ]; then echo '[{"Id":"` + fakeID + `","Names":["haven.websvc.web"],"State":"'"${STATUS:-running}"'","Labels":{"haven.cluster":"fake","haven.node":"'"$NODE"'","haven.service":"websvc","haven.rid":"container#web"}}]'; else echo '[]'; fi ;;
"image exists") exit 1 ;;
"run --detach") touch "$STATE" ;;
esac`,
	"docker": `echo "$*" >> "$CALLS"
case "$1 $2" in
"ps --all") if [ -e "$STATE" ]; then echo ` + fakeID + `; fi ;;
"container inspect") echo '[{"Id":"` + fakeID + `","Name":"/haven.websvc.web","State":{"Status":"'"${STATUS:-running}"'","Pid":0,"ExitCode":0},"Config":{"Image":"localhost/hbox:1","Labels":{"haven.cluster":"fake","haven.node":"'"$NODE"'","haven.service":"websvc","haven.rid":"container#web"}}}]' ;;
"image inspect") echo "Error response from daemon: No such image: $6" >&2; exit 1 ;;
"run --detach") touch "$STATE" ;;
esac`,
}

// scripted is fakeEngine with bin's fakeScripts: the file of its calls.
func scripted(t *testing.T, bin string) (Env, *logRec, string) {
	t.Helper()
	env, rec := fakeEngine(t, bin, fakeScripts[bin])
	calls := filepath.Join(t.TempDir(), "calls")
	t.Setenv("CALLS", calls)
	t.Setenv("STATE", filepath.Join(t.TempDir(), "state"))
	t.Setenv("NODE", env.Node)
	return env, rec, calls
}

// pull = missing: the start pulls an image the node lacks, and a node
// without it is not "cannot run here"; the run's command line carries
// the labels, the host network, the cgroup-free defaults and --pull never.
func TestContainerPullMissingAndRunArgs(t *testing.T) {
	fakeEngines(t, func(t *testing.T, bin string) {
		env, rec, calls := scripted(t, bin)
		c := fakeContainer(t, bin, env, func(rc *config.ResourceConfig) { rc.Pull = "missing" })
		if st, reason, fault := c.FaultStatus(context.Background()); st != dataset.StatusDown || fault != "" {
			t.Fatalf("status %s %q %q", st, reason, fault)
		}
		// the scripted container has no process: the start's confirmation
		// fails, after the calls this test is about
		if err := c.Start(WithFencingToken(context.Background(), 7)); err == nil || !strings.Contains(err.Error(), "at once after its start") {
			t.Fatalf("start: %v\n%s", err, rec)
		}
		b, _ := os.ReadFile(calls)
		got := string(b)
		for _, want := range []string{"pull --quiet -- localhost/hbox:1",
			"run --detach --name haven.websvc.web --label haven.cluster=fake --label haven.service=websvc --label haven.rid=container#web --label haven.node=" + env.Node +
				" --network host --stop-timeout 2 --env HAVEN_FENCING_TOKEN=7 --env HAVEN_NODENAME=" + env.Node + " --env HAVEN_RID=container#web --env HAVEN_SVCNAME=websvc --pull never localhost/hbox:1 sleep 1000"} {
			if !strings.Contains(got, want) {
				t.Errorf("calls lack %q:\n%s", want, got)
			}
		}
	})
}

// pull = always: every start pulls, even with the image here, and a pull
// that fails fails the start naming it; the run's command line carries
// env_file (before the --env, which win), the capabilities and the
// health command with the engine's timer off.
func TestContainerPullAlwaysAndRunArgs(t *testing.T) {
	env, rec := fakeEngine(t, "podman", `echo "$*" >> "$CALLS"
case "$1 $2" in
"ps --all") echo '[]' ;;
"image exists") exit 0 ;;
"pull --quiet") if [ -e "$PULLFAIL" ]; then echo "Error: initializing source docker://localhost/hbox:1: connection refused" >&2; exit 125; fi ;;
esac`)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	t.Setenv("CALLS", calls)
	t.Setenv("PULLFAIL", filepath.Join(dir, "pullfail"))
	envFile := filepath.Join(dir, "web.env")
	if err := os.WriteFile(envFile, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := fakeContainer(t, "podman", env, func(rc *config.ResourceConfig) {
		rc.Pull = "always"
		rc.EnvFile = envFile
		rc.CapDrop = []string{"ALL"}
		rc.CapAdd = []string{"NET_BIND_SERVICE"}
		rc.Healthcheck = "test -e /tmp/ok"
	})
	// the scripted run leaves no container: the start's confirmation fails
	if err := c.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "not found after its start") {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	b, _ := os.ReadFile(calls)
	got := string(b)
	for _, want := range []string{"pull --quiet -- localhost/hbox:1",
		"--network host --stop-timeout 2 --env-file " + envFile + " --env HAVEN_NODENAME=",
		"--cap-drop ALL --cap-add NET_BIND_SERVICE --health-cmd test -e /tmp/ok --health-interval disable --pull never localhost/hbox:1 sleep 1000"} {
		if !strings.Contains(got, want) {
			t.Errorf("calls lack %q:\n%s", want, got)
		}
	}
	if rec.has("A=1") {
		t.Errorf("the env_file's values reached the log:\n%s", rec)
	}

	// a pull that fails fails the start, before any run
	os.WriteFile(filepath.Join(dir, "pullfail"), nil, 0o600)
	os.Remove(calls)
	err := c.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "podman pull: exit code 125: Error: initializing source") {
		t.Fatalf("start with a failing pull: %v", err)
	}
	if b, _ := os.ReadFile(calls); strings.Contains(string(b), "run --detach") {
		t.Fatalf("the start ran the container after its pull failed:\n%s", b)
	}

	// env_file missing on the node: cannot run here (a hard fault)
	os.Remove(envFile)
	st, reason, fault := c.FaultStatus(context.Background())
	if st != dataset.StatusDown || fault != "hard" || !strings.Contains(reason, "cannot run here: env_file "+envFile+" is not a file on this node") {
		t.Fatalf("status without the env_file: %s %q %q", st, reason, fault)
	}
}

// healthcheck with docker: the run passes the health command with
// dockerd's own timer at the node's monitor_interval and 3 retries, and
// each check reads the health state from the listing's container inspect
// (no call of its own): starting and healthy up, unhealthy down, none
// warn. The scripted container's process is a sleep of the test's, in a
// cgroup named after the container's id (as Runs wants).
func TestContainerDockerHealthScripted(t *testing.T) {
	cenv, _ := cgroupEnv(t)
	env, rec := fakeEngine(t, "docker", `echo "$*" >> "$CALLS"
case "$1 $2" in
"ps --all") if [ -e "$STATE" ]; then echo `+fakeID+`; fi ;;
"container inspect") h=""; if [ -e "$HEALTH" ]; then h=',"Health":{"Status":"'"$(cat "$HEALTH")"'"}'; fi
  echo '[{"Id":"`+fakeID+`","Name":"/haven.websvc.web","State":{"Status":"running","Pid":'"$PID"',"ExitCode":0'"$h"'},"Config":{"Image":"localhost/hbox:1","Labels":{"haven.cluster":"fake","haven.node":"'"$NODE"'","haven.service":"websvc","haven.rid":"container#web"}}}]' ;;
"image inspect") exit 0 ;;
"run --detach") touch "$STATE" ;;
esac`)
	env.MonitorInterval = 2 * time.Second
	dir := t.TempDir()
	calls, health := filepath.Join(dir, "calls"), filepath.Join(dir, "health")
	t.Setenv("CALLS", calls)
	t.Setenv("STATE", filepath.Join(dir, "state"))
	t.Setenv("HEALTH", health)
	t.Setenv("NODE", env.Node)
	cg := filepath.Join(cenv.Cgroup, "docker-"+fakeID+".scope")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(cg, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	sleep := exec.Command("sleep", "1000")
	sleep.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	t.Setenv("PID", fmt.Sprint(sleep.Process.Pid))

	c := fakeContainer(t, "docker", env, func(rc *config.ResourceConfig) { rc.Healthcheck = "test -e /tmp/ok" })
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	b, _ := os.ReadFile(calls)
	if want := " --health-cmd test -e /tmp/ok --health-interval 2s --health-retries 3 --pull never localhost/hbox:1 sleep 1000"; !strings.Contains(string(b), want) {
		t.Fatalf("the run lacks %q:\n%s", want, b)
	}
	for _, step := range []struct {
		health string
		want   dataset.Status
		reason string
	}{
		{"starting", dataset.StatusUp, ""},
		{"unhealthy", dataset.StatusDown, "container haven.websvc.web unhealthy (its healthcheck failed 3 times in a row)"},
		{"healthy", dataset.StatusUp, ""},
		{"", dataset.StatusWarn, "container haven.websvc.web runs, its health unknown: docker container inspect: no health state: the container was started without the health command"},
		{"dead", dataset.StatusWarn, `container haven.websvc.web runs, its health unknown: docker container inspect: unreadable health state "dead"`},
	} {
		os.Remove(health)
		if step.health != "" {
			os.WriteFile(health, []byte(step.health), 0o600)
		}
		os.Remove(calls)
		c.eng.changed() // a listing of its own
		st, reason, fault := c.FaultStatus(context.Background())
		if st != step.want || reason != step.reason || fault != "" {
			t.Fatalf("health %q: status %s %q %q", step.health, st, reason, fault)
		}
		// the listing's two calls and nothing else
		b, _ := os.ReadFile(calls)
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "ps --all") || !strings.HasPrefix(lines[1], "container inspect") {
			t.Fatalf("health %q: the check's calls:\n%s", step.health, b)
		}
	}
	if !rec.has("check: down: container haven.websvc.web unhealthy") {
		t.Fatalf("the log does not say unhealthy:\n%s", rec)
	}
}

// network = "bridge": the run puts the container on the engine's bridge
// and publishes each port (--publish, in the config's order), both
// engines with one command line.
func TestContainerBridgeRunArgs(t *testing.T) {
	fakeEngines(t, func(t *testing.T, bin string) {
		env, rec, calls := scripted(t, bin)
		c := fakeContainer(t, bin, env, func(rc *config.ResourceConfig) {
			rc.Network, rc.Ports, rc.Pull = "bridge", []string{"192.0.2.50:8080:80", "53:53/udp"}, "missing"
		})
		if err := c.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "at once after its start") {
			t.Fatalf("start: %v\n%s", err, rec)
		}
		b, _ := os.ReadFile(calls)
		want := "--label haven.node=" + env.Node + " --network bridge --stop-timeout 2 --publish 192.0.2.50:8080:80 --publish 53:53/udp --env "
		if !strings.Contains(string(b), want) {
			t.Errorf("calls lack %q:\n%s", want, b)
		}
	})
}
