package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"haven/api"
	"haven/config"
	"haven/config/tomlfile"
	"haven/dataset"
	"haven/driver"
	"haven/guard"
	"haven/heartbeat"
	"haven/internal/cgroup"
	"haven/internal/clock"
	"haven/internal/fsutil"
	"haven/internal/paths"
	"haven/internal/version"
	"haven/node"
	"haven/node/upgrade"
	"haven/resource"
)

// CompatVersion is the compat version of this build (docs/contract.md section 7).
const CompatVersion = version.Compat

// Options configure a daemon.
type Options struct {
	Paths paths.Paths
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Compat overrides CompatVersion when non-zero (HAVEN_COMPAT).
	Compat int
	// Format overrides upgrade.Current, the newest format version this
	// node reads, when non-zero (HAVEN_FORMAT: to rehearse an upgrade).
	Format int
	// WatchdogFile accepts a regular file as node.watchdog_device: it
	// records the pets and resets nothing (HAVEN_WATCHDOG_FILE: tests
	// only, on hosts without a watchdog driver).
	WatchdogFile bool
	// Stderr also sends the log to stderr (nodemgr daemon run).
	Stderr bool
	// CrashOutput sends the panics and fatal errors of the whole process
	// to the node log too (nodemgr daemon run: one daemon per process).
	CrashOutput bool
	// Heartbeat builds the heartbeat; nil means memberlist. The in-process
	// simulation passes its in-memory network here.
	Heartbeat func(heartbeat.Config) (heartbeat.Heartbeat, error)
	// NewCluster accepts a cluster.toml that names another cluster than
	// the one this node was a member of (or none), and records it.
	NewCluster bool
	// WebView builds the read-only web view of node.web_addr (package
	// cli/web, a client of this daemon's local API like svcmon: nodemgr
	// passes it, so that the daemon does not import a view of the
	// command-line floor). nil: a node.toml that sets web_addr is refused.
	WebView func(WebOptions) WebView
	// NewState starts with a new, empty state where the state file is
	// missing while service configs exist, or is a dangling symbolic link,
	// and accepts a state file without envelope (statefresh.go).
	NewState bool
}

// ErrLocked is returned when another daemon owns the root.
var ErrLocked = errors.New("another daemon is running on this root")

// Daemon is one node's daemon. Only the loop goroutine touches its fields
// below the "loop-owned" line.
type Daemon struct {
	opts    Options
	p       paths.Paths
	clk     clock.Clock
	log     *zap.Logger
	logFile *nodeLog
	bus     *bus
	svclogs *svcLogs
	lock    *os.File
	started time.Time

	ev      chan func()
	quit    chan struct{} // closed when the loop has ended
	stopReq chan string
	workers sync.WaitGroup // the jobs given to pool
	pool    workerPool
	checks  checkQueue // the checks, run on pool (checkQ)
	// actx is cancelled to abort running actions when the daemon must exit.
	actx    context.Context
	acancel context.CancelFunc

	persist *persister

	// containersMarked: this node ran a container resource of the engine (containers.go)
	containersMarked map[string]bool

	// metrics are the Prometheus metrics (metrics.go), served on
	// node.metrics_addr by metricsSrv; hooks run the event hooks (hooks.go).
	metrics    *metrics
	metricsSrv *http.Server
	hooks      *hookRunner

	// loop-owned
	ps      persistLoop
	node    *config.NodeConfig
	cluster *config.ClusterConfig
	keys    nodeKeys // per-node keys (nodekeys.go)
	// drv drives the node core (package driver: the loop rules, the
	// answers by ticket, the order of a Ready); core is its core (the
	// durable state, targets, clears and --wait callers), dur its
	// durable state.
	drv      *driver.Driver
	core     *node.Core
	dur      *durable
	services map[string]*instance
	load15   float64
	memPct   float64
	// capacity is what the node offers to the services' requests
	// (node.toml's, else the host's), published in its data.
	capacity dataset.Capacity
	// sysinfoAt is when load15 and memPct were last read (by sysinfo,
	// whose files stay open while the daemon runs).
	sysinfoAt time.Time
	sysinfo   *sysinfoReader
	sd        sdNotifier // systemd notify protocol (notify.go)

	hb       heartbeat.Heartbeat
	hbEvents <-chan heartbeat.Event
	asks     peerAsks // asks to peers waiting for an answer (peerlogs.go)
	// oneVote are the wires to the one-vote arbitrators, by name (quorum.go; the loop's)
	oneVote map[string]*oneVoteClient
	// sbd is the disk heartbeat and the watchdog (sbd.go; nil: neither)
	sbd *sbd
	// cg is the node's cgroup tree (cgroups.go; nil: process groups only)
	cg *cgroup.Tree
	// gl is the daemon's end of the node guard (guard.go)
	gl guardLink
	// cfgs holds the configs that do not parse and the edits in flight.
	cfgs configState
	// ordered are the resource drivers of the actions the core ordered
	// and holds until their state is on disk, by service, in order.
	ordered map[string][]*resource.Set
	// prepared are the drivers doing their pre-start work during a ready
	// window of the instance (prepare.go).
	prepared map[string]*resource.Set
	// early are the drivers whose pre-start work began at the silence
	// of a peer, by peer (prepare.go).
	early map[string][]*resource.Set

	// stepTimer is the driver's wake-up (driver.Effects.ArmWake), step
	// its channel while armed
	stepTimer clock.Timer
	step      <-chan time.Time
}

