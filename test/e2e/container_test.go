package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"haven/test/testbed"
)

// Containers with real podman and real docker: each node has its own
// store (testbed.Podman) or dockerd (testbed.Docker), given to the node as
// node.toml container_env, holding an image built offline from
// busybox-static. The observer is outside the cluster: `podman ps` of
// each node's store, `docker ps` of each node's dockerd. Each
// TestPodmanX has its TestDockerX: the same test.

// containerService is a failover service of one container of engine on
// nodes.
func containerService(engine, nodes string) string {
	return fmt.Sprintf(`[DEFAULT]
orchestrate = "ha"
nodes = %s

[container.web]
engine = %q
image = "localhost/hbox:1"
command = ["sleep", "100000"]
stop_timeout = "1s"
monitor = true
`, nodes, engine)
}

// engineNodes gives each node of c a podman store (or a dockerd) of its
// own, in its node.toml, with the image localhost/hbox:1 on the nodes
// withImage (every node when none is named). It skips where dockerd does
// not start.
func engineNodes(t *testing.T, engine string, c map[string]*node, withImage ...string) map[string]testbed.Store {
	t.Helper()
	out := map[string]testbed.Store{}
	for name, n := range c {
		p, err := testbed.NewStore(engine, filepath.Join(t.TempDir(), engine+"-"+name))
		var no *testbed.NoDockerd
		if errors.As(err, &no) {
			t.Skip(err)
		} else if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// the daemon first: it would start again what is removed
			testbed.StopDaemon(filepath.Join(binDir, "nodemgr"), n.root)
			p.Close()
		})
		if len(withImage) > 0 && !slices.Contains(withImage, name) {
			// no image here
		} else if err := p.ImportBusybox("localhost/hbox:1"); err != nil {
			t.Fatal(err)
		}
		var kv []string
		for _, e := range p.Environ() {
			k, v, _ := strings.Cut(e, "=")
			kv = append(kv, fmt.Sprintf("%s = %q", k, v))
		}
		path := filepath.Join(n.root, "etc", "node.toml")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), "[node]\n", "[node]\ncontainer_env = { "+strings.Join(kv, ", ")+" }\n", 1)
		writeFile(t, path, s)
		out[name] = p
	}
	return out
}

// runningProbe: the store runs the container named name (podman ps,
// docker ps).
func runningProbe(p testbed.Store, name string) func() bool {
	return func() bool {
		r, err := p.Running()
		return err == nil && slices.Contains(r, name)
	}
}

// A failover service of one container on 2 nodes, the guard on: kill -9
// of the owner's daemon. Its guard ends the container (its processes are
// in the instance's cgroup) before the other node starts it there; the
// observer never sees it run on both.
func TestPodmanContainerFailoverGuard(t *testing.T) { containerFailoverGuard(t, "podman") }

// TestDockerContainerFailoverGuard: with docker the container's processes
// are in the instance's cgroup, its shim outside (dockerd's child): the
// guard ends the processes, the shim records their exit.
func TestDockerContainerFailoverGuard(t *testing.T) { containerFailoverGuard(t, "docker") }

func containerFailoverGuard(t *testing.T, engine string) {
	if why := testbed.EngineUnavailable(engine); why != "" {
		t.Skip(why)
	}
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	names := []string{"n1", "n2"}
	// no quorum: n2 starts web hb.timeout + ready_period after n1's
	// daemon died; n1's guard ends it within guard_lease + 2.5 s
	c := newCluster(t, names, clusterOpts{timeout: "8s", interval: "1s", extra: `guard_lease = "3s"`})
	stores := engineNodes(t, engine, c)
	startNodes(t, c, names)
	const name = "haven.web.web"
	createService(t, c["n1"], "web", containerService(engine, `["n1", "n2"]`))
	waitFor(t, 30*time.Second, "web up on n1", upOnlyOn(c["n2"], "web", "n1"))
	if r, _ := stores["n1"].Running(); !slices.Equal(r, []string{name}) {
		t.Fatalf("n1's store runs %v, want %s", r, name)
	}
	w := watchProbes(t, map[string]func() bool{"n1": runningProbe(stores["n1"], name), "n2": runningProbe(stores["n2"], name)})
	at := time.Now()
	syscallKill(daemonPid(t, c["n1"]))
	waitFor(t, 60*time.Second, "web's container runs on n2 (observer)", func() bool { return w.runs("n2") })
	w.moreRounds(3)
	if o := w.overlaps(); len(o) > 0 {
		out, err := stores["n1"].Run("inspect", "--format", "{{.State.Pid}} {{.State.Status}}", name)
		t.Logf("n1: %s %v", out, err)
		f := strings.Fields(out)
		if len(f) > 0 {
			b, _ := os.ReadFile("/proc/" + f[0] + "/status")
			t.Logf("proc: %.200s", b)
			b, _ = os.ReadFile("/proc/" + f[0] + "/cgroup")
			t.Logf("cgroup: %s", b)
		}
		t.Logf("guard: %s", readFile(t, filepath.Join(c["n1"].root, "var", "guard.json")))
		t.Fatalf("the observer saw web's container running on both nodes: %v", o)
	}
	if w.runs("n1") {
		t.Fatal("web's container still runs on n1")
	}
	started, _ := w.first("n2", at)
	last, _ := w.last("n1", started)
	t.Logf("n1's container last seen %s after the kill, n2's first %s after (margin %s)",
		last.Sub(at).Round(time.Millisecond), started.Sub(at).Round(time.Millisecond), started.Sub(last).Round(time.Millisecond))
	if rec := readFile(t, filepath.Join(c["n1"].root, "var", "guard.json")); !strings.Contains(rec, `"service": "web"`) {
		t.Fatalf("n1's guard record does not name web:\n%s", rec)
	}
}

