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

// svcmgr pull with a registry of the test's own on loopback (no other is
// reachable): the image on no node at first, pull = never, so both say
// `cannot run here`. n1's store does not trust the plain-HTTP registry:
// svcmgr pull fails there, naming n1 and the engine's error, exits 1, and
// pulls on n2, where the service then starts (placement still avoids n1).
// Once n1 trusts the registry, a second pull succeeds on both and n1 says
// `cannot run here` no more.
func TestPodmanContainerSvcmgrPull(t *testing.T) {
	if why := testbed.PodmanUnavailable(); why != "" {
		t.Skip(why)
	}
	if why := testbed.RegistryUnavailable(); why != "" {
		t.Skip(why)
	}
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	reg, err := testbed.StartRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	src, err := testbed.NewPodman(filepath.Join(t.TempDir(), "src"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	if err := src.ImportBusybox("localhost/hbox:1"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Push(src, "localhost/hbox:1", "hbox:1"); err != nil {
		t.Fatal(err)
	}
	image := reg.Addr + "/hbox:1"

	names := []string{"n1", "n2"}
	c := newCluster(t, names, clusterOpts{})
	stores := engineNodes(t, "podman", c, "none")
	if err := stores["n2"].(*testbed.Podman).TrustRegistry(reg.Addr); err != nil {
		t.Fatal(err)
	}
	startNodes(t, c, names)
	createService(t, c["n1"], "web", strings.Replace(containerService("podman", `["n1", "n2"]`), "localhost/hbox:1", image, 1))
	cannot := func(n string) func() bool {
		return func() bool {
			r := c[n].instance("web").Resources["container#web"]
			return r.Fault == "hard" && strings.Contains(r.Log, "cannot run here: image "+image+" is not in this node's engine storage")
		}
	}
	waitFor(t, 30*time.Second, "n1 and n2 say cannot run here", func() bool { return cannot("n1")() && cannot("n2")() })

	r := c["n1"].run("svcmgr", "-s", "web", "pull")
	if r.Code != 1 || !strings.Contains(r.Out, "web: n1: container#web "+image+": failed: podman pull: exit code 125") ||
		!strings.Contains(r.Out, "web: n2: container#web "+image+": pulled") {
		t.Fatalf("svcmgr pull, n1 not trusting the registry: %s", r)
	}
	waitFor(t, 30*time.Second, "web up on n2", upOnlyOn(c["n1"], "web", "n2"))
	if run, _ := stores["n2"].Running(); !slices.Contains(run, "haven.web.web") {
		t.Fatalf("n2's store runs %v", run)
	}
	if !cannot("n1")() {
		t.Fatalf("n1's container#web after a failed pull: %+v", c["n1"].instance("web").Resources["container#web"])
	}
	if lg := readFile(t, filepath.Join(c["n2"].root, "log", "services", "web.log")); !strings.Contains(lg, "container#web pull: "+image+" (svcmgr pull)") {
		t.Fatalf("n2's web log does not show the pull:\n%s", lg)
	}

	if err := stores["n1"].(*testbed.Podman).TrustRegistry(reg.Addr); err != nil {
		t.Fatal(err)
	}
	// asked from n2 this time: n1 pulls on the peer's ask
	if out := c["n2"].must("svcmgr", "-s", "web", "pull"); !strings.Contains(out, "web: n1: container#web "+image+": pulled") {
		t.Fatalf("svcmgr pull: %s", out)
	}
	waitFor(t, 30*time.Second, "n1 can run web's container", func() bool {
		r := c["n1"].instance("web").Resources["container#web"]
		return r.Fault == "" && r.Status == "down"
	})
	if _, err := stores["n1"].Run("image", "exists", image); err != nil {
		t.Fatalf("n1's store lacks the image after the pull: %v", err)
	}
	waitFor(t, 10*time.Second, "web still up on n2 only", upOnlyOn(c["n1"], "web", "n2"))
}

// flexContainerService is containerService as a flex service of target.
func flexContainerService(nodes string, target int) string {
	return strings.Replace(containerService("podman", nodes), "orchestrate = \"ha\"\n",
		fmt.Sprintf("orchestrate = \"ha\"\ntopology = \"flex\"\nflex_target = %d\nupdate_monitor = \"1s\"\n", target), 1)
}

// containerWatch is the observer of the container name on each node:
// each node's store, asked with podman ps, and the container's process in
// /proc (testbed.Podman.Running).
func containerWatch(t *testing.T, stores map[string]testbed.Store, name string) *procWatch {
	probes := map[string]func() bool{}
	for n, p := range stores {
		probes[n] = runningProbe(p, name)
	}
	return watchProbes(t, probes)
}

// A flex service of 3 containers on 4 nodes, the guard on: 3 run; kill -9
// of the daemon of one of them: its guard ends its container, and the
// fourth node starts one; the observer outside the cluster never sees
// more than flex_max (3) running at once.
func TestPodmanContainerFlexKilledDaemon(t *testing.T) {
	if why := testbed.PodmanUnavailable(); why != "" {
		t.Skip(why)
	}
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	names := []string{"n1", "n2", "n3", "n4"}
	c := newCluster(t, names, clusterOpts{timeout: "8s", interval: "1s", extra: `guard_lease = "3s"`})
	stores := engineNodes(t, "podman", c)
	startNodes(t, c, names)
	const name = "haven.web.web"
	w := containerWatch(t, stores, name)
	createService(t, c["n1"], "web", flexContainerService(`["n1", "n2", "n3", "n4"]`, 3))
	waitFor(t, 60*time.Second, "web's container runs on 3 nodes (observer)", func() bool { return len(w.running()) == 3 })
	waitFor(t, 20*time.Second, "n4 shows web up 3/3", func() bool {
		f := c["n4"].status().Services["web"].Flex
		return f != nil && f.Up == 3 && f.Max == 3
	})
	up := w.running()
	victim, spare := up[0], ""
	for _, n := range names {
		if !slices.Contains(up, n) {
			spare = n
		}
	}
	at := time.Now()
	syscallKill(daemonPid(t, c[victim]))
	waitFor(t, 90*time.Second, spare+" runs web's container, "+victim+"'s ended (observer)", func() bool {
		return w.runs(spare) && !w.runs(victim)
	})
	w.moreRounds(3)
	ended, _ := w.last(victim, time.Now())
	started, _ := w.first(spare, at)
	t.Logf("kill -9 of %s's daemon: its container last seen %s after, %s's first %s after (margin %s)", victim,
		ended.Sub(at).Round(time.Millisecond), spare, started.Sub(at).Round(time.Millisecond), started.Sub(ended).Round(time.Millisecond))
	if got := w.running(); len(got) != 3 {
		t.Fatalf("web's container runs on %v after the takeover, want 3 nodes", got)
	}
	if most, when := w.peak(); most > 3 {
		t.Logf("guard: %s", readFile(t, filepath.Join(c[victim].root, "var", "guard.json")))
		t.Fatalf("the observer saw web's container running on %d nodes at once (%s), flex_max is 3", most, when)
	}
}

// containerImages is the image of the running container name in each
// store (podman ps), by node.
func containerImages(t *testing.T, stores map[string]testbed.Store, name string) map[string]string {
	out := map[string]string{}
	for n, p := range stores {
		s, err := p.Run("ps", "--filter", "name=^"+name+"$", "--format", "{{.Image}}")
		if err != nil {
			t.Fatal(err)
		}
		if s = strings.TrimSpace(s); s != "" {
			out[n] = s
		}
	}
	return out
}

// A rollout to a new image tag: a flex service of 3 containers runs
// localhost/hbox:1; svcmgr set of the image to localhost/hbox:2 (a second
// tag of the offline image, on every node), then rollout --wait: every
// instance runs the new tag, never fewer than 2 of the 3 running
// (parallelism 1) nor more than 3 (observer). Then a tag that no node has:
// the turn of its first node fails (the image missing there), the rollout
// rolls back by itself, --wait exits 1 naming the node, the cause and the
// rollback, and the 3 containers run hbox:2 again.
func TestPodmanContainerRolloutImage(t *testing.T) {
	if why := testbed.PodmanUnavailable(); why != "" {
		t.Skip(why)
	}
	t.Parallel() // loopback daemons on ports of its own; mostly waits
	names := []string{"n1", "n2", "n3"}
	c := newCluster(t, names, clusterOpts{})
	stores := engineNodes(t, "podman", c)
	for _, p := range stores {
		if _, err := p.Run("tag", "localhost/hbox:1", "localhost/hbox:2"); err != nil {
			t.Fatal(err)
		}
	}
	startNodes(t, c, names)
	const name = "haven.web.web"
	w := containerWatch(t, stores, name)
	createService(t, c["n1"], "web", flexContainerService(`["n1", "n2", "n3"]`, 3))
	waitFor(t, 60*time.Second, "web's container runs on 3 nodes (observer)", func() bool { return len(w.running()) == 3 })

	c["n2"].must("svcmgr", "-s", "web", "set", "--kw", "container#web.image=localhost/hbox:2")
	waitFor(t, 20*time.Second, "svcmon on n3 shows the old config", func() bool {
		return strings.Count(c["n3"].must("svcmon"), "(old config)") == 3
	})
	from := time.Now()
	if out := c["n3"].must("svcmgr", "-s", "web", "rollout", "--wait", "--time", "90s"); !strings.Contains(out, "done") {
		t.Fatalf("rollout --wait:\n%s", out)
	}
	t.Logf("rollout of 3 containers to a new tag: %s", time.Since(from).Round(10*time.Millisecond))
	if imgs := containerImages(t, stores, name); len(imgs) != 3 || imgs["n1"] != "localhost/hbox:2" || imgs["n2"] != "localhost/hbox:2" || imgs["n3"] != "localhost/hbox:2" {
		t.Fatalf("the images running after the rollout: %v, want localhost/hbox:2 on the 3 nodes", imgs)
	}
	w.moreRounds(3)
	if least, when := w.trough(from); least < 2 {
		t.Fatalf("the observer saw %d containers running at once during the rollout (%s): parallelism 1 keeps 2 of 3", least, when)
	}
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the observer saw %d containers at once (%s), flex_max is 3", most, when)
	}

	// a tag no node has: n1's turn fails, and the rollout rolls back by
	// itself (update_failure_action = rollback, the default): every node
	// holds hbox:2 again, and n1's container runs it
	c["n1"].must("svcmgr", "-s", "web", "set", "--kw", "container#web.image=localhost/hbox:9")
	waitFor(t, 20*time.Second, "svcmon on n2 shows the old config", func() bool {
		return strings.Count(c["n2"].must("svcmon"), "(old config)") == 3
	})
	r := c["n2"].run("svcmgr", "-s", "web", "rollout", "--wait", "--time", "90s")
	if r.Code != 1 || !strings.Contains(r.Err, "n1: ") || !strings.Contains(r.Err, "image localhost/hbox:9 is not in this node's engine storage") ||
		!strings.Contains(r.Err, "rolled back") {
		t.Fatalf("rollout --wait to a missing tag: want exit 1 naming n1, the missing image and the rollback: %s", r)
	}
	waitFor(t, 60*time.Second, "hbox:2 running on 3 nodes after the rollback (observer)", func() bool {
		imgs := containerImages(t, stores, name)
		return len(imgs) == 3 && imgs["n1"] == "localhost/hbox:2" && imgs["n2"] == "localhost/hbox:2" && imgs["n3"] == "localhost/hbox:2"
	})
	w.moreRounds(3)
	if most, when := w.peak(); most > 3 {
		t.Fatalf("the observer saw %d containers at once (%s), flex_max is 3", most, when)
	}
}
