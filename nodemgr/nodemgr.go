package nodemgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"haven/api"
	"haven/cli/cliutil"
	"haven/cli/render"
	"haven/cli/web"
	"haven/cli/whatif"
	"haven/daemon"
	"haven/internal/fsutil"
	"haven/internal/paths"
	"haven/internal/termtext"
	"haven/internal/version"
	"haven/nodemgr/earlyhup"
	"haven/sim"
)

// EnvCompat overrides the compat version of the daemon (docs/contract.md section 7).
const EnvCompat = "HAVEN_COMPAT"

// EnvFormat overrides the newest format version the daemon reads
// (node/upgrade), to rehearse an upgrade across versions.
const EnvFormat = "HAVEN_FORMAT"

// EnvWatchdogFile, when 1, makes the daemon accept a regular file as
// node.watchdog_device: it records the pets and resets nothing (tests, on
// hosts without a watchdog driver).
const EnvWatchdogFile = "HAVEN_WATCHDOG_FILE"

// App returns the nodemgr command.
func App() *cli.App {
	flags := cliutil.GlobalFlags()
	stopFlags := func() []cli.Flag {
		return []cli.Flag{&cli.DurationFlag{Name: "time", Value: 5 * time.Minute, Usage: "how long to wait for the daemon to exit"}}
	}
	return &cli.App{
		// --version prints the release, commit, Go and compat versions; the
		// shell completions call the tool with --generate-bash-completion
		Version:              version.String(),
		EnableBashCompletion: true,
		BashComplete:         cliutil.CompleteCommands,

		Name:  "nodemgr",
		Usage: "manage the Haven daemon and this node",
		Flags: flags,
		Commands: []*cli.Command{
			{Name: "daemon", Usage: "run | start | stop | shutdown | restart | status", Subcommands: []*cli.Command{
				{Name: "run", Usage: "run the daemon in the foreground (SIGHUP reopens node.log)", Description: newClusterHelp, Action: run,
					Flags: append(daemonFlags(), &cli.BoolFlag{Name: "log-stderr", Value: true, Usage: "also write the log to stderr (default: on; --log-stderr=false: only to node.log, or the journal under systemd)"})},
				{Name: "start", Usage: "start the daemon in the background; return once its API answers", Flags: daemonFlags(), Description: newClusterHelp, Action: start},
				{Name: "stop", Usage: "clean stop: announce maintenance, leave services running", Flags: stopFlags(), Action: func(c *cli.Context) error { return stop(c, "stop") }},
				{Name: "shutdown", Usage: "stop every local service instance, announce shutting, then stop", Flags: stopFlags(), Action: func(c *cli.Context) error { return stop(c, "shutdown") }},
				{Name: "restart", Usage: "clean stop (maintenance: services keep running), then start; under systemd use systemctl restart haven",
					Flags: append(stopFlags(), daemonFlags()...), Description: newClusterHelp, Action: restart},
				{Name: "status", Usage: "is the daemon running, with its pid, uptime and peers", Action: status},
			}},
			arbitratorCommand(),
			guardCommand(),
			keyCommand(),
			{Name: "freeze", Usage: "freeze this node: no orchestration starts anything on it", Action: func(c *cli.Context) error { return nodeAction(c, "freeze") }},
			{Name: "thaw", Usage: "thaw this node", Action: func(c *cli.Context) error { return nodeAction(c, "thaw") }},
			{Name: "drain", Usage: "freeze this node, then stop its service instances (--dry-run: print what the simulation of the live cluster says would happen)",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "dry-run", Usage: "do nothing: simulate the drain (svcmgr simulate --drain NODE)"}},
				Action: func(c *cli.Context) error {
					if c.Bool("dry-run") {
						return whatif.RunWith(c, func(s *sim.Snapshot) []sim.WhatIfEvent {
							return []sim.WhatIfEvent{{Verb: "drain", Arg: s.Local}}
						}, 60*time.Second)
					}
					return nodeAction(c, "drain")
				}},
			{Name: "events", Usage: "stream the daemon's events (--format json: one JSON object a line)", Action: events},
			{Name: "print", Usage: "print status", Subcommands: []*cli.Command{
				{Name: "status", Usage: "this node's view: monitor state, peers, heartbeat figures", Action: status},
			}},
		},
	}
}

