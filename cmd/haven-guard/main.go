// Command haven-guard is the node guard (package guard): the daemon
// (nodemgr daemon) starts it when none answers on the root's guard socket,
// and it outlives the daemon to end the node's failover services when the
// daemon's lease runs out. A program of its own, built from package guard
// alone, so that locking all of it in memory costs a few megabytes:
//
//	haven-guard [--root DIR]
//
// --root (or $HAVEN_ROOT) is the node's root, as for nodemgr. It is not
// meant to be run by hand: `nodemgr guard status` asks the running guard.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"haven/guard"
	"haven/internal/paths"
	"haven/internal/version"
)

func main() {
	fl := flag.NewFlagSet(guard.ProgramName, flag.ContinueOnError)
	root := fl.String("root", "", "the node's root: every path below `DIR` (also $"+paths.EnvRoot+")")
	showVersion := fl.Bool("version", false, "print the version and exit")
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: %s [--root DIR]\n\nThe node guard, started by the daemon (nodemgr daemon); `nodemgr guard status` asks it.\n\n", guard.ProgramName)
		fl.PrintDefaults()
	}
	if err := fl.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q\n", guard.ProgramName, fl.Arg(0))
		fl.Usage()
		os.Exit(2)
	}
	if *showVersion {
		fmt.Printf("%s %s\n", guard.ProgramName, version.String())
		return
	}
	if err := guard.Process(context.Background(), paths.FromEnv(*root)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", guard.ProgramName, err)
		os.Exit(1)
	}
}