// New prepares a daemon: it takes the root's lock, opens the log and loads
// the configs. Config errors are returned as *config.Error.
func New(opts Options) (*Daemon, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Compat == 0 {
		opts.Compat = CompatVersion
	}
	if opts.Format == 0 {
		opts.Format = upgrade.Current
	}
	// no inherited descriptor reaches the apps and hooks
	if err := closeInheritedOnExec(); err != nil {
		return nil, err
	}
	p := opts.Paths
	// private: the README's 0700 (existing directories keep their mode)
	for _, dir := range []string{p.Etc, p.ServiceDir, p.Var, p.Run, p.Log, filepath.Join(p.Log, "services")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(p.Run, 0o700); err != nil {
		return nil, err
	}
	lock, err := acquireLock(p.Lock())
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		opts:     opts,
		p:        p,
		clk:      opts.Clock,
		bus:      newBus(),
		lock:     lock,
		ev:       make(chan func(), 1024),
		quit:     make(chan struct{}),
		stopReq:  make(chan string, 1),
		services: map[string]*instance{},
	}
	d.actx, d.acancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			lock.Close()
		}
	}()
	if d.logFile, err = openNodeLog(p.NodeLog(), opts.CrashOutput); err != nil {
		return nil, err
	}
	d.log = newLogger(d.logFile, opts.Stderr, opts.Clock)
	d.svclogs = newSvcLogs(p, opts.Clock)
	// a failed write of a service log comes back to the loop, which logs it
	d.svclogs.w.onError(func(svc string, err error) {
		d.post(func() { d.svcLogFailed(svc, err) })
	})
	if d.node, err = tomlfile.LoadNode(p.NodeConf); err != nil {
		return nil, err
	}
	if d.cluster, err = tomlfile.LoadCluster(p.Cluster, d.node.Name); err != nil {
		return nil, err
	}
	if err := config.CheckMember(d.node, d.cluster); err != nil {
		return nil, err
	}
	if d.keys, err = loadNodeKeys(p.NodeKey, d.cluster, d.node.Name); err != nil {
		return nil, err
	}
	if err := d.checkLocalAddr(); err != nil {
		return nil, err
	}
	if d.node.Guard {
		// a daemon that could not start its guard would run unguarded
		if d.gl.program, err = guard.Program(""); err != nil {
			return nil, err
		}
	}
	d.metrics = newMetrics(d.node.Name, d.cluster.Name, opts.Compat)
	d.metrics.clk = d.clk
	d.metrics.diskPath = d.node.HB.Disk.Path
	d.hooks = newHookRunner(d.node.Hooks, hookQueueLen, d.log.Named("hook"), d.metrics)
	d.hooks.clk = d.clk
	dur, accepted, err := openState(p.State(), p.ServiceDir, opts.NewState)
	if err != nil {
		return nil, err
	}
	if err := checkStateLevel(p.State(), dur.FeatureLevel, opts.Format); err != nil {
		return nil, err
	}
	coreCfg := driver.CoreConfig(d.node, d.cluster, opts.Compat, d, memberCodec{tomlfile.ServiceCodec{File: p.ServiceConf}, d})
	coreCfg.Format, coreCfg.Release = opts.Format, version.Version // the rolling upgrade's versions (node/featurelevel.go)
	d.core = node.New(coreCfg, dur)
	d.drv = driver.New(d.core, effects{d}, d.clk)
	// the CPU time of a decision pass, whatever d.clk is
	d.drv.Stopwatch, d.drv.ObserveDecision = clock.Wall, d.metrics.observeDecision
	d.dur = d.core.State()
	if err := d.checkIdentity(opts.NewCluster); err != nil {
		return nil, err
	}
	if err := d.nextIncarnation(); err != nil {
		return nil, err
	}
	if accepted == brandNew {
		if err := d.writeStateNow("write the first state"); err != nil {
			return nil, err
		}
	} else if accepted != "" {
		d.log.Warn(accepted, zap.String("node", d.node.Name), zap.String("path", p.State()), zap.String("reason", "nodemgr daemon start/run --new-state"))
		if err := d.writeStateNow("write the state accepted by --new-state"); err != nil {
			return nil, err
		}
	}
	if d.cluster.InsecureNoSecret {
		d.log.Warn("INSECURE: cluster.insecure_no_secret is set: heartbeat traffic is neither encrypted nor authenticated, anyone who can reach a heartbeat port can run commands on this node (tests only)",
			zap.String("node", d.node.Name), zap.String("file", d.cluster.File))
	}
	// what the file holds, for a roll back after a failed write
	good, err := encodeDurable(*d.dur)
	if err != nil {
		return nil, err
	}
	d.drv.Input(node.Durable{})
	d.persist = newPersister(p.State(), good, d.onPersisted)
	ok = true
	return d, nil
}

func acquireLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		pid, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "daemon.pid"))
		return nil, fmt.Errorf("%w (root %s, pid %s)", ErrLocked, filepath.Dir(filepath.Dir(path)), strings.TrimSpace(string(pid)))
	}
	return f, nil
}

// Run serves until ctx ends or a stop is requested through the API.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.lock.Close()
	defer d.log.Sync()
	d.started = d.clk.Now()
	d.sdInit()
	if err := d.serveMetrics(); err != nil {
		return err
	}
	defer d.stopMetrics()
	stopWeb, err := d.serveWeb() // node.web_addr (webview.go)
	if err != nil {
		return err
	}
	defer stopWeb()
	// replaced, never written through a link
	if err := fsutil.WriteAtomic(d.p.PidFile(), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o600); err != nil {
		return err
	}
	hctx, hcancel := context.WithCancel(context.Background())
	go d.hooks.run(hctx)
	defer d.hooks.stop(hcancel, hookStopGrace)
	os.Remove(d.p.Socket)
	ln, err := net.Listen("unix", d.p.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", d.p.Socket, err)
	}
	if err := os.Chmod(d.p.Socket, 0o600); err != nil {
		ln.Close()
		return err
	}
	srv, lln := newAPIServer(ln, d.routes(), d.log)
	var srvWG sync.WaitGroup
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		if err := srv.Serve(lln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("api server", zap.Error(err))
		}
	}()

	d.logEvent(node.DaemonStarted{Compat: d.opts.Compat, Pid: os.Getpid(), Root: d.p.Root, Cluster: d.cluster.Name})
	d.setupCgroups()
	d.loadServices()
	d.startGuard() // renewed at once: a daemon back within the lease keeps its services
	d.sysinfo = newSysinfoReader()
	defer d.sysinfo.close()
	d.capacity = d.sysinfo.capacity(d.node)
	d.refreshSysinfo()
	if err := d.startHeartbeat(); err != nil {
		srv.Close()
		srvWG.Wait()
		return err
	}
	d.metrics.setHeartbeat(d.hb)
	if err := d.startSBD(); err != nil {
		if d.hb != nil {
			d.hb.Close()
		}
		srv.Close()
		srvWG.Wait()
		return err
	}
	d.drv.Start()
	d.drv.Publish()
	// reconcile on start-up: learn what runs before deciding anything
	for _, name := range d.serviceNames() {
		d.sdAwaitCheck(d.services[name])
		d.drv.CheckNow(name)
	}
	d.sdLaunched()
	tctx, tcancel := context.WithCancel(ctx)
	defer tcancel()
	go d.trimMemory(tctx)
	go d.sweepContainers(tctx)

	mode := d.loop(ctx)
	d.stopSBD(mode)
	d.stopGuardWorker()
	if mode == "shutdown" {
		d.guardDisarm()
	}

	d.log.Info("daemon stopping", zap.String("mode", mode))
	// the loop has ended: nothing changes the state any more
	// what is pending is written; the calls still waiting are told the
	// daemon stopped (an answer never promises more than is durable)
	d.flushState()
	d.persist.close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(shutCtx)
	cancel()
	srvWG.Wait()
	d.checks.close()
	d.acancel()
	d.workers.Wait()
	d.pool.close()
	d.svclogs.w.close() // the last lines of the actions reach their files
	if d.hb != nil {
		d.drv.Publish() // the last state (maintenance or shutting) reaches the peers
		if err := d.hb.Close(); err != nil {
			d.log.Warn("heartbeat close", zap.Error(err))
		}
	}
	d.pruneCgroups()
	os.Remove(d.p.Socket)
	os.Remove(d.p.PidFile())
	d.logEvent(node.DaemonStopped{Mode: mode})
	return nil
}

