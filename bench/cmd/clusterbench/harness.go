package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"haven/api"
	"haven/dataset"
)

// bnode is one real daemon with its own root.
type bnode struct {
	name string
	root string
	port int
	c    *api.Client
}

type opts struct {
	timeout  time.Duration // hb.timeout
	interval time.Duration // hb.interval
	ready    time.Duration // ready_period
	monitor  time.Duration // monitor_interval (0: default)
	check    time.Duration // check_interval (0: default)
}

type cluster struct {
	dir   string
	nodes []*bnode
	by    map[string]*bnode
}

// all clusters made by this run, for the clean-up on exit.
var (
	clustersMu sync.Mutex
	clusters   []*cluster
)

var nodemgr string // path of the nodemgr binary

// buildBinaries builds nodemgr from the module this program runs in.
func buildBinaries(dir string) error {
	cmd := exec.Command("go", "build", "-o", dir+"/", "haven/cmd/nodemgr")
	if root := os.Getenv("HAVEN_SRC"); root != "" {
		cmd.Dir = root
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build nodemgr: %w", err)
	}
	nodemgr = filepath.Join(dir, "nodemgr")
	return nil
}

// freePort returns a port free for TCP and UDP on 127.0.0.1, taken below
// the kernel's ephemeral range, so that the outgoing connections of the
// daemons started earlier cannot take it before its daemon binds it.
func freePort() (int, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, _ = strconv.Atoi(f[0])
		}
	}
	base := max(1024, lo-12000)
	for range 200 {
		port := base + mrand.IntN(lo-base)
		if usedPorts[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			usedPorts[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port")
}

var usedPorts = map[int]bool{}

// newCluster writes the roots of n nodes (n1..nN) on loopback. A single
// node gets no cluster.toml.
// formCluster makes n nodes, starts their daemons and waits until every
// node sees every other up. On error nothing is left running.
func formCluster(n int, o opts) (*cluster, error) {
	c, err := newCluster(n, o)
	if err != nil {
		return nil, err
	}
	if err := c.startAll(); err != nil {
		c.close()
		return nil, err
	}
	if err := c.waitConverged(120*time.Second, c.nodes); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func newCluster(n int, o opts) (*cluster, error) {
	dir, err := os.MkdirTemp("", "havenbench-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, by: map[string]*bnode{}}
	clustersMu.Lock()
	clusters = append(clusters, c)
	clustersMu.Unlock()
	sec := make([]byte, 32)
	rand.Read(sec)
	var members strings.Builder
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		port, err := freePort()
		if err != nil {
			return c, err
		}
		b := &bnode{name: name, root: filepath.Join(dir, name), port: port}
		b.c = api.NewClient(filepath.Join(b.root, "run", "daemon.sock"))
		c.nodes = append(c.nodes, b)
		c.by[name] = b
		fmt.Fprintf(&members, "%s = \"127.0.0.1:%d\"\n", name, port)
	}
	for _, b := range c.nodes {
		if err := os.MkdirAll(filepath.Join(b.root, "etc"), 0o755); err != nil {
			return c, err
		}
		var nt strings.Builder
		fmt.Fprintf(&nt, "[node]\nname = %q\n", b.name)
		if o.ready > 0 {
			fmt.Fprintf(&nt, "ready_period = %q\n", o.ready.String())
		}
		if o.monitor > 0 {
			fmt.Fprintf(&nt, "monitor_interval = %q\n", o.monitor.String())
		}
		if o.check > 0 {
			fmt.Fprintf(&nt, "check_interval = %q\n", o.check.String())
		}
		if n > 1 {
			fmt.Fprintf(&nt, "rejoin_grace_period = \"30s\"\n")
			fmt.Fprintf(&nt, "\n[hb]\naddr = \"127.0.0.1\"\nport = %d\n", b.port)
			if o.timeout > 0 {
				fmt.Fprintf(&nt, "timeout = %q\n", o.timeout.String())
			}
			if o.interval > 0 {
				fmt.Fprintf(&nt, "interval = %q\n", o.interval.String())
			}
		}
		if err := os.WriteFile(filepath.Join(b.root, "etc", "node.toml"), []byte(nt.String()), 0o644); err != nil {
			return c, err
		}
		if n > 1 {
			cl := fmt.Sprintf("[cluster]\nname = \"bench\"\nsecret = %q\n\n[nodes]\n%s", hex.EncodeToString(sec), members.String())
			// 0600: the daemon refuses a secret other users may read
			if err := os.WriteFile(filepath.Join(b.root, "etc", "cluster.toml"), []byte(cl), 0o600); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// start runs `nodemgr daemon start`, which returns once the API answers.
func (b *bnode) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, nodemgr, "--root", b.root, "daemon", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: daemon start: %v: %s", b.name, err, out)
	}
	return nil
}

func (b *bnode) pid() int {
	buf, err := os.ReadFile(filepath.Join(b.root, "run", "daemon.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf)))
	return pid
}

func (c *cluster) startAll() error {
	for _, b := range c.nodes {
		if err := b.start(); err != nil {
			return err
		}
	}
	return nil
}

func (b *bnode) status() (*dataset.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.c.Status(ctx)
}

// waitFor polls cond every 100ms until it holds or d passes.
func waitFor(d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// waitConverged waits until every live node sees every other live node up
// and is itself idle (out of rejoin).
func (c *cluster) waitConverged(d time.Duration, live []*bnode) error {
	return waitFor(d, "the cluster to converge", func() bool {
		for _, a := range live {
			st, err := a.status()
			if err != nil || st.Nodes[a.name].Monitor != dataset.NodeIdle {
				return false
			}
			for _, b := range live {
				if st.Nodes[b.name].Status != dataset.NodeUp {
					return false
				}
			}
		}
		return true
	})
}

// createService installs a service config through the API of b.
func (b *bnode) createService(name, config string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.c.Create(ctx, api.CreateRequest{Name: name, Config: config, File: name + ".toml"})
}

// crash kills the daemon of b with SIGKILL, then the service processes
// whose pids it recorded in {var}/*.pid (a host crash). It returns the time
// of the daemon's kill.
func (b *bnode) crash() (time.Time, error) {
	pid := b.pid()
	if pid == 0 {
		return time.Time{}, fmt.Errorf("%s: no daemon pid", b.name)
	}
	t := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return t, err
	}
	killUnder(b.root)
	// wait until the process is gone (reaped by init)
	waitFor(5*time.Second, "the killed daemon to vanish", func() bool { return syscall.Kill(pid, 0) != nil })
	return t, nil
}

// killUnder SIGKILLs every process whose working directory lies under dir
// (the service commands run in {var}): only processes this program caused.
func killUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue
		}
		if cwd == dir || strings.HasPrefix(cwd, dir+"/") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// stop stops the daemon cleanly, SIGKILLs it if it lingers, and kills the
// service processes left under its root.
func (b *bnode) stop() {
	pid := b.pid()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	exec.CommandContext(ctx, nodemgr, "--root", b.root, "daemon", "stop").Run()
	cancel()
	if pid > 0 {
		if waitFor(10*time.Second, "daemon exit", func() bool { return syscall.Kill(pid, 0) != nil }) != nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	killUnder(b.root)
}

// close stops every daemon (in parallel) and removes the roots.
func (c *cluster) close() {
	var wg sync.WaitGroup
	for _, b := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); b.stop() }()
	}
	wg.Wait()
	killUnder(c.dir)
	if os.Getenv("HAVENBENCH_KEEP") == "" {
		os.RemoveAll(c.dir)
	} else {
		fmt.Fprintln(os.Stderr, "kept", c.dir)
	}
	clustersMu.Lock()
	for i, x := range clusters {
		if x == c {
			clusters = append(clusters[:i], clusters[i+1:]...)
			break
		}
	}
	clustersMu.Unlock()
}

func closeAll() {
	clustersMu.Lock()
	cs := append([]*cluster(nil), clusters...)
	clustersMu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// nev is an event of one node's stream with the time this program read it.
type nev struct {
	api.Event
	from string
	recv time.Time
}

// subscribe streams b's events into out until ctx ends or the daemon dies.
func (b *bnode) subscribe(ctx context.Context, out chan<- nev) {
	go b.c.Stream(ctx, api.PathEvents, nil, func(line []byte) error {
		var e api.Event
		if json.Unmarshal(line, &e) == nil {
			select {
			case out <- nev{Event: e, from: b.name, recv: time.Now()}:
			case <-ctx.Done():
			}
		}
		return nil
	})
	// the daemon registers the subscriber as the request arrives
	time.Sleep(100 * time.Millisecond)
}

// stats over durations.
type stats struct{ xs []time.Duration }

func (s *stats) add(d time.Duration) { s.xs = append(s.xs, d) }

func (s *stats) pct(p float64) time.Duration {
	if len(s.xs) == 0 {
		return 0
	}
	xs := append([]time.Duration(nil), s.xs...)
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	// nearest rank
	k := int(p/100*float64(len(xs))+0.999999) - 1
	if k < 0 {
		k = 0
	}
	if k >= len(xs) {
		k = len(xs) - 1
	}
	return xs[k]
}

func (s *stats) min() time.Duration { return s.pct(0) }
func (s *stats) max() time.Duration { return s.pct(100) }

func (s *stats) mean() time.Duration {
	if len(s.xs) == 0 {
		return 0
	}
	var t time.Duration
	for _, x := range s.xs {
		t += x
	}
	return t / time.Duration(len(s.xs))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }
