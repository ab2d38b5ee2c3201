package nodemgr

import (
	"context"
	"crypto/ecdh"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"haven/arbitrator"
	"haven/cli/cliutil"
	"haven/cli/render"
	"haven/config"
	"haven/config/tomlfile"
	"haven/internal/fsutil"
	"haven/internal/paths"
)

// arbitratorCommand is `nodemgr arbitrator`: Haven's one-vote arbitrator,
// for a third host that is no cluster member (docs/operations.md, "The
// 2-node case").
func arbitratorCommand() *cli.Command {
	return &cli.Command{Name: "arbitrator", Usage: "the one-vote arbitrator of 2-node clusters (a third host): run | start | stop | status | key",
		Subcommands: []*cli.Command{
			{Name: "key", Usage: "the arbitrator's key pair, whose public key the clusters' cluster.toml [arbitrator.NAME] key lists: generate | show",
				Subcommands: keySubcommands(arbitratorKeyPair,
					"make the arbitrator's key pair (etc/arbitrator.key, mode 0600; an existing key is never replaced) and print the key line of [arbitrator.NAME]",
					"print the key line of [arbitrator.NAME] (the arbitrator's public key) to paste into the cluster.toml of every member of the clusters it serves")},
			{Name: "run", Usage: "run the arbitrator in the foreground (R/etc/arbitrator.toml)", Action: arbitratorRun},
			{Name: "start", Usage: "start the arbitrator in the background; return once it listens", Action: arbitratorStart},
			{Name: "stop", Usage: "stop the arbitrator", Action: arbitratorStop},
			{Name: "status", Usage: "the clusters served, their nodes' last reports, which partition holds each vote and until when", Action: arbitratorStatus},
		}}
}

// arbitratorKeyPair is the arbitrator's key file, beside arbitrator.toml.
var arbitratorKeyPair = keyPair{kind: tomlfile.ArbitratorKeyKind,
	path: func(c *cli.Context) string { return cliutil.Paths(c).ArbitratorKey() },
	line: func(c *cli.Context, pub string) error {
		_, err := fmt.Fprintf(c.App.Writer, "key = %q\n", pub)
		return err
	}}

// loadArbitratorKey reads the arbitrator's private key: needed when a
// cluster lists node keys, read whenever the file exists.
func loadArbitratorKey(c *cli.Context, conf *config.ArbitratorConf) (*ecdh.PrivateKey, error) {
	path := arbitratorKeyPair.path(c)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if conf.HasNodeKeys() {
			return nil, &config.Error{File: path, Msg: "missing, and " + conf.File + " lists node keys: the arbitrator needs its own key pair (make it with nodemgr arbitrator key generate, and list its public key as key of [arbitrator.NAME] in the cluster.toml of the members)"}
		}
		return nil, nil
	}
	return arbitratorKeyPair.kind.Load(path)
}

// statusEvery is how often the running arbitrator writes its status file.
const statusEvery = time.Second

func arbitratorRun(c *cli.Context) error {
	p := cliutil.Paths(c)
	conf, err := tomlfile.LoadArbitratorConf(p.ArbitratorConf())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.Run, 0o700); err != nil {
		return err
	}
	// one arbitrator a root: the pid file is its lock
	lock, err := os.OpenFile(p.ArbitratorPid(), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return cliutil.Failed("an arbitrator already runs with this root (%s is locked)", p.ArbitratorPid())
	}
	lock.Truncate(0)
	fmt.Fprintf(lock, "%d\n", os.Getpid())
	defer os.Remove(p.ArbitratorPid())
	defer os.Remove(p.ArbitratorStatus())
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	log = log.Named("arbitrator")
	key, err := loadArbitratorKey(c, conf)
	if err != nil {
		return err
	}
	s, err := arbitrator.Listen(arbitrator.Config{Conf: conf, Log: log, Key: key})
	if err != nil {
		return cliutil.Failed("%v", err)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("arbitrator listening", zap.String("addr", s.Addr().String()), zap.Strings("clusters", conf.ClusterNames()),
		zap.Duration("lease", arbitrator.Lease), zap.Duration("no vote for", arbitrator.Lease))
	go writeStatus(ctx, s, p.ArbitratorStatus(), log)
	if conf.MetricsAddr != "" {
		srv, err := serveArbitratorMetrics(conf.MetricsAddr, s)
		if err != nil {
			return cliutil.Failed("metrics_addr %s: %v", conf.MetricsAddr, err)
		}
		defer srv.Close()
		log.Info("metrics served", zap.String("addr", conf.MetricsAddr))
	}
	err = s.Serve(ctx)
	log.Info("arbitrator stopped")
	return err
}

// serveArbitratorMetrics serves /metrics of the arbitrator's own registry
// on addr (plain HTTP, read-only; short timeouts so that idle connections
// do not hold it).
func serveArbitratorMetrics(addr string, s *arbitrator.Server) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Metrics())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 3 * time.Second, IdleTimeout: 15 * time.Second, WriteTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, nil
}