// tickPeriod is the shortest time between two ticks, and their period
// while a rule of the core's Tick reads the clock on every call (quorum,
// rejoin, a maintenance grace, edits in flight, failing state writes:
// node.Core.NextTick). Otherwise the loop sleeps until the next thing due:
// a periodic check, the safety-net pass, a sysinfo read.
const tickPeriod = driver.TickPeriod

// tickRideMin is the least time since the last tick for a tick to be
// taken with the heartbeat's round (inAck): the ticks then snap to the
// round's phase, at most one more tick per tickRideMin.
const tickRideMin = tickPeriod / 5

// sysinfoPeriod is the period of the load and memory reads
// (refreshSysinfo); a tick that comes up to sysinfoEarly before the read
// is due makes it, so that the read seldom wakes the loop by itself (the
// guard's renewals, every 2 s with the quorum off, and the ticks every
// tickPeriod with it on, fall in that window).
const (
	sysinfoPeriod = 10 * time.Second
	sysinfoEarly  = 2 * time.Second
)

// loop is the event loop. It returns the stop mode.
func (d *Daemon) loop(ctx context.Context) string {
	defer close(d.quit)
	var (
		// a kernel timer: as a runtime timer, each of the idle loop's
		// wake-ups woke the runtime's monitor twice more (clock.NewKernelTimer)
		timer    = clock.NewKernelTimer(d.clk, tickPeriod) // armed below
		armed    = false
		timerAt  time.Time
		lastTick = d.clk.Now()
	)
	defer timer.Close()
	var mode string
	for {
		// sleep until the next tick due: the core knows its wake-ups (an
		// input may bring them earlier: asked again after each one)
		if due := d.nextTick(lastTick); !armed || due.Before(timerAt) {
			timerAt, armed = due, true
			timer.Reset(due.Sub(d.clk.Now()))
		}
		// what woke the loop is handled after the guard's step: a daemon
		// resumed after a pause learns first whether its guard acted
		// (guard.go), before an input of the pause is taken
		var (
			f     func()
			hbEv  heartbeat.Event
			input int
		)
		const (
			inFunc = iota
			inHeartbeat
			inNotify
			inWake
			inTick
			inStop
			inAck
		)
		stopMode := ""
		select {
		case f = <-d.ev:
			input = inFunc
		case <-d.guardAcks():
			// a peer acknowledged a newer beat: the anchored lease is
			// looked at now, in step with the heartbeat's round
			d.gl.ackNew, input = true, inAck
		case ev, ok := <-d.hbEvents:
			if !ok {
				d.hbEvents = nil
				continue
			}
			hbEv, input = ev, inHeartbeat
		case <-d.sd.timer:
			input = inNotify
		case <-d.step:
			input = inWake
		case <-timer.C():
			input = inTick
		case m := <-d.stopReq:
			stopMode, input = m, inStop
		case <-ctx.Done():
			stopMode, input = "stop", inStop
		}
		d.guardStep()
		switch input {
		case inFunc:
			f()
		case inHeartbeat:
			d.onHeartbeat(hbEv)
		case inNotify:
			d.sdTick()
		case inWake:
			d.step = nil
			d.drv.Wake() // a pass below
		case inTick:
			armed = false
			lastTick = d.clk.Now()
			d.tick()
		case inAck:
			// the clock's tick (every tickPeriod with the quorum on)
			// rides the round too (a tick earlier than due is
			// harmless): the timer's next ticks fall a period and two
			// after the round, the second with the next round or a
			// few ms before it (then no tick here). Taken only once
			// half a period had passed, a tick that drifted earlier
			// than the round stayed on a phase of its own
			if now := d.clk.Now(); now.Sub(lastTick) >= tickRideMin && d.core.WatchesClock() {
				armed = false
				lastTick = now
				d.tick()
			}
		case inStop:
			if mode == "" {
				mode = stopMode
				d.beginStop(mode)
			}
		}
		// a durable change takes effect (decisions, peers) once on disk
		d.drv.Pass()
		if mode != "" && d.readyToExit(mode) {
			return mode
		}
	}
}