// newClusterHelp is the description of daemon run and start.
const newClusterHelp = `A node that has run as a member of a cluster of several nodes remembers
that cluster (its name and a fingerprint of its secret, in var/state.json).
The daemon refuses to start (exit 2) when cluster.toml is then missing, names
another cluster, holds another secret or lists no other member: the node
would otherwise form a second cluster and run the services a second time.
--new-cluster accepts the change and records the new cluster (logged at WARN):
use it to move a node to another cluster, to rotate the secret, or to make
it a single node again.

The daemon also refuses to start (exit 2) when var/state.json is missing
while service configs exist in etc/services, or is a symbolic link to
nothing (the disk of var/ not mounted?): an empty state would forget the
frozen flags, targets, config versions and cluster identity of the node.
It refuses a state file without envelope and checksum (an older format) too.
--new-state starts with a new, empty state in the first two cases and
accepts the file in the third (logged at WARN); a brand-new node (no state,
no service config) needs no flag.`

func daemonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "new-cluster", Usage: "accept a cluster.toml that names another cluster (or none, or another secret) than the one this node was a member of"},
		&cli.BoolFlag{Name: "new-state", Usage: "start with a new, empty state when var/state.json is missing while service configs exist, or is a symbolic link to nothing; accept a state file without checksum (older format)"},
	}
}

func compat() (int, error) { return envInt(EnvCompat) }

// envInt reads a positive integer from the environment (0 when unset).
func envInt(name string) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, cliutil.Usage("%s=%q: want a positive integer", name, v)
	}
	return n, nil
}

func run(c *cli.Context) error {
	cv, err := compat()
	if err != nil {
		return err
	}
	fv, err := envInt(EnvFormat)
	if err != nil {
		return err
	}
	if err := startPprof(); err != nil {
		return cliutil.Usage("%v", err)
	}
	// SIGHUP (logrotate's postrotate) reopens node.log; caught from the
	// start (package earlyhup, before the flags are parsed): its default
	// action would end the daemon
	hup := earlyhup.C
	if hup == nil { // run through App() by a test
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
	}
	defer signal.Stop(hup)
	d, err := daemon.New(daemon.Options{Paths: cliutil.Paths(c), Compat: cv, Format: fv, WatchdogFile: os.Getenv(EnvWatchdogFile) == "1", Stderr: c.Bool("log-stderr"), CrashOutput: true, NewCluster: c.Bool("new-cluster"), NewState: c.Bool("new-state"),
		WebView: webView})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-hup:
				d.ReopenLogs()
			case <-done:
				return
			}
		}
	}()
	return d.Run(c.Context)
}

// maxDaemonOut is the size above which `daemon start` moves daemon.out to
// daemon.out.1 (one old copy kept) instead of appending to it.
const maxDaemonOut = 1 << 20

// openDaemonOut opens R/log/daemon.out for appending: it keeps what an
// earlier daemon printed before it died (the node log has its panic too).
func openDaemonOut(path string) (*os.File, error) {
	if st, err := os.Stat(path); err == nil && st.Size() > maxDaemonOut {
		if err := os.Rename(path, path+".1"); err != nil {
			return nil, err
		}
	}
	return fsutil.OpenAppendBeneath(filepath.Dir(path), filepath.Base(path))
}

