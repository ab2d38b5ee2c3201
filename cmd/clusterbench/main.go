// Command clusterbench measures real Haven daemons (nodemgr daemon run, one
// --root each, heartbeats on 127.0.0.1) for docs/benchmarks.md:
//
//	go run ./cmd/clusterbench propagation -nodes 3,16 -changes 50
//	go run ./cmd/clusterbench detection -nodes 2,3,16 -runs 5 -timeout 3s
//	go run ./cmd/clusterbench idle -nodes 1,3 -services 50 -window 60s
//	go run ./cmd/clusterbench failover -services 1 -runs 5
//	go run ./cmd/clusterbench failover -services 50 -runs 3
//	go run ./cmd/clusterbench failover -services 1 -runs 5 -ready 16s -fastack
//	go run ./cmd/clusterbench netns-scale -nodes 16,32 -services 500
//	go run ./cmd/clusterbench flex-scale -nodes 16 -services 500 -target 3 -runs 1
//	go run ./cmd/clusterbench sidebyside -crashes 5
//	go run ./cmd/clusterbench mem -nodes 1,3 -services 50
//
// It builds nodemgr from this module into a temporary directory, makes the
// roots under $TMPDIR/havenbench-*, and stops every daemon and service
// process it started when it ends (also on SIGINT/SIGTERM). Every wait is
// bounded. Run it from the module root (or set HAVEN_SRC to it).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"haven/dataset"
	"haven/test/chaos"
	"haven/test/testbed"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: clusterbench propagation|detection|idle|failover|netns-scale|flex-scale|sidebyside|mem [flags]  (-h for the flags)")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fig := os.Args[1]
	fs := flag.NewFlagSet(fig, flag.ExitOnError)
	nodes := fs.String("nodes", "", "cluster sizes, comma separated")
	changes := fs.Int("changes", 50, "propagation: status changes per size")
	poll := fs.Duration("poll", 10*time.Millisecond, "propagation: pause between two status polls of one peer")
	watch := fs.Int("watch", 0, "propagation: peers polled per change, in rotation (0: all); fewer pollers load the host less")
	runs := fs.Int("runs", 5, "detection, failover: kills per size")
	timeout := fs.Duration("timeout", 3*time.Second, "hb.timeout")
	interval := fs.Duration("interval", time.Second, "hb.interval")
	ready := fs.Duration("ready", 2*time.Second, "failover: ready_period")
	fastAck := fs.Bool("fastack", false, "failover: node.ready_fast_ack = true on every node (the start may come before ready_period ends)")
	services := fs.Int("services", 50, "idle, failover: number of services")
	window := fs.Duration("window", 60*time.Second, "idle: measurement window")
	settle := fs.Duration("settle", 15*time.Second, "idle: wait before the window")
	perfOut := fs.String("perf", "", "idle: also run `perf record -g` on n1's daemon over the window, into this file")
	check := fs.Duration("check", 0, "idle, failover: check_interval (0: the default, 60s)")
	spread := fs.Duration("spread", 0, "idle: create the services over this long (their checks then fall spread over the check interval instead of together)")
	pprofOut := fs.String("pprof", "", "idle: also take a CPU profile of n1's daemon over the window (HAVEN_PPROF_ADDR), into this file; flex-scale: of a survivor over each kill, into FILE-<kill>")
	straceFor := fs.Duration("strace", 0, "idle: also trace n1's daemon and guard (strace -f) for this long in the window, and count their wake-ups by source")
	heapOut := fs.String("heap", "", "netns-scale, flex-scale: also take a heap profile of n1's daemon after the idle window, into this file; mem: into PREFIX-<n>n-<services>s.pb.gz")
	memRate := fs.Int("memrate", 0, "mem: GODEBUG=memprofilerate for n1's daemon (1: every allocation in its heap profile; 0: the runtime's default, one per 512 kB)")
	systems := fs.String("systems", "keepalived,haven-1s,haven-100ms,haven-16s+fastack,pacemaker", "sidebyside: the systems, alternated crash after crash (keepalived[@<advert_int>], pacemaker, haven-fast, haven-<ready_period>[@<hb.timeout>][+fastack])")
	target := fs.Int("target", 3, "flex-scale: flex_target of the flex services")
	crashes := fs.Int("crashes", 5, "sidebyside: crashes of the VIP's owner per system")
	period := fs.Duration("period", 10*time.Millisecond, "sidebyside: the client's ping period")
	nodeKeys := fs.Bool("node-keys", false, "propagation, detection, idle, failover: per-node keys (a key pair per node, cluster.toml [node_keys], node_keys_mode require)")
	dist := fs.Bool("dist", false, "build the node's programs as `make dist` does (CGO_ENABLED=0, -trimpath, -buildmode=pie, -ldflags=-s; the DWARF that -w would drop is not loaded at run time): the binaries a package installs, where the default is a plain `go build` (linked to the C library)")
	quorumOn := fs.Bool("quorum", false, "idle, mem: cluster.quorum = true (split_action stop)")
	checkCost := fs.Duration("checkcost", 0, "failover: each check of the services' app sleeps this long first (a host where checks are slow: a backlog of periodic checks)")
	monitor := fs.Bool("monitor", true, "idle, failover: resources are monitored (checked every monitor_interval, 5s, instead of check_interval, 60s)")
	fs.Parse(os.Args[2:])

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "interrupted: cleaning up")
		closeAll()
		os.Exit(130)
	}()

	bin, err := os.MkdirTemp("", "havenbench-bin")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(bin)
	registerCleanup(func() { os.RemoveAll(bin) }) // also on a fatal error or a signal
	if *dist {
		// through the environment of the go command: testbed.Build runs it
		os.Setenv("CGO_ENABLED", "0")
		os.Setenv("GOFLAGS", strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath -buildmode=pie -ldflags=-s"))
	}
	if err := buildBinaries(bin); err != nil {
		os.RemoveAll(bin)
		fatal(fmt.Errorf("%w (run from the module root, or set HAVEN_SRC to it)", err))
	}
	host, _ := os.Hostname()
	fmt.Printf("# clusterbench %s on %s, %d CPUs, %s\n", fig, host, numCPU(), time.Now().Format(time.RFC3339))

	switch fig {
	case "propagation":
		for _, n := range ints(*nodes, "3,16") {
			err = propagation(n, *changes, *poll, *watch, opts{timeout: *timeout, interval: *interval, nodeKeys: *nodeKeys})
			if err != nil {
				break
			}
		}
	case "detection":
		for _, n := range ints(*nodes, "2,3,16") {
			err = detection(n, *runs, opts{timeout: *timeout, interval: *interval, nodeKeys: *nodeKeys})
			if err != nil {
				break
			}
		}
	case "idle":
		for _, n := range ints(*nodes, "1,3") {
			o := idleOpts(fs, *timeout, *interval, *check)
			o.nodeKeys, o.quorum = *nodeKeys, *quorumOn
			err = idle(n, *services, *monitor, *settle, *window, *spread, o, *perfOut, *pprofOut, *straceFor)
			if err != nil {
				break
			}
		}
	case "mem":
		for _, n := range ints(*nodes, "1,3") {
			o := idleOpts(fs, *timeout, *interval, *check)
			o.quorum = *quorumOn
			w := time.Duration(0)
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "window" {
					w = *window
				}
			})
			err = memBreakdown(n, *services, *monitor, *settle, w, o, *memRate, *heapOut)
			if err != nil {
				break
			}
		}
	case "failover":
		for _, n := range ints(*nodes, "3") {
			err = failover(n, *services, *runs, *monitor, *checkCost, opts{timeout: *timeout, interval: *interval, ready: *ready, fastAck: *fastAck, nodeKeys: *nodeKeys, check: *check})
			if err != nil {
				break
			}
		}
	case "netns-scale":
		if why := chaos.NetnsUnavailable(); why != "" {
			fatal(fmt.Errorf("netns-scale: %s", why))
		}
		for _, n := range ints(*nodes, "16,32") {
			err = netnsScale(n, *services, *changes, *runs, *poll, *watch, opts{timeout: *timeout, interval: *interval}, *settle, *window, *heapOut)
			if err != nil {
				break
			}
		}
	case "flex-scale":
		if why := chaos.NetnsUnavailable(); why != "" {
			fatal(fmt.Errorf("flex-scale: %s", why))
		}
		for _, n := range ints(*nodes, "16") {
			err = flexScale(n, *services, *target, *runs, opts{timeout: *timeout, interval: *interval, ready: *ready, fastAck: *fastAck}, *settle, *window, *pprofOut, *heapOut)
			if err != nil {
				break
			}
		}
	case "sidebyside":
		if why := chaos.NetnsUnavailable(); why != "" {
			fatal(fmt.Errorf("sidebyside: %s", why))
		}
		err = sideBySide(strings.Split(*systems, ","), *crashes, *window, *period)
	default:
		closeAll()
		usage()
	}
	closeAll()
	if err != nil {
		fatal(err)
	}
}

