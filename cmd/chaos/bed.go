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

	"haven/test/chaos"
	"haven/test/testbed"
)

// bed builds the chaos suite's cluster (network namespaces, a bridge, the
// daemons, two failover services and a flex one, or an example's services,
// an arbitrator) and leaves it running for
// a person to try faults by hand, until Ctrl-C: then it removes it all.
func bed(args []string) int {
	fs := flag.NewFlagSet("chaos bed", flag.ContinueOnError)
	bin := fs.String("bin", "bin", "directory of nodemgr, haven-guard, svcmgr and svcmon (make build)")
	nodes := fs.Int("nodes", 3, "cluster size")
	quorum := fs.Bool("quorum", false, "cluster.quorum = true (the arbitrator counts one vote)")
	example := fs.String("example", "", "also create the services of an example ("+strings.Join(chaos.ExampleNames(), ", ")+"; docs/operations.md)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: chaos bed [-bin DIR] [-nodes N] [-quorum] [-example NAME]: a cluster in network namespaces to try by hand (root), removed at Ctrl-C")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if _, ok := chaos.Examples[*example]; *example != "" && !ok {
		fmt.Fprintf(os.Stderr, "chaos bed: unknown example %q (known: %s)\n", *example, strings.Join(chaos.ExampleNames(), ", "))
		return 2
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos bed:", err)
		return 2
	}
	if why := chaos.NetnsUnavailable(); why != "" {
		fmt.Fprintln(os.Stderr, "chaos bed:", why)
		return 2
	}
	mode := chaos.QuorumOff
	if *quorum {
		mode = chaos.QuorumOn
	}
	cfg := chaos.Config{Bin: abs, Nodes: *nodes, Services: 2, Quorum: mode}
	if *example != "" {
		// the example's services alone
		cfg.Services, cfg.NoFlex = 0, true
		if chaos.ExampleNeedsPodman(*example) {
			if why := testbed.PodmanUnavailable(); why != "" {
				fmt.Fprintf(os.Stderr, "chaos bed: example %s runs containers: %s\n", *example, why)
				return 2
			}
			cfg.Podman = true
		}
	}
	c, err := chaos.NewCluster(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos bed:", err)
		if errors.Is(err, chaos.ErrNoNamespace) {
			return 2
		}
		return 1
	}
	defer c.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos bed:", err)
		return 1
	}
	if *example != "" {
		files, err := c.CreateExample(*example)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos bed:", err)
			return 1
		}
		fmt.Printf("Example %q: %s\n", *example, strings.Join(files, " "))
	}
	fmt.Print(c.Guide())
	<-sig
	fmt.Println("\nremoving the cluster: daemons, services, namespaces")
	return 0
}