// writeStatus writes the arbitrator's status to path every statusEvery
// (0600: it names the clusters and their nodes) until ctx ends.
func writeStatus(ctx context.Context, s *arbitrator.Server, path string, log *zap.Logger) {
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		st := s.Status()
		st.Pid = os.Getpid()
		b, _ := json.MarshalIndent(st, "", "  ")
		if err := fsutil.WriteAtomic(path, append(b, '\n'), 0o600); err != nil {
			log.Warn("status file", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// arbitratorPid is the pid of the running arbitrator of p, 0 when none
// holds its lock.
func arbitratorPid(p paths.Paths) int {
	f, err := os.Open(p.ArbitratorPid())
	if err != nil {
		return 0
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return 0 // nobody holds it: a pid file left by a crash
	}
	b, _ := io.ReadAll(f)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func arbitratorStart(c *cli.Context) error {
	p := cliutil.Paths(c)
	if pid := arbitratorPid(p); pid != 0 {
		fmt.Fprintf(c.App.Writer, "arbitrator already running (pid %d)\n", pid)
		return nil
	}
	conf, err := tomlfile.LoadArbitratorConf(p.ArbitratorConf())
	if err != nil {
		return err // said here, with its file and key, rather than in a log
	}
	if _, err := loadArbitratorKey(c, conf); err != nil {
		return err
	}
	pid, err := spawn(c, "the arbitrator", []string{"arbitrator", "run"}, "arbitrator.out", 10*time.Second, func() (int, bool) {
		if _, err := os.Stat(p.ArbitratorStatus()); err != nil {
			return 0, false
		}
		return arbitratorPid(p), true
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "arbitrator started (pid %d)\n", pid)
	return nil
}

func arbitratorStop(c *cli.Context) error {
	p := cliutil.Paths(c)
	pid := arbitratorPid(p)
	if pid == 0 {
		fmt.Fprintln(c.App.Writer, "arbitrator not running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if arbitratorPid(p) == 0 {
			fmt.Fprintln(c.App.Writer, "arbitrator stopped")
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cliutil.Failed("the arbitrator (pid %d) is still running after 10s", pid)
}

func arbitratorStatus(c *cli.Context) error {
	p := cliutil.Paths(c)
	asJSON, err := cliutil.JSON(c)
	if err != nil {
		return err
	}
	pid := arbitratorPid(p)
	if pid == 0 {
		return cliutil.Failed("arbitrator not running (%s)", p.ArbitratorPid())
	}
	b, err := os.ReadFile(p.ArbitratorStatus())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return cliutil.Failed("arbitrator (pid %d) has written no status yet", pid)
		}
		return err
	}
	var st arbitrator.Status
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", p.ArbitratorStatus(), err)
	}
	if asJSON {
		return cliutil.PrintJSON(c.App.Writer, st)
	}
	fmt.Fprint(c.App.Writer, arbitratorText(st, time.Now()))
	return nil
}

// arbitratorText is the status for people: each cluster, the partition
// holding its vote and the leases running, each node's last report.
func arbitratorText(st arbitrator.Status, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "arbitrator  pid %d, listening on %s, started %s, lease %s\n", st.Pid, st.Listen, render.Age(st.Started, now), st.Lease)
	fmt.Fprintf(&b, "reports     %d (%d granted, %d refused), %d rejected", st.Counters.Reports, st.Counters.Grants, st.Counters.Refusals, st.Counters.Rejected)
	if st.Counters.NotOwnKey > 0 {
		fmt.Fprintf(&b, " (%d NOT SEALED WITH THEIR NODE'S KEY)", st.Counters.NotOwnKey)
	}
	b.WriteString("\n")
	for _, cs := range st.Clusters {
		winner := "none yet"
		if len(cs.Winner) > 0 {
			winner = strings.Join(cs.Winner, ",")
		}
		fmt.Fprintf(&b, "\ncluster %s: the vote is with %s\n", cs.Name, winner)
		for _, h := range cs.Holders {
			fmt.Fprintf(&b, " lease  %-12s until %s (%s left)\n", h.Node, h.Until.UTC().Format("15:04:05.0"), h.Until.Sub(now).Round(100*time.Millisecond))
		}
		for _, n := range cs.Nodes {
			g := "refused"
			if n.Granted {
				g = "granted"
			}
			sealed := "secret only"
			if n.NodeKey {
				sealed = "node key"
			}
			fmt.Fprintf(&b, " node   %-12s %s  hears %s  runs %d  last report %s (%s, %s)\n", n.Node, n.Addr, strings.Join(n.Partition, ","), n.Running, render.Age(n.LastReport, now), g, sealed)
		}
		if len(cs.Nodes) == 0 {
			b.WriteString(" (no report yet)\n")
		}
	}
	return b.String()
}