// idleOpts are the options of an idle cluster: the default hb timings
// unless given on the command line.
func idleOpts(fs *flag.FlagSet, timeout, interval, check time.Duration) opts {
	o := opts{check: check}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "timeout":
			o.timeout = timeout
		case "interval":
			o.interval = interval
		}
	})
	return o
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "clusterbench:", err)
	closeAll()
	os.Exit(1)
}

func ints(s, def string) []int {
	if s == "" {
		s = def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "\nprocessor") + 1
}

func names(c *cluster) string {
	var q []string
	for _, b := range c.nodes {
		q = append(q, b.name)
	}
	return testbed.NodeList(q)
}

// ---------------------------------------------------------------------------
// Figure 1: propagation of a status change.

// propagation flips the local freeze of one service on n1 (svcmgr -s p
// freeze --local / thaw --local, through the API) and polls the status
// object of every peer until it shows the new value of
// services.p.instances.n1.frozen. A sample is the time from just before the
// API call on n1 to the end of the first poll of a peer that shows it (an
// upper bound; the lower bound, the start of the previous poll, is printed
// too).
func propagation(n, changes int, poll time.Duration, watch int, o opts) error {
	if watch <= 0 || watch > n-1 {
		watch = n - 1
	}
	fmt.Printf("\n## propagation: %d daemons, hb.timeout %s, hb.interval %s, %d changes, %d peers polled per change, poll pause %s\n", n, o.timeout, o.interval, changes, watch, poll)
	c, err := formCluster(n, o)
	if err != nil {
		return err
	}
	defer c.close()
	svc := flagService(names(c), false)
	n1 := c.nodes[0]
	if err := n1.createService("p", svc); err != nil {
		return err
	}
	if err := waitFor(60*time.Second, "p known everywhere", func() bool {
		for _, b := range c.nodes {
			st, err := b.status()
			if err != nil {
				return false
			}
			if _, ok := st.Services["p"].Instances["n1"]; !ok {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	var upper, lower, ack, cycle, fromAck stats
	seen := func(b *bnode, want bool) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := b.c.Status(ctx)
		return err == nil && st.Services["p"].Instances["n1"].Frozen == want, err
	}
	misses, err := flipAndPoll(c, "p", changes, watch, poll, 10*time.Second, 200*time.Millisecond, seen, func(ch flipChange) {
		ack.add(ch.tAck.Sub(ch.t0))
		for _, s := range ch.seen {
			upper.add(s.at.Sub(ch.t0))
			fromAck.add(s.at.Sub(ch.tAck))
			lower.add(s.prev.Sub(ch.t0))
			cycle.add(s.at.Sub(ch.t0) / time.Duration(s.polls))
		}
	})
	if err != nil {
		return err
	}
	fmt.Printf("samples %d (changes x peers), missed (>10s) %d\n", len(upper.xs), misses)
	fmt.Printf("seen by (upper bound): p50 %s  p90 %s  p99 %s  max %s\n", ms(upper.pct(50)), ms(upper.pct(90)), ms(upper.pct(99)), ms(upper.max()))
	fmt.Printf("lower bound:           p50 %s  p90 %s  p99 %s  max %s\n", ms(lower.pct(50)), ms(lower.pct(90)), ms(lower.pct(99)), ms(lower.max()))
	fmt.Printf("from the API's answer:  p50 %s  p90 %s  p99 %s  max %s (excludes n1's own handling: state.json write with fsync)\n", ms(fromAck.pct(50)), ms(fromAck.pct(90)), ms(fromAck.pct(99)), ms(fromAck.max()))
	fmt.Printf("freeze --local API call on n1: p50 %s p99 %s; mean poll cycle %s\n", ms(ack.pct(50)), ms(ack.pct(99)), ms(cycle.mean()))
	fmt.Printf("RESULT propagation n=%d hb=%s/%s p50=%s p99=%s max=%s from_ack_p99=%s api_p99=%s\n", n, o.timeout, o.interval, ms(upper.pct(50)), ms(upper.pct(99)), ms(upper.max()), ms(fromAck.pct(99)), ms(ack.pct(99)))
	return nil
}

// ---------------------------------------------------------------------------
// Figure 2: detection of a crashed node.

// detection kills -9 the daemon of the last node and reads the peer_down
// events of every other node: the sample is the event's time (the daemon's
// clock, the same host clock) minus the time of the kill.
func detection(n, runs int, o opts) error {
	fmt.Printf("\n## detection: %d daemons, hb.timeout %s, hb.interval %s, %d kills\n", n, o.timeout, o.interval, runs)
	c, err := formCluster(n, o)
	if err != nil {
		return err
	}
	defer c.close()
	var all, firsts, lasts stats
	err = killRounds(c, runs, o.timeout+15*time.Second, func() error { return c.waitConverged(120*time.Second, c.nodes) },
		func(r int, victim string, peers int, got map[string]time.Duration) {
			var run stats
			for _, d := range got {
				run.add(d)
				all.add(d)
			}
			firsts.add(run.min())
			lasts.add(run.max())
			fmt.Printf("run %d: %d/%d peers declared %s down, first %s last %s after the kill\n", r+1, len(got), peers, victim, ms(run.min()), ms(run.max()))
		})
	if err != nil {
		return err
	}
	fmt.Printf("over %d samples (kills x peers): min %s p50 %s max %s (hb.timeout %s; worst excess %s)\n",
		len(all.xs), ms(all.min()), ms(all.pct(50)), ms(all.max()), o.timeout, ms(all.max()-o.timeout))
	fmt.Printf("RESULT detection n=%d timeout=%s min=%s p50=%s max=%s excess_max=%s\n", n, o.timeout, ms(all.min()), ms(all.pct(50)), ms(all.max()), ms(all.max()-o.timeout))
	return nil
}

// killRounds kills -9 the daemon of the last node of c kills times (after
// a random pause of 1 to 2 s each), reads when each other node declared it
// down (its peer_down event, within), gives them to each, then starts it
// again and waits for back.
func killRounds(c *cluster, kills int, within time.Duration, back func() error,
	each func(r int, victim string, peers int, got map[string]time.Duration)) error {
	victim := c.nodes[len(c.nodes)-1]
	others := c.nodes[:len(c.nodes)-1]
	ch := make(chan nev, 100000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, b := range others {
		b.subscribe(ctx, ch)
	}
	for r := range kills {
		time.Sleep(time.Second + rand.N(time.Second))
		drain(ch)
		tk, err := victim.crash()
		if err != nil {
			return err
		}
		each(r, victim.name, len(others), downsSeen(ch, victim.name, len(others), tk, within))
		if err := victim.start(); err != nil {
			return err
		}
		if err := back(); err != nil {
			return err
		}
	}
	return nil
}

// downsSeen collects, from the peers' events on ch, when each peer declared
// victim down (relative to the kill at tk), until every one of n peers did
// or within passes.
func downsSeen(ch chan nev, victim string, n int, tk time.Time, within time.Duration) map[string]time.Duration {
	got := map[string]time.Duration{}
	deadline := time.After(within)
	for len(got) < n {
		select {
		case e := <-ch:
			if e.Kind == "peer_down" && e.Fields["node"] == victim {
				if _, seen := got[e.from]; !seen {
					got[e.from] = e.Time.Sub(tk)
				}
			}
		case <-deadline:
			return got
		}
	}
	return got
}

func drain(ch chan nev) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// ---------------------------------------------------------------------------
// Figure 3: an idle daemon with many services.

type procSample struct {
	self, children uint64 // clock ticks: utime+stime, cutime+cstime
	// run is the CPU time of the process's live threads in nanoseconds
	// (the first field of each /proc/PID/task/TID/schedstat), exact where
	// utime+stime comes in clock ticks: an idle keepalived spends 1 or 2
	// of them in 5 minutes, so a tick is half its figure. Threads that
	// ended are missing from it (a Go daemon keeps its threads; keepalived
	// does not start any).
	run      uint64
	rss, hwm int // kB
	// switches are the voluntary context switches of every thread: the
	// process's wake-ups, each a thread that slept put back to work (the
	// involuntary ones are other work preempting it)
	switches uint64
}

func readProc(pid int) (procSample, error) {
	var s procSample
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// fields after the command name, which is in parentheses
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	// f[0] is field 3 (state); utime is field 14 => f[11]
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	cu, _ := strconv.ParseUint(f[13], 10, 64)
	cs, _ := strconv.ParseUint(f[14], 10, 64)
	s.self, s.children = u+st, cu+cs
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			s.rss, _ = strconv.Atoi(strings.Fields(v)[0])
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			s.hwm, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	s.switches = threadSwitches(pid)
	s.run = threadRuntime(pid)
	return s, nil
}

// threadRuntime sums the CPU time (ns) of pid's live threads.
func threadRuntime(pid int) uint64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var n uint64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			x, _ := strconv.ParseUint(f[0], 10, 64)
			n += x
		}
	}
	return n
}

// cpuPct is the CPU of the process between a and b over el seconds, in
// % of a core: its threads' exact time plus its reaped children's ticks.
func cpuPct(a, b procSample, el float64) (self, children float64) {
	return float64(b.run-a.run) / 1e9 / el * 100, float64(b.children-a.children) / clkTck / el * 100
}

// threadSwitches sums the voluntary context switches of pid's threads.
func threadSwitches(pid int) uint64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n uint64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && k == "voluntary_ctxt_switches" {
				x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n
}

const clkTck = 100 // USER_HZ on Linux x86_64

// flagService is a failover service on nodes of one app resource whose
// state is a file in the service's private directory: started, stopped
// and checked for real (a check that always says up, as "true" does, has
// the service up on every node at once: a split, not an idle cluster).
func flagService(nodes string, monitored bool) string {
	return fmt.Sprintf("[DEFAULT]\nnodes = %s\norchestrate = \"ha\"\n\n[app.a]\nstart = \"touch up\"\nstop = \"rm -f up\"\ncheck = \"test -f up\"\nmonitor = %v\n", nodes, monitored)
}

// idleCluster starts n daemons (n1 with n1env added to its environment:
// the profiler's address, GODEBUG), waits until they converged, creates
// nsvc failover services (flagService) over spread and waits until each is
// up on one node. On error nothing is left running.
func idleCluster(n, nsvc int, monitored bool, spread time.Duration, o opts, n1env []string) (*cluster, error) {
	c, err := newCluster(n, o)
	if err == nil {
		for i, b := range c.nodes {
			if i == 0 {
				err = withEnv(n1env, b.start)
			} else {
				err = b.start()
			}
			if err != nil {
				break
			}
		}
	}
	if err == nil {
		err = c.waitConverged(120*time.Second, c.nodes)
	}
	if err == nil {
		svc := flagService(names(c), monitored)
		c0 := time.Now()
		for i := range nsvc {
			if err = c.nodes[0].createService(fmt.Sprintf("s%02d", i), svc); err != nil {
				break
			}
			if spread > 0 {
				time.Sleep(time.Until(c0.Add(spread * time.Duration(i+1) / time.Duration(nsvc))))
			}
		}
	}
	if err == nil {
		_, err = placedOnce(c, nsvc, 120*time.Second)
	}
	if err != nil {
		if c != nil {
			c.close()
		}
		return nil, err
	}
	return c, nil
}

// withEnv runs f with the variables of env ("K=V") set in this process's
// environment (a daemon started by f inherits them), then restores them.
func withEnv(env []string, f func() error) error {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		if had {
			defer os.Setenv(k, old)
		} else {
			defer os.Unsetenv(k)
		}
	}
	return f()
}