func start(c *cli.Context) error {
	p := cliutil.Paths(c)
	cl := api.NewClient(p.Socket)
	if ds, err := cl.DaemonStatus(c.Context); err == nil {
		fmt.Fprintf(c.App.Writer, "daemon already running (pid %d)\n", ds.Pid)
		return nil
	}
	if _, err := compat(); err != nil {
		return err
	}
	// the log goes to node.log only; daemon.out gets what the daemon
	// prints outside of it (a refused config, a crash)
	args := []string{"daemon", "run", "--log-stderr=false"}
	if c.Bool("new-cluster") {
		args = append(args, "--new-cluster")
	}
	if c.Bool("new-state") {
		args = append(args, "--new-state")
	}
	pid, err := spawn(c, "the daemon", args, "daemon.out", 15*time.Second, func() (int, bool) {
		ds, err := cl.DaemonStatus(c.Context)
		if err != nil {
			return 0, false
		}
		return ds.Pid, true
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "daemon started (pid %d)\n", pid)
	return nil
}

// spawn starts this binary (what, for the messages) with args (after --root, when set) in the
// background, in a session of its own, its output appended to the file
// out of the log directory, and waits until ready says it is up (its pid)
// or it exits (its last line and its exit status: 2 for a bad config).
func spawn(c *cli.Context, what string, args []string, out string, within time.Duration, ready func() (int, bool)) (int, error) {
	p := cliutil.Paths(c)
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(p.Log, 0o700); err != nil {
		return 0, err
	}
	outPath := filepath.Join(p.Log, out)
	f, err := openDaemonOut(outPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if c.IsSet("root") {
		args = append([]string{"--root", c.String("root")}, args...)
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// it starts with SIGHUP ignored (an ignored signal stays ignored
	// across exec): one sent before its handler is installed (package
	// earlyhup, a few ms after the exec) cannot end it
	signal.Ignore(syscall.SIGHUP)
	err = cmd.Start()
	signal.Reset(syscall.SIGHUP)
	if err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return 0, daemonExit(err, outPath)
		case <-time.After(50 * time.Millisecond):
		}
		if pid, ok := ready(); ok {
			return pid, nil
		}
	}
	return 0, cliutil.Failed("%s did not come up within %s (see %s)", what, within, outPath)
}

// daemonExit explains an early exit of the background daemon with the
// last line it printed, and keeps its exit status (2 for bad config).
func daemonExit(err error, outPath string) error {
	b, _ := os.ReadFile(outPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	code := 1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	if code != cliutil.ExitUsage {
		code = cliutil.ExitFailed
	}
	return &cliutil.Error{Status: code, Err: fmt.Errorf("the daemon exited: %s", strings.TrimPrefix(last, "nodemgr: "))}
}

func stop(c *cli.Context, mode string) error {
	cl := cliutil.Client(c)
	ds, err := cl.DaemonStatus(c.Context)
	if err != nil {
		if errors.Is(err, api.ErrNoDaemon) {
			fmt.Fprintln(c.App.Writer, "daemon not running")
			return nil
		}
		return err
	}
	if err := cl.Stop(c.Context, mode); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("time"))
	defer cancel()
	p := cliutil.Paths(c)
	for {
		if daemonGone(p, ds.Pid) {
			fmt.Fprintf(c.App.Writer, "daemon stopped (%s)\n", mode)
			return nil
		}
		select {
		case <-ctx.Done():
			return cliutil.Failed("the daemon (pid %d) is still running after %s", ds.Pid, c.Duration("time"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// restart is stop (maintenance: the services keep running, the peers
// wait) then start: the daemon comes back within the maintenance grace
// period and adopts its services.
func restart(c *cli.Context) error {
	if err := stop(c, "stop"); err != nil {
		return err
	}
	return start(c)
}

// daemonGone reports whether the daemon of pid has let go of the root. It
// looks at what the daemon releases when it ends, not at the pid: a daemon
// that has exited but that its parent has not reaped yet (a zombie) still
// answers kill(pid, 0), while the kernel has already dropped its flock on
// R/run/daemon.lock. A pid file naming another pid means a new daemon
// owns the root: the one we stopped is gone.
func daemonGone(p paths.Paths, pid int) bool {
	if b, err := os.ReadFile(p.PidFile()); err == nil {
		if other, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && other != pid {
			return true
		}
	}
	f, err := os.Open(p.Lock())
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	// a shared lock, held for an instant: it only succeeds once nobody
	// holds the daemon's exclusive lock
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

func status(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	ds, err := cliutil.Client(c).DaemonStatus(c.Context)
	if err != nil {
		return err
	}
	if asJSON {
		return cliutil.PrintJSON(c.App.Writer, ds)
	}
	fmt.Fprint(c.App.Writer, render.NodeStatus(ds, time.Now()))
	return nil
}

func nodeAction(c *cli.Context, action string) error {
	if err := cliutil.Client(c).NodeAction(c.Context, action); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "node: %s done\n", action)
	return nil
}

func events(c *cli.Context) error {
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	return cliutil.Client(c).Stream(c.Context, api.PathEvents, nil, func(line []byte) error {
		if asJSON {
			_, err := fmt.Fprintf(c.App.Writer, "%s\n", line)
			return err
		}
		var e api.Event
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		who := e.Node
		if e.Service != "" {
			who += " " + e.Service
		}
		if e.RID != "" {
			who += " " + e.RID
		}
		// peers' text: control characters made visible
		_, err := fmt.Fprintf(c.App.Writer, "%s %-16s %s: %s\n", e.Time.Format("15:04:05.000"), termtext.Clean(e.Kind), termtext.Clean(who), termtext.Clean(e.Message))
		return err
	})
}

// webView builds the web view of node.web_addr for the daemon (cli/web).
func webView(o daemon.WebOptions) daemon.WebView {
	return web.New(web.Options{Source: o.Source, Token: o.Token, TLS: o.TLS, Log: o.Log, MaxStreams: o.MaxStreams})
}