// The image only on n2, n1 first in the nodes: n1 says the container
// cannot run there and the service is placed on n2. A daemon restart on
// n2 adopts the running container (the same one, no second start). Before
// the restart, a container of Haven's labels for a service that is not
// there appears in n2's store, and one without Haven's labels: the
// restarted daemon stops and removes the first (an orphan), never touches
// the second.
func TestPodmanContainerPlacementAdoptOrphan(t *testing.T) {
	containerPlacementAdoptOrphan(t, "podman")
}

// TestDockerContainerPlacementAdoptOrphan: the same with docker.
func TestDockerContainerPlacementAdoptOrphan(t *testing.T) {
	containerPlacementAdoptOrphan(t, "docker")
}

func containerPlacementAdoptOrphan(t *testing.T, engine string) {
	if why := testbed.EngineUnavailable(engine); why != "" {
		t.Skip(why)
	}
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	stores := engineNodes(t, engine, c, "n2")
	startNodes(t, c, names)
	const name = "haven.web.web"
	createService(t, c["n1"], "web", containerService(engine, `["n1", "n2"]`))
	waitFor(t, 30*time.Second, "web up on n2", upOnlyOn(c["n1"], "web", "n2"))
	r := c["n1"].instance("web").Resources["container#web"]
	if r.Fault != "hard" || !strings.Contains(r.Log, "cannot run here: image localhost/hbox:1 is not in this node's engine storage") {
		t.Fatalf("n1's container#web: %+v", r)
	}
	id, err := stores["n2"].Run("inspect", "--format", "{{.Id}}", name)
	if err != nil {
		t.Fatal(err)
	}

	// made while the daemon runs (its sweep is at start-up and every
	// check_interval, a minute), so that its restart is quick: a daemon
	// stopped longer than maintenance_grace_period lets its guard end web
	if _, err := stores["n2"].Run("run", "--detach", "--name", "haven.gone.db", "--network", "host",
		"--label", "haven.cluster=test", "--label", "haven.node=n2", "--label", "haven.service=gone", "--label", "haven.rid=container#db",
		"localhost/hbox:1", "sleep", "100000"); err != nil {
		t.Fatal(err)
	}
	if _, err := stores["n2"].Run("run", "--detach", "--name", "foreign", "--network", "host", "--label", "haven.node=n2", "localhost/hbox:1", "sleep", "100000"); err != nil {
		t.Fatal(err)
	}
	c["n2"].must("nodemgr", "daemon", "stop")
	c["n2"].startDaemon()
	waitFor(t, 30*time.Second, "the orphan removed", func() bool {
		out, err := stores["n2"].Run("ps", "--all", "--format", "{{.Names}}")
		return err == nil && !strings.Contains(out, "haven.gone.db")
	})
	if run, _ := stores["n2"].Running(); !slices.Contains(run, "foreign") || !slices.Contains(run, name) {
		t.Fatalf("n2 runs %v, want foreign and %s", run, name)
	}
	if id2, _ := stores["n2"].Run("inspect", "--format", "{{.Id}}", name); id2 != id {
		t.Fatalf("web's container on n2 is %s, was %s: not adopted", id2, id)
	}
	waitFor(t, 30*time.Second, "web up on n2 after the restart", upOnlyOn(c["n1"], "web", "n2"))
	if lg := readFile(t, filepath.Join(c["n2"].root, "log", "node.log")); !strings.Contains(lg, "orphan container") {
		t.Fatal("n2's log does not report the orphan")
	}
	lg := readFile(t, filepath.Join(c["n2"].root, "log", "services", "web.log"))
	if n := strings.Count(lg, "container#web start: "+engine+" run"); n != 1 {
		t.Fatalf("web's log on n2 has %d container starts, want 1:\n%s", n, lg)
	}
}