// idle starts n daemons with nsvc failover services (flagService), waits
// until each is up on one node and the cluster settled, then samples
// /proc/PID of every daemon over the window.
func idle(n, nsvc int, monitored bool, settle, window, spread time.Duration, o opts, perfOut, pprofOut string, straceFor time.Duration) error {
	hb := "default hb.timeout 15s, hb.interval 5s"
	if o.timeout > 0 || o.interval > 0 {
		hb = fmt.Sprintf("hb.timeout %s, hb.interval %s (0: default)", o.timeout, o.interval)
	}
	checkIv := "60s (default)"
	if o.check > 0 {
		checkIv = o.check.String()
	}
	fmt.Printf("\n## idle: %d daemon(s), %d services, monitor=%v, default monitor_interval 5s, check_interval %s, %s, settle %s, window %s\n",
		n, nsvc, monitored, checkIv, hb, settle, window)
	pprofAddr := ""
	var n1env []string
	if pprofOut != "" {
		port, err := testbed.FreePort()
		if err != nil {
			return err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		n1env = append(n1env, "HAVEN_PPROF_ADDR="+pprofAddr)
	}
	c, err := idleCluster(n, nsvc, monitored, spread, o, n1env)
	if err != nil {
		return err
	}
	defer c.close()
	time.Sleep(settle)
	pids := map[string]int{}
	before := map[string]procSample{}
	maxRSS := map[string]int{}
	gpids := map[string]int{}
	gbefore := map[string]procSample{}
	for _, b := range c.nodes {
		pids[b.name] = testbed.DaemonPID(b.root)
		s, err := readProc(pids[b.name])
		if err != nil {
			return err
		}
		before[b.name] = s
		maxRSS[b.name] = s.rss
		// its guard (node.guard, on by default): counted beside it
		if gp := testbed.ReadPID(filepath.Join(b.root, "run", "guard.lock")); gp > 0 {
			if gs, err := readProc(gp); err == nil {
				gpids[b.name], gbefore[b.name] = gp, gs
			}
		}
	}
	var traced chan []wakeCount
	if straceFor > 0 {
		traced = make(chan []wakeCount, 1)
		go func() {
			procs := []struct {
				what string
				pid  int
			}{{"daemon", pids["n1"]}, {"guard", gpids["n1"]}}
			res := make([]wakeCount, len(procs))
			done := make(chan int, len(procs))
			for i, p := range procs {
				go func() {
					if p.pid > 0 {
						w, err := straceWakeups(p.what, p.pid, min(straceFor, window))
						if err != nil {
							fmt.Printf("wake-ups of n1's %s not counted: %v\n", p.what, err)
						}
						res[i] = w
					}
					done <- i
				}()
			}
			for range procs {
				<-done
			}
			traced <- res
		}()
	}
	var perf *exec.Cmd
	if perfOut != "" {
		perf = exec.Command("perf", "record", "-g", "-o", perfOut, "-p", strconv.Itoa(pids["n1"]), "--", "sleep", strconv.Itoa(int(window.Seconds())))
		perf.Stdout, perf.Stderr = os.Stderr, os.Stderr
		if err := perf.Start(); err != nil {
			return err
		}
		defer perf.Wait()
	}
	var prof chan error
	if pprofAddr != "" {
		prof = make(chan error, 1)
		go func() { prof <- fetchProfile(pprofAddr, window, pprofOut) }()
	}
	ctr, cerr := newByteCounter(c)
	if cerr != nil {
		fmt.Printf("bytes on the wire not measured: %v\n", cerr)
	}
	defer ctr.close()
	b0, _ := ctr.read()
	t0 := time.Now()
	for time.Since(t0) < window {
		time.Sleep(min(5*time.Second, window-time.Since(t0)))
		for _, b := range c.nodes {
			if s, err := readProc(pids[b.name]); err == nil && s.rss > maxRSS[b.name] {
				maxRSS[b.name] = s.rss
			}
		}
	}
	el := time.Since(t0).Seconds()
	b1, berr := ctr.read()
	bps := -1.0
	if cerr == nil && berr == nil {
		bps = float64(b1-b0) / el / float64(n)
		fmt.Printf("heartbeat traffic (IP bytes on lo to/from the hb ports, UDP and TCP, all nodes / %d): %.0f B/s per node\n", n, bps)
	}
	if prof != nil {
		if err := <-prof; err != nil {
			fmt.Printf("profile: %v\n", err)
		} else {
			fmt.Printf("CPU profile of n1 in %s (go tool pprof -top %s)\n", pprofOut, pprofOut)
		}
	}
	if traced != nil {
		var ok []wakeCount
		for _, w := range <-traced {
			if w.traceOK {
				ok = append(ok, w)
			}
		}
		printWakeups("n1", ok)
	}
	for _, b := range c.nodes {
		s, err := readProc(pids[b.name])
		if err != nil {
			return err
		}
		self, kids := cpuPct(before[b.name], s, el)
		wakes := float64(s.switches-before[b.name].switches) / el
		gself, gwakes := 0.0, 0.0
		if gp := gpids[b.name]; gp > 0 {
			if gs, err := readProc(gp); err == nil {
				gself, _ = cpuPct(gbefore[b.name], gs, el)
				gwakes = float64(gs.switches-gbefore[b.name].switches) / el
			}
		}
		fmt.Printf("%s: guard (pid %d) CPU %.3f%% of a core, %.1f wake-ups/s; daemon and guard %.3f%%, %.1f wake-ups/s\n",
			b.name, gpids[b.name], gself, gwakes, self+gself, wakes+gwakes)
		fmt.Printf("RESULT idleguard n=%d node=%s services=%d guard_cpu_pct=%.3f guard_wakeups_per_s=%.1f node_cpu_pct=%.3f node_wakeups_per_s=%.1f\n",
			n, b.name, nsvc, gself, gwakes, self+gself, wakes+gwakes)
		fmt.Printf("%s: VmRSS %.1f MB (max in window %.1f MB, VmHWM %.1f MB); CPU daemon %.3f%% of a core (its threads' run time), its children (check commands, in clock ticks) %.3f%%; %.1f wake-ups/s (voluntary context switches of its threads)\n",
			b.name, float64(s.rss)/1024, float64(maxRSS[b.name])/1024, float64(s.hwm)/1024, self, kids, wakes)
		fmt.Printf("RESULT idle n=%d node=%s services=%d monitor=%v hb=%s/%s rss_mb=%.1f hwm_mb=%.1f cpu_self_pct=%.3f cpu_children_pct=%.3f hb_bytes_per_s_per_node=%.0f wakeups_per_s=%.1f\n",
			n, b.name, nsvc, monitored, o.timeout, o.interval, float64(maxRSS[b.name])/1024, float64(s.hwm)/1024, self, kids, bps, wakes)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Figures 4 and 5: failover after a crash.

// where maps each service to the nodes it is up on, as seen from b.
func where(b *bnode) (map[string][]string, error) {
	st, err := b.status()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for name, s := range st.Services {
		out[name] = nil
		for node, i := range s.Instances {
			if i.Avail == dataset.StatusUp {
				out[name] = append(out[name], node)
			}
		}
	}
	return out, nil
}

// placedOnce waits until every service is up on exactly one node, on one
// owner, as seen from every live node, and returns that owner.
func placedOnce(c *cluster, nsvc int, d time.Duration) (string, error) {
	var owner string
	err := waitFor(d, "every service up on exactly one node", func() bool {
		owner = ""
		for _, b := range c.nodes {
			w, err := where(b)
			if err != nil || len(w) != nsvc {
				return false
			}
			for _, nodes := range w {
				if len(nodes) != 1 || (owner != "" && nodes[0] != owner) {
					return false
				}
				owner = nodes[0]
			}
		}
		return true
	})
	return owner, err
}

// failover kills -9 the owner's daemon and its service processes, and reads
// the events of the other daemons: peer_down, then for each service
// action_begin (start) and instance_status "-> up" (the check after the
// start). The overhead of a run is up - kill - (hb.timeout + ready_period),
// or up - kill - hb.timeout with fast ack (the start needs no window then).
func failover(n, nsvc, runs int, monitored bool, checkCost time.Duration, o opts) error {
	fa := ""
	if o.fastAck {
		fa = ", ready_fast_ack on"
	}
	if o.check > 0 || checkCost > 0 {
		fa += fmt.Sprintf(", check_interval %s, each check sleeping %s first", o.check, checkCost)
	}
	fmt.Printf("\n## failover: %d daemons, %d ha service(s), monitor=%v, hb.timeout %s, hb.interval %s, ready_period %s%s, %d kills\n", n, nsvc, monitored, o.timeout, o.interval, o.ready, fa, runs)
	c, err := formCluster(n, o)
	if err != nil {
		return err
	}
	defer c.close()
	for i := range nsvc {
		svc := testbed.HAService(names(c), "")
		if !monitored {
			svc = strings.Replace(svc, "monitor = true", "monitor = false", 1)
		}
		if checkCost > 0 {
			svc = strings.Replace(svc, `check = "sh -c '`, fmt.Sprintf(`check = "sh -c 'sleep %g; `, checkCost.Seconds()), 1)
		}
		if err := c.nodes[0].createService(fmt.Sprintf("s%02d", i), svc); err != nil {
			return err
		}
	}
	if _, err := placedOnce(c, nsvc, 120*time.Second); err != nil {
		return err
	}
	ch, subs, sub := subscribeAll(c, 100000)
	defer subs.cancel()
	budget := o.timeout + o.ready
	if o.fastAck {
		budget = o.timeout
	}
	var over, detect, window, start, spreadUp, spreadBegin, lastUp stats
	// each service's start: action_begin -> action_end (its commands),
	// action_end -> up (the check that ends it: its wait and its run)
	var cmds, confirm stats
	doubles := 0
	for r := range runs {
		owner, err := placedOnce(c, nsvc, 60*time.Second)
		if err != nil {
			return err
		}
		time.Sleep(time.Second + rand.N(time.Second))
		drain(ch)
		victim := c.by[owner]
		subs[owner]()
		tk, err := victim.crash()
		if err != nil {
			return err
		}
		down := map[string]time.Time{}
		begin := map[string]time.Time{}
		up := map[string]time.Time{}
		upOn := map[string]string{}
		end := map[string]time.Time{}
		deadline := time.After(budget + 60*time.Second)
	collect:
		for len(up) < nsvc {
			select {
			case e := <-ch:
				if e.from == owner {
					continue
				}
				switch {
				case e.Kind == "peer_down" && e.Fields["node"] == owner:
					down[e.from] = e.Time
				case e.Kind == "action_begin" && strings.HasPrefix(e.Message, "start"):
					if _, ok := begin[e.Service]; !ok {
						begin[e.Service] = e.Time
					}
				case e.Kind == "action_end" && e.Fields["action"] == "start":
					if _, ok := end[e.Service]; !ok {
						end[e.Service] = e.Time
					}
				case e.Kind == "instance_status" && strings.HasSuffix(e.Message, "-> up"):
					if _, ok := up[e.Service]; !ok {
						up[e.Service], upOn[e.Service] = e.Time, e.from
					}
				}
			case <-deadline:
				break collect
			}
		}
		if len(up) < nsvc {
			for _, b := range c.nodes {
				if log, err := os.ReadFile(filepath.Join(b.root, "log", "node.log")); err == nil {
					lines := strings.Split(strings.TrimSpace(string(log)), "\n")
					fmt.Fprintf(os.Stderr, "--- %s node.log (last 40 lines)\n%s\n", b.name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
				}
			}
			return fmt.Errorf("run %d: only %d/%d services came up within %s after the kill", r+1, len(up), nsvc, budget+60*time.Second)
		}
		var first, last, firstB, lastB time.Time
		newOwner := ""
		for s, t := range up {
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(last) {
				last = t
			}
			b, ok := begin[s]
			if !ok {
				continue // its action_begin was not seen (up without a start here)
			}
			if x, ok := end[s]; ok {
				cmds.add(x.Sub(b))
				confirm.add(t.Sub(x))
			}
			if firstB.IsZero() || b.Before(firstB) {
				firstB = b
			}
			if b.After(lastB) {
				lastB = b
			}
			newOwner = upOn[s]
		}
		dn := down[newOwner]
		over.add(last.Sub(tk) - budget)
		lastUp.add(last.Sub(tk))
		detect.add(dn.Sub(tk))
		window.add(firstB.Sub(dn))
		start.add(first.Sub(firstB))
		spreadUp.add(last.Sub(first))
		spreadBegin.add(lastB.Sub(firstB))
		fmt.Printf("run %d: %s killed; %s declared it down after %s; first start began %s later; first up %s after the kill, last up %s after (overhead %s beyond %s); spread of starts %s, of ups %s\n",
			r+1, owner, newOwner, ms(dn.Sub(tk)), ms(firstB.Sub(dn)), ms(first.Sub(tk)), ms(last.Sub(tk)), ms(last.Sub(tk)-budget), budget, ms(lastB.Sub(firstB)), ms(last.Sub(first)))
		// bring the dead node back, then check that nothing runs twice
		if err := victim.start(); err != nil {
			return err
		}
		sub(victim)
		if err := c.waitConverged(120*time.Second, c.nodes); err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
		w, err := where(c.nodes[0])
		if err != nil {
			return err
		}
		for s, nodes := range w {
			if len(nodes) > 1 {
				doubles++
				fmt.Printf("  WARNING: %s up on %v after %s came back\n", s, nodes, owner)
			}
		}
	}
	fmt.Printf("detection (kill -> peer_down on the new owner): p50 %s max %s\n", ms(detect.pct(50)), ms(detect.max()))
	fmt.Printf("peer_down -> first action_begin start: p50 %s max %s (ready_period %s)\n", ms(window.pct(50)), ms(window.max()), o.ready)
	fmt.Printf("action_begin -> up (start command + check): p50 %s max %s\n", ms(start.pct(50)), ms(start.max()))
	fmt.Printf("  of which action_begin -> action_end (the start's commands): p50 %s max %s; action_end -> up (the check that ends it): p50 %s max %s\n", ms(cmds.pct(50)), ms(cmds.max()), ms(confirm.pct(50)), ms(confirm.max()))
	fmt.Printf("kill -> last service up: min %s p50 %s max %s\n", ms(lastUp.min()), ms(lastUp.pct(50)), ms(lastUp.max()))
	fmt.Printf("overhead beyond the budget (hb.timeout%s: %s): min %s p50 %s max %s\n", map[bool]string{false: " + ready_period", true: ", fast ack"}[o.fastAck], budget, ms(over.min()), ms(over.pct(50)), ms(over.max()))
	if nsvc > 1 {
		fmt.Printf("spread first -> last start begun: p50 %s max %s; first -> last up: p50 %s max %s\n", ms(spreadBegin.pct(50)), ms(spreadBegin.max()), ms(spreadUp.pct(50)), ms(spreadUp.max()))
	}
	fmt.Printf("RESULT failover n=%d services=%d fastack=%v up_p50=%s up_max=%s overhead_p50=%s overhead_max=%s spread_up_p50=%s spread_up_max=%s doubles=%d\n",
		n, nsvc, o.fastAck, ms(lastUp.pct(50)), ms(lastUp.max()), ms(over.pct(50)), ms(over.max()), ms(spreadUp.pct(50)), ms(spreadUp.max()), doubles)
	return nil
}

// subscriptions are the event streams of a cluster's nodes, by node: a
// node's cancel ends its stream (before its crash), sub opens it again.
type subscriptions map[string]context.CancelFunc

func (s subscriptions) cancel() {
	for _, cancel := range s {
		cancel()
	}
}

// subscribeAll opens every node's event stream into one channel of size
// events; sub opens a node's again (after its restart).
func subscribeAll(c *cluster, size int) (chan nev, subscriptions, func(*bnode)) {
	ch := make(chan nev, size)
	subs := subscriptions{}
	sub := func(b *bnode) {
		ctx, cancel := context.WithCancel(context.Background())
		subs[b.name] = cancel
		b.subscribe(ctx, ch)
	}
	for _, b := range c.nodes {
		sub(b)
	}
	return ch, subs, sub
}