// beginStop announces the stop. "shutdown" also stops every local
// instance that runs (the node core's BeginStop).
func (d *Daemon) beginStop(mode string) {
	d.sdStopping(mode)
	if mode == "stop" {
		// before the node announces maintenance (guard.go)
		d.guardMaintenance()
	}
	d.drv.BeginStop(mode)
}

func (d *Daemon) readyToExit(mode string) bool {
	return !d.core.AnyBusy()
}

// post runs f on the loop. It returns false if the loop has ended.
func (d *Daemon) post(f func()) bool {
	select {
	case d.ev <- f:
		return true
	case <-d.quit:
		return false
	}
}

// call runs f on the loop and waits for its result.
func (d *Daemon) call(f func() (any, error)) (any, error) {
	type res struct {
		v   any
		err error
	}
	ch := make(chan res, 1)
	if !d.post(func() { v, err := f(); ch <- res{v, err} }) {
		return nil, errors.New("the daemon is stopping")
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-d.quit:
		return nil, errors.New("the daemon is stopping")
	}
}

// nextTick is when the loop ticks next: what the core and the sysinfo
// reads need, no sooner than tickPeriod after the last tick.
func (d *Daemon) nextTick(lastTick time.Time) time.Time {
	now := d.clk.Now()
	t := d.core.NextTick(now, tickPeriod)
	if d.ps.err != nil {
		t = now.Add(tickPeriod) // each tick retries the write
	}
	if s := d.sysinfoAt.Add(sysinfoPeriod); s.Before(t) {
		t = s
	}
	if g := d.guardDue(); !g.IsZero() && g.Before(t) {
		t = g
	}
	if min := lastTick.Add(tickPeriod); t.Before(min) {
		t = min
	}
	return t
}

func (d *Daemon) tick() {
	if d.clk.Now().Sub(d.sysinfoAt) >= sysinfoPeriod-sysinfoEarly {
		d.refreshSysinfo()
	}
	// the state written again while writes fail, the periodic checks,
	// rejoin, the peers' status that changes with time alone (a
	// maintenance grace that ends), the safety-net pass
	d.drv.Tick()
}

// refreshSysinfo reads load and memory (every sysinfoPeriod). Both are in
// the dataset every peer sees (placement, constraints), and each change
// is a delta that every peer merges: only a meaningful change marks the
// dataset changed (sysinfoChanged), so that an idle node sends no deltas.
func (d *Daemon) refreshSysinfo() {
	d.sysinfoAt = d.clk.Now()
	l, m := d.sysinfo.load15(), d.sysinfo.memAvailPct()
	if sysinfoChanged(d.load15, l, d.memPct, m) {
		d.load15, d.memPct = l, m
		d.changed()
	}
}

// sysinfoChanged reports whether the load and memory read (load, mem)
// differ enough from those published (pubLoad, pubMem) to publish them: the
// 15-minute load average by 0.1 and by a tenth of its value (0.1 up to a
// load of 1, 0.5 at 5, 5 at 50), the available memory by 2 points of
// percent.
func sysinfoChanged(pubLoad, load, pubMem, mem float64) bool {
	const eps = 1e-9 // 0.6-0.5 is 0.0999...
	return abs(load-pubLoad) >= max(0.1, pubLoad/10)-eps || abs(mem-pubMem) >= 2-eps
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// changed marks the local dataset as changed (heartbeats send a delta).
func (d *Daemon) changed() { d.drv.Changed() }

func (d *Daemon) emit(e api.Event) { d.bus.publish(d.stamp(e)) }

// stamp sets the time and node of an event that has none.
func (d *Daemon) stamp(e api.Event) api.Event {
	if e.Time.IsZero() {
		e.Time = d.clk.Now()
	}
	if e.Node == "" && d.node != nil {
		e.Node = d.node.Name
	}
	return e
}

func (d *Daemon) serviceNames() []string {
	names := make([]string, 0, len(d.services))
	for n := range d.services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RequestStop asks the loop to stop with mode "stop" or "shutdown".
func (d *Daemon) RequestStop(mode string) {
	select {
	case d.stopReq <- mode:
	default:
	}
}
