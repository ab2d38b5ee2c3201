package resource

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"haven/config"
	"haven/dataset"
	"haven/internal/cgroup"
	"haven/test/testbed"
)

// The calls of a stop, in each engine's words: podman's rm waits
// stop_timeout after SIGTERM itself; docker's rm --force would SIGKILL at
// once, so its stop comes first.
func TestContainerStopCalls(t *testing.T) {
	want := map[string]string{
		"podman": "rm --force --ignore --time 2 " + fakeID,
		"docker": "stop -t 2 -- " + fakeID + "\nrm --force -- " + fakeID,
	}
	fakeEngines(t, func(t *testing.T, bin string) {
		env, rec, calls := scripted(t, bin)
		if err := os.WriteFile(os.Getenv("STATE"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		c := fakeContainer(t, bin, env, nil)
		if err := c.Stop(context.Background()); err != nil {
			t.Fatalf("stop: %v\n%s", err, rec)
		}
		b, _ := os.ReadFile(calls)
		if !strings.Contains(string(b), want[bin]) {
			t.Fatalf("calls lack %q:\n%s", want[bin], b)
		}
	})
}

// An engine that cannot say whether the image is there (dockerd down:
// docker image inspect exits 1 as for a missing image, with another
// message) is a warn, never "cannot run here": a hard fault would move
// the service for an engine's hiccup.
func TestContainerImageCheckFails(t *testing.T) {
	body := map[string]string{
		"podman": `case "$1" in ps) echo '[]' ;; *) echo "Error: database is locked" >&2; exit 125 ;; esac`,
		"docker": `case "$1" in ps) ;; *) echo "Cannot connect to the Docker daemon at unix:///run/docker.sock. Is the docker daemon running?" >&2; exit 1 ;; esac`,
	}
	fakeEngines(t, func(t *testing.T, bin string) {
		env, _ := fakeEngine(t, bin, body[bin])
		c := fakeContainer(t, bin, env, nil)
		st, reason, fault := c.FaultStatus(context.Background())
		if st != dataset.StatusWarn || fault != "" || !strings.Contains(reason, bin+" image") {
			t.Fatalf("status %s %q %q", st, reason, fault)
		}
	})
}

// Docker's listing: a container removed between its ps and its inspect
// is left out (docker prints the others and exits 1); an id that is not
// one (hostile or garbled output) and a record without its state are
// refused, never passed on as arguments or read as a container.
func TestContainerDockerListing(t *testing.T) {
	rec := `{"Id":"` + fakeID + `","Name":"/haven.websvc.web","State":{"Status":"exited","Pid":0,"ExitCode":3},"Config":{"Image":"x","Labels":{"haven.cluster":"fake","haven.node":"'"$NODE"'","haven.service":"websvc","haven.rid":"container#web"}}}`
	other := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"gone between", `case "$1" in ps) echo ` + fakeID + `; echo ` + other + ` ;; container) echo '[` + rec + `]'; echo "Error: No such container: ` + other + `" >&2; exit 1 ;; esac`,
			"container haven.websvc.web exited (exit code 3)"},
		{"not an id", `case "$1" in ps) echo -- --format ;; container) echo "$*" > "$CALLS" ;; esac`, "docker ps: unreadable output: \"--\" is not a container id"},
		{"no state", `case "$1" in ps) echo ` + fakeID + ` ;; container) echo '[{"Id":"` + fakeID + `","Name":"/haven.websvc.web"}]' ;; esac`,
			"a container without id, name, state or config"},
		{"inspect fails", `case "$1" in ps) echo ` + fakeID + ` ;; container) echo "Error response from daemon: i/o timeout" >&2; exit 1 ;; esac`,
			"docker container inspect: exit code 1: Error response from daemon: i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := fakeEngine(t, "docker", tc.body)
			t.Setenv("NODE", env.Node)
			calls := t.TempDir() + "/calls"
			t.Setenv("CALLS", calls)
			c := fakeContainer(t, "docker", env, nil)
			_, reason, _ := c.FaultStatus(context.Background())
			if !strings.Contains(reason, tc.want) {
				t.Fatalf("reason %q, want %q", reason, tc.want)
			}
			if _, err := os.Stat(calls); err == nil {
				t.Fatal("docker container inspect was called with what ps printed")
			}
		})
	}
}

