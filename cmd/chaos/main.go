// Command chaos runs Haven's chaos suite: a cluster of real daemons in
// network namespaces, named fault tests picked at random with a seed, the
// audits after each (docs/chaos.md). It needs root.
//
//	chaos [-seed N] [-duration 10m] [-tests A,B] [-only A,B] [-report FILE] [-bin DIR] [-keep] [-stop-on-failure] [-quorum mixed|on|off] [-list]
//	chaos check-journal FILE    the never-twice checker over a journal
//	chaos bed [-nodes 3] [-quorum]  a cluster in network namespaces to try by hand, until Ctrl-C
//	chaos falsealarm [-duration 30m] [-timeout 1s]  nothing faulted on a busy host: counts false alarms (bench/falsealarm.sh)
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"haven/test/chaos"
)

func main() {
	args := os.Args[1:]
	// a round or a bed runs in a supervised child, so that nothing it
	// made outlives it (supervise.go); checking a journal makes nothing
	if (len(args) == 0 || args[0] != "check-journal") && !recordIfChild() {
		os.Exit(supervise(args))
	}
	os.Exit(run(args))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "check-journal" {
		return checkJournal(args[1:])
	}
	if len(args) > 0 && args[0] == "bed" {
		return bed(args[1:])
	}
	if len(args) > 0 && args[0] == "falsealarm" {
		return falseAlarm(args[1:])
	}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	seed := fs.Uint64("seed", 1, "seed of the test picks and of their choices")
	duration := fs.Duration("duration", 2*time.Minute, "start tests until then")
	tests := fs.String("tests", "", "replay this comma-separated sequence instead of picking at random")
	only := fs.String("only", "", "pick only among these comma-separated tests")
	report := fs.String("report", "chaos-report.md", "write the markdown report there (\"\" for none)")
	bin := fs.String("bin", "bin", "directory of nodemgr, haven-guard, svcmgr and svcmon (make build)")
	previous := fs.String("previous", "", "directory of the previous release's nodemgr, svcmgr and svcmon: the last node runs them (MixedVersions)")
	nodes := fs.Int("nodes", 3, "cluster size")
	keep := fs.Bool("keep", false, "keep the work directory (roots, logs, journal)")
	stopOnFailure := fs.Bool("stop-on-failure", false, "end the round at the first failed test (else go on while the cluster recovers)")
	list := fs.Bool("list", false, "list the tests and the pending ones, then exit")
	links := fs.Int("links", 1, "network links per node: 1, or 2 (a second bridge; LinkFail cuts one of them)")
	oneVote := fs.Bool("onevote", false, "the arbitrator is Haven's one-vote arbitrator (haven://) instead of a plain HTTP one (2-node clusters fail over without a fence)")
	ocfMode := fs.Bool("ocf", false, "the test services are OCF agents (the app behind ocf:chaos:app, with ocf:heartbeat:Dummy; needs resource-agents)")
	diskMode := fs.Bool("disk", false, "a disk-fence round: [hb.disk] fence = true on every node (a file of the work directory), quorum on, DiskFence drawn too (docs/chaos.md)")
	noFlex := fs.Bool("no-flex", false, "leave out the flex test service (flex1, flex_target = nodes - 1) that every round runs beside the failover ones")
	quorum := fs.String("quorum", chaos.QuorumMixed, "cluster.quorum of the round: mixed (changed between tests as they ask), on, or off (docs/chaos.md)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: chaos [flags] | chaos check-journal FILE | chaos bed [-nodes N] [-quorum]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "chaos: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *list {
		for _, t := range chaos.Tests {
			fmt.Printf("%-16s %s\n", t.Name, t.Doc)
		}
		for n, d := range chaos.KnownDefects {
			fmt.Printf("%-16s KNOWN DEFECT: %s\n", n, d)
		}
		for _, p := range chaos.Pending {
			fmt.Printf("%-16s PENDING: %s\n", p.Name, p.Waits)
		}
		return 0
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	for _, b := range []string{"nodemgr", "svcmgr", "svcmon"} {
		if _, err := os.Stat(filepath.Join(abs, b)); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: -bin %s: %v (run make build)\n", *bin, err)
			return 2
		}
	}
	prev := ""
	if *previous != "" {
		if prev, err = filepath.Abs(*previous); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 2
		}
		for _, b := range []string{"nodemgr", "svcmgr", "svcmon"} {
			if _, err := os.Stat(filepath.Join(prev, b)); err != nil {
				fmt.Fprintf(os.Stderr, "chaos: -previous %s: %v\n", *previous, err)
				return 2
			}
		}
	}
	cfg := chaos.Config{Bin: abs, Previous: prev, Nodes: *nodes, Seed: *seed, Duration: *duration, Tests: split(*tests), Only: split(*only), Keep: *keep, Out: os.Stdout, StopOnFailure: *stopOnFailure, Quorum: *quorum, OneVote: *oneVote, Links: *links, OCF: *ocfMode, Disk: *diskMode, NoFlex: *noFlex}
	cfg.Stop, cfg.Abort = interrupts()
	cfg.Aborted = func() { os.Exit(130) }
	rep, err := chaos.Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		var bad chaos.ConfigError
		if errors.Is(err, chaos.ErrNoNamespace) || errors.As(err, &bad) {
			return 2
		}
		return 1
	}
	if *report != "" {
		if err := rep.WriteMarkdown(*report); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		fmt.Printf("report written to %s\n", *report)
	}
	switch {
	case rep.Failed():
		return 1
	case rep.Interrupted:
		return 130
	}
	return 0
}

// interrupts turns signals into the round's stop and abort: a first
// SIGINT (Ctrl-C) ends the round after the test running, with its report;
// a second SIGINT, or a SIGTERM, removes the cluster at once (daemons,
// namespaces) and exits 130, so that nothing is left behind.
func interrupts() (stop, abort <-chan struct{}) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	st, ab := make(chan struct{}), make(chan struct{})
	go func() {
		if s := <-sig; s == syscall.SIGINT {
			fmt.Fprintln(os.Stderr, "chaos: interrupted: the round ends after the test running (interrupt again to stop at once)")
			close(st)
			<-sig
		}
		fmt.Fprintln(os.Stderr, "chaos: stopping at once: removing the cluster")
		close(ab)
	}()
	return st, ab
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// checkJournal prints every overlap of a journal (a flex service: every
// time above its flex_max); exit 1 when there is one.
func checkJournal(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: chaos check-journal FILE")
		return 2
	}
	ev, err := chaos.ReadJournal(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	// a round keeps its flex services' flex_max beside the journal
	lim, err := chaos.ReadLimits(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	ov := chaos.Excess(ev, lim)
	for _, o := range ov {
		fmt.Println(o)
	}
	fmt.Printf("%d events, %d overlaps\n", len(ev), len(ov))
	if len(ov) > 0 {
		return 1
	}
	return 0
}
