package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"haven/api"
	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

// bnode is one real daemon with its own root.
type bnode struct {
	name string
	root string
	port int
	ns   string // its network namespace ("" on loopback)
	c    *api.Client
	// newState starts the daemon with --new-state: service configs were
	// written on its disk before its first start (scale.go)
	newState bool
}

type opts struct {
	timeout  time.Duration // hb.timeout
	interval time.Duration // hb.interval
	ready    time.Duration // ready_period
	monitor  time.Duration // monitor_interval (0: default)
	check    time.Duration // check_interval (0: default)
	fastAck  bool          // node.ready_fast_ack
	nodeKeys bool          // per-node keys: a key pair per node, cluster.toml [node_keys]
	quorum   bool          // cluster.quorum = true, split_action "stop" (never the host's crash)
}

type cluster struct {
	dir   string
	nodes []*bnode
	by    map[string]*bnode
	bed   *chaos.Bed // the network namespaces of the nodes, nil on loopback
}

// all clusters made by this run, for the clean-up on exit.
var (
	clustersMu sync.Mutex
	clusters   []*cluster
)

var nodemgr string // path of the nodemgr binary

// buildBinaries builds the node's programs (nodemgr and its guard) from
// the module this program runs in, or from $HAVEN_SRC.
func buildBinaries(dir string) error {
	if err := testbed.BuildNode(dir, os.Getenv("HAVEN_SRC")); err != nil {
		return err
	}
	nodemgr = filepath.Join(dir, "nodemgr")
	return nil
}

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

// newCluster writes the roots of n nodes (n1..nN) on loopback. A single
// node gets no cluster.toml.
func newCluster(n int, o opts) (*cluster, error) { return newClusterOn(n, o, nil, nil) }

// newClusterOn is newCluster with the nodes in the network namespaces of
// bed when it is not nil (heartbeats on their eth0 addresses, port
// chaos.HBPort), and more [node] keys in extra. The cluster owns the bed:
// close deletes it.
func newClusterOn(n int, o opts, bed *chaos.Bed, extra []string) (*cluster, error) {
	dir, err := os.MkdirTemp("", "havenbench-")
	if err != nil {
		if bed != nil {
			bed.Close()
		}
		return nil, err
	}
	c := &cluster{dir: dir, by: map[string]*bnode{}, bed: bed}
	clustersMu.Lock()
	clusters = append(clusters, c)
	clustersMu.Unlock()
	var members []testbed.Member
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		b := &bnode{name: name, root: filepath.Join(dir, name)}
		addr := "127.0.0.1"
		if bed != nil {
			b.port, b.ns, addr = chaos.HBPort, bed.NS[name], bed.Addr[name]
		} else if b.port, err = testbed.FreePort(); err != nil {
			return c, err
		}
		b.c = api.NewClient(filepath.Join(b.root, "run", "daemon.sock"))
		c.nodes = append(c.nodes, b)
		c.by[name] = b
		members = append(members, testbed.Member{Name: name, Addr: fmt.Sprintf("%s:%d", addr, b.port)})
	}
	cl := testbed.ClusterToml("bench", testbed.NewSecret(), members)
	if o.quorum {
		cl = strings.Replace(cl, "\n\n[nodes]", "\nquorum = true\n\n[nodes]", 1)
	}
	for _, b := range c.nodes {
		nt := testbed.NodeToml{Name: b.name, Keys: slices.Clone(extra)}
		if o.ready > 0 {
			nt.Keys = append(nt.Keys, fmt.Sprintf("ready_period = %q", o.ready.String()))
		}
		if o.fastAck {
			nt.Keys = append(nt.Keys, "ready_fast_ack = true")
		}
		if o.monitor > 0 {
			nt.Keys = append(nt.Keys, fmt.Sprintf("monitor_interval = %q", o.monitor.String()))
		}
		if o.check > 0 {
			nt.Keys = append(nt.Keys, fmt.Sprintf("check_interval = %q", o.check.String()))
		}
		if o.quorum && n > 1 {
			nt.Keys = append(nt.Keys, `split_action = "stop"`)
		}
		if n > 1 {
			nt.Keys = append(nt.Keys, `rejoin_grace_period = "30s"`)
			nt.HBAddr, nt.HBPort = "127.0.0.1", b.port
			if bed != nil {
				nt.HBAddr = bed.Addr[b.name]
			}
			if o.timeout > 0 {
				nt.HBTimeout = o.timeout.String()
			}
			if o.interval > 0 {
				nt.HBInterval = o.interval.String()
			}
		}
		if err := testbed.WriteNodeToml(b.root, nt.String()); err != nil {
			return c, err
		}
	}
	if o.nodeKeys && n > 1 {
		cl += "\n[node_keys]\n"
		for _, b := range c.nodes {
			r, err := testbed.Run(nodemgr, b.root, "key", "generate")
			if err == nil && r.Code != 0 {
				err = fmt.Errorf("%s", r)
			}
			if err != nil {
				return c, fmt.Errorf("%s: key generate: %w", b.name, err)
			}
			cl += r.Out
		}
	}
	for _, b := range c.nodes {
		if n > 1 {
			if err := testbed.WriteClusterToml(b.root, cl); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// start runs `nodemgr daemon start` (in the node's namespace if it has
// one), which returns once the API answers.
func (b *bnode) start() error {
	args := []string{"daemon", "start"}
	if b.newState {
		args = append(args, "--new-state")
	} else if b.ns == "" {
		return testbed.StartDaemon(nodemgr, b.root)
	}
	r, err := testbed.Command{Bin: nodemgr, Root: b.root, Args: args, NS: b.ns, Timeout: 30 * time.Second}.Run()
	if err == nil && r.Code != 0 {
		err = fmt.Errorf("%s", r)
	}
	if err != nil {
		return fmt.Errorf("%s: daemon start in %s: %w", b.name, b.ns, err)
	}
	return nil
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
	return testbed.WaitFor(d, 100*time.Millisecond, what, cond)
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
	_, err := b.c.Create(ctx, api.CreateRequest{Name: name, Config: config, File: name + ".toml"})
	return err
}

// crash kills the daemon of b with SIGKILL, then the service processes
// under its root (a host crash). It returns the time of the daemon's kill.
func (b *bnode) crash() (time.Time, error) { return testbed.Crash(b.root) }

// close stops every daemon (in parallel) and removes the roots.
func (c *cluster) close() {
	var wg sync.WaitGroup
	for _, b := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); testbed.StopDaemon(nodemgr, b.root) }()
	}
	wg.Wait()
	testbed.KillUnder(c.dir)
	if c.bed != nil {
		for _, err := range c.bed.Close() {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
		}
	}
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

// closeMu serializes closeAll: a signal and a fatal error may both call it.
var closeMu sync.Mutex

func closeAll() {
	closeMu.Lock()
	defer closeMu.Unlock()
	clustersMu.Lock()
	cs := append([]*cluster(nil), clusters...)
	clustersMu.Unlock()
	for _, c := range cs {
		c.close()
	}
	runCleanups()
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