// A dockerd with the systemd cgroup driver refuses the instance's cgroup
// as the container's parent: the start is a hard fault that says what to
// change, and nothing runs outside the cgroup the guard kills.
func TestContainerDockerSystemdDriverRefused(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	if why := testbed.DockerUnavailable(); why != "" {
		t.Skip(why)
	}
	env, rec := cgroupEnv(t)
	d, err := testbed.NewDockerDriver(t.TempDir(), "systemd")
	if err != nil {
		t.Skipf("docker: no dockerd of the test's own: %v", err)
	}
	t.Cleanup(d.Close)
	if err := d.ImportBusybox("localhost/hbox:1"); err != nil {
		t.Fatal(err)
	}
	env.Cluster, env.EngineEnv, env.Node = "ctest", d.Env, "n-systemd-"+strconv.Itoa(os.Getpid())
	c, err := New(engineRC("docker", "web", nil), env)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start(context.Background())
	var f *ContainerError
	if !errors.As(err, &f) || f.Severity != "hard" || !strings.Contains(f.Msg, "native.cgroupdriver=cgroupfs") {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	if running, _ := d.Running(); len(running) != 0 {
		t.Fatalf("running: %v", running)
	}
}

// A docker run that fails says docker's error, not the line docker adds
// after it ("Run 'docker run --help' for more information").
func TestContainerDockerRunError(t *testing.T) {
	env, _ := fakeEngine(t, "docker", `case "$1" in
ps) ;;
image) echo sha256:1 ;;
run) echo 'docker: Error response from daemon: Conflict. The container name "/haven.websvc.web" is already in use.' >&2; echo >&2; echo "Run 'docker run --help' for more information" >&2; exit 125 ;;
esac`)
	c := fakeContainer(t, "docker", env, nil)
	err := c.Start(context.Background())
	if err == nil || !strings.HasSuffix(err.Error(), `docker run: exit code 125: docker: Error response from daemon: Conflict. The container name "/haven.websvc.web" is already in use.`) {
		t.Fatalf("start: %v", err)
	}
}

// The unlucky sequence: dockerd hangs (SIGSTOP), then the guard kills
// the instance's cgroup. The check says warn while dockerd does not
// answer (never up, never down: whether it runs is not known); the
// container's process ends all the same (the kill is the kernel's, not
// dockerd's); once dockerd answers again, the check says down with the
// kill's exit code, and a start runs a new container.
func TestContainerDockerGuardKillWhileDockerdHung(t *testing.T) {
	t.Parallel() // a dockerd of its own; mostly waits
	env, rec, p := engineEnv(t, "docker")
	d := p.(*testbed.Docker)
	// a time limit that a loaded host's docker calls keep (3 s was not,
	// once, at load 20 on 2 cores), and short enough to wait for the hang
	c, err := New(engineRC("docker", "web", func(rc *config.ResourceConfig) { rc.Timeout = 10 * time.Second }), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start: %v\n%s", err, rec)
	}
	out, err := d.Run("inspect", "--format", "{{.State.Pid}}", ContainerName(env.Service, "web"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	if pid <= 0 || !testbed.Alive(pid) {
		t.Fatalf("the container's process %q", out)
	}
	if err := syscall.Kill(d.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := sync.OnceFunc(func() { syscall.Kill(d.Pid(), syscall.SIGCONT) })
	t.Cleanup(cont)
	c.(*container).eng.changed()
	st, reason, fault := c.(Faulter).FaultStatus(context.Background())
	if st != dataset.StatusWarn || fault != "" || !strings.Contains(reason, "no answer within 10s") {
		t.Fatalf("status with dockerd hung: %s %q %q", st, reason, fault)
	}
	// the guard: kill, wait, remove
	if empty, err := cgroup.End(env.Cgroup, 5*time.Second); err != nil || !empty {
		t.Fatalf("kill the instance's cgroup: empty %v, %v", empty, err)
	}
	if testbed.Alive(pid) {
		t.Fatalf("the container's process %d survived the guard's kill with dockerd hung", pid)
	}
	cont()
	if err := testbed.WaitFor(20*time.Second, 100*time.Millisecond, "the check says down once dockerd answers", func() bool {
		c.(*container).eng.changed()
		st, reason, _ := c.(Faulter).FaultStatus(context.Background())
		return st == dataset.StatusDown && strings.Contains(reason, "exit code 137")
	}); err != nil {
		t.Fatalf("%v\n%s", err, rec)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start after the kill: %v\n%s", err, rec)
	}
	mustStatus(t, c, dataset.StatusUp)
}
