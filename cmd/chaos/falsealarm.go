package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"haven/test/chaos"
)

// falseAlarm runs the chaos suite's cluster at a heartbeat profile of its
// own (the fast failover one by default: docs/operations.md, "Fast
// failover") on a host kept busy, faults nothing, and counts the false
// alarms (chaos.FalseAlarm): bench/falsealarm.sh.
func falseAlarm(args []string) int {
	fs := flag.NewFlagSet("chaos falsealarm", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "directory of nodemgr, haven-guard, svcmgr and svcmon (make build)")
	nodes := fs.Int("nodes", 3, "cluster size")
	duration := fs.Duration("duration", 30*time.Minute, "how long to watch")
	timeout := fs.Duration("timeout", time.Second, "hb.timeout")
	interval := fs.Duration("interval", 0, "hb.interval (0: a third of hb.timeout)")
	ready := fs.Duration("ready", 16*time.Second, "node.ready_period")
	fastAck := fs.Bool("fastack", true, "node.ready_fast_ack")
	cpu := fs.Int("cpu-hogs", 2*runtime.NumCPU(), "CPU hogs (shell loops that never sleep): 2 a processor make a load of 2 a processor by themselves")
	io := fs.Bool("io-hog", true, "an I/O hog (64 MiB files written and flushed, over and over)")
	keep := fs.Bool("keep", false, "keep the work directory (roots, logs, journal)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: chaos falsealarm [flags]: the cluster at a heartbeat profile on a busy host, nothing faulted; counts every peer declared down, service moved or run twice (root)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *interval == 0 {
		*interval = *timeout / 3
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos falsealarm:", err)
		return 2
	}
	if why := chaos.NetnsUnavailable(); why != "" {
		fmt.Fprintln(os.Stderr, "chaos falsealarm:", why)
		return 2
	}
	hb := &chaos.HBProfile{Timeout: *timeout, Interval: *interval, Ready: *ready, FastAck: *fastAck}
	c, err := chaos.NewCluster(chaos.Config{Bin: abs, Nodes: *nodes, Services: *nodes, Quorum: chaos.QuorumOff, HB: hb, Keep: *keep})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos falsealarm:", err)
		if errors.Is(err, chaos.ErrNoNamespace) {
			return 2
		}
		return 1
	}
	defer c.CloseKeep(*keep)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "chaos falsealarm: interrupted: removing the cluster")
		c.CloseKeep(*keep)
		os.Exit(130)
	}()
	fmt.Printf("falsealarm: %d nodes, hb.timeout %s, hb.interval %s, ready_period %s, ready_fast_ack %v, quorum off; %d services (a failover one per node, a flex one); load %s\n",
		*nodes, *timeout, *interval, *ready, *fastAck, *nodes, loadNow())
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos falsealarm:", err)
		return 1
	}
	res, err := chaos.FalseAlarm(c, chaos.FalseAlarmConfig{Duration: *duration, CPUHogs: *cpu, IOHog: *io, Out: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos falsealarm:", err)
		return 1
	}
	res.Report(os.Stdout)
	if *keep {
		fmt.Println("work directory kept:", c.Work)
	}
	if res.False() > 0 {
		return 1
	}
	return 0
}

func loadNow() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return string(b[:len(b)-1])
}
